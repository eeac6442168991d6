"""The IPython shell a notebook's cells run in (its display hook, display publisher and tracebacks fill the cell's
`Outputs`), and one cell run like a kernel runs it, with stdout and stderr captured and a time limit."""

from __future__ import annotations

import ast
import signal
import sys
import warnings
from typing import Any

from .outputs import Outputs, _Stream


class CellTimeout(Exception):
    """The cell ran past the per-cell time limit."""


def make_shell(outputs: Outputs) -> Any:
    """An IPython InteractiveShell whose display hook, display publisher and tracebacks fill `outputs`."""
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    class CellDisplayHook(DisplayHook):
        def write_output_prompt(self) -> None:
            pass

        def write_format_data(self, format_dict: dict, md_dict: dict | None = None) -> None:
            outputs.rich("execute_result", dict(format_dict), dict(md_dict or {}), self.prompt_count)

        def finish_displayhook(self) -> None:
            pass

    class Publisher(DisplayPublisher):
        def publish(self, data: dict, metadata: dict | None = None, *args: Any, **kwargs: Any) -> None:
            outputs.rich("display_data", dict(data), dict(metadata or {}))

        def clear_output(self, wait: bool = False) -> None:
            outputs.clear()

    class Shell(InteractiveShell):
        def _showtraceback(self, etype: type, evalue: BaseException, stb: list[str]) -> None:
            outputs.error(etype.__name__, _safe_str(evalue), list(stb))

        def transform_cell(self, raw_cell: str) -> str:
            return plain_python(raw_cell, self.input_transformers_post) or super().transform_cell(raw_cell)

        def should_run_async(self, raw_cell: str, *, transformed_cell: str | None = None,
                             preprocessing_exc_tuple: Any = None) -> bool:
            # IPython compiles every cell once more to learn whether it awaits at top level; only a cell that
            # holds one of the two keywords can (a coroutine's code needs them)
            if transformed_cell is not None and "await" not in transformed_cell and "async" not in transformed_cell:
                return False
            return super().should_run_async(raw_cell, transformed_cell=transformed_cell,
                                            preprocessing_exc_tuple=preprocessing_exc_tuple)

    config = Config()
    config.HistoryManager.enabled = False
    # Figures are shown by their text (`<Figure size ... with 1 Axes>`), never drawn: no grade depends on a picture,
    # and rendering a PNG took more time than anything else in a plotting cell (~0.2 s a figure).
    config.InlineBackend.figure_formats = set()
    shell = Shell.instance(config=config, displayhook_class=CellDisplayHook, display_pub_class=Publisher, colors="NoColor")
    # Python's plain traceback (file, line, code): the default "Context" mode took 15-30 ms per error, and a blank
    # notebook raises in every exercise cell.
    shell.InteractiveTB.set_mode("Plain")
    try:
        raise NotImplementedError
    except NotImplementedError:  # the first traceback loads the formatter's modules: once here, not in every cell
        shell.InteractiveTB.structured_traceback(*sys.exc_info())
    warm_shell(shell)
    return shell


# What IPython builds on a shell's first cell, trait defaults made on first use: built once where the shell is made
# (the fork server), each notebook's first cell finds them there instead of building them again
FIRST_USE = ("logger", "ast_node_interactivity", "ast_transformers", "input_transformers_post",
             "input_transformer_manager")
FIRST_USE_HISTORY = ("input_hist_raw", "input_hist_parsed", "output_hist_reprs", "db_input_cache", "db_output_cache")


def warm_shell(shell: Any) -> None:
    """Build the parts of `shell` that its first cell would (its logger, transformers, history lists, display
    formatters) and import `bdb` (run_code imports it at every cell): once, not in every worker's first cell."""
    import bdb  # noqa: F401

    for name in FIRST_USE:
        getattr(shell, name, None)
    for name in FIRST_USE_HISTORY:
        getattr(shell.history_manager, name, None)
    shell.display_formatter.format(0)  # makes the formatters it has not used yet


def plain_python(cell: str, post_transformers: list[Any]) -> str | None:
    """The cell as IPython's transform_cell would return it, when that is the cell itself; else None.

    IPython's line and token transformers (magics, `!`, `?`, prompts) re-tokenize every cell: ~6 ms for a 100-line
    class, most of a given cell's time while grading. A cell of several lines that already parses as Python holds
    none of that syntax (each is a syntax error), so they would leave it as it is (they only end it with a newline).
    One line cells are left to IPython: its automagic and autocall turn a plain name (`pwd`) into a command.
    """
    if post_transformers or "\n" not in cell.rstrip("\n") or not cell.strip() or cell[:1].isspace():
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # compiling the cell warns once, as before
            ast.parse(cell)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return cell if cell.endswith("\n") else cell + "\n"


def warm_figures() -> None:
    """Make and drop one pyplot figure, as a plotting cell would: pyplot loads the inline backend (which hooks into
    the shell) and fills its font and layout caches here, once, not in each worker's first plot (~0.05 s each)."""
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(5, 3))
    ax = fig.gca()
    ax.plot([0.0, 1.0], [0.0, 1.0], "--", label="warm")
    ax.legend(fontsize=8)
    ax.set_title("warm")
    plt.close(fig)


def _safe_str(obj: object) -> str:
    try:
        return str(obj)
    except Exception:
        return f"<{type(obj).__name__}>"


def _on_alarm(signum: int, frame: Any) -> None:
    raise CellTimeout("the cell did not finish within the time limit (an infinite loop?)")


def run_cell(shell: Any, outputs: Outputs, source: str, timeout: float) -> None:
    """Execute one cell like a kernel would, with stdout/stderr captured and a time limit."""
    old_out, old_err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Stream(outputs, "stdout"), _Stream(outputs, "stderr")
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(timeout, 0.01))
    try:
        shell.run_cell(source, store_history=True)
    except BaseException as exc:
        outputs.error(type(exc).__name__, _safe_str(exc), [f"{type(exc).__name__}: {_safe_str(exc)}"])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        sys.stdout, sys.stderr = old_out, old_err
