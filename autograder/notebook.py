"""`check(...)`: what a notebook's check cells call, showing ✓ or a diagnosis.

In a learner's own kernel a failing check shows its diagnosis and returns, so "Run All" goes on to the summary;
under nbgrader (`NBGRADER_EXECUTION` set: Validate and autograde) and outside Jupyter it raises `CheckFailed`, so
the grade cell scores 0. Importing this module in a learner's kernel also makes a cell that reaches an unfinished
exercise (`raise NotImplementedError()`), or that an exercise's code stops with an error, say so in one line instead of
stopping "Run All" with a traceback.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import sys
import textwrap
import traceback
from collections.abc import Mapping, MutableMapping
from html import escape
from pathlib import Path
from typing import Any

from . import checks
from .aids.env import grading, in_kernel
from .checks import NOT_IMPLEMENTED, CheckResult, run_checks
from .checks.messages import LEVELS, METHOD_OF, SAME_CULPRIT, hint_level
from .report import FAIL, PASS, diagnosis, result_lines
from .settings import Hints, Limits, load_config


class CheckFailed(AssertionError):
    """Some check failed; its message is the one-line diagnosis of each failed check (nbgrader's Validate shows it)."""

    def __init__(self, results: list[CheckResult]) -> None:
        self.results = results
        super().__init__("; ".join(one_line(r) for r in results if not r.passed))

    def _render_traceback_(self) -> list[str]:
        # IPython calls this instead of formatting a traceback; nbgrader's Validate dialog shows these lines.
        failed = [r for r in self.results if not r.passed]
        return [f"CheckFailed: {len(failed)} of {len(self.results)} checks failed",
                *(line for r in failed for line in validate_lines(f"{FAIL} {one_line(r)}"))]


def learners_kernel() -> bool:
    """A learner's own Jupyter kernel: checks inform and never stop "Run All"."""
    return in_kernel() and not grading()


def check(*names: str, hidden: bool = False, ns: Mapping[str, Any] | None = None) -> None:
    """Run the named catalog checks on the caller's definitions and show ✓ or the diagnosis of each.

    A failure raises CheckFailed, except in a learner's own kernel, where it is shown and Run All goes on.
    """
    if ns is None:
        ns = sys._getframe(1).f_globals
    with hint_level(hint_level_here()):
        results = run_checks([checks.get(n) for n in names], ns, hidden=hidden)
    if not hidden:
        record(ns, results)
    shown = shown_in(ns)
    results = [shown.note(r) for r in results]
    show(verdict_text(results, hidden), verdict_html(results, hidden))
    if not all(r.passed for r in results) and not learners_kernel():
        raise CheckFailed(results)


# ---------------------------------------------------------------- hint levels in a kernel

CONFIG_FILE = "nbgrader_config.py"
_CACHE: dict[tuple[str, int, int], str | None] = {}  # (file, mtime, size) -> the level it sets (None: it sets none)


def hint_level_here() -> str:
    """The hint level (settings.Hints.level) for checks run in this kernel.

    In a learner's own kernel, the notebook's metadata {"autograder": {"hints": ...}} where the kernel can find its
    notebook (Jupyter Server tells it the path); otherwise, and always in graded runs (Validate, autograde: the
    submission's metadata is the learner's to change), the course's config ($AUTOGRADER_CONFIG, else the
    nbgrader_config.py of this folder or one above it, else of Jupyter's config folders, as nbgrader looks); else
    the default, which never writes the solution.
    """
    if not grading():
        level = _cached(_session_notebook(), _notebook_level)
        if level:
            return level
    for path in _config_files():
        level = _cached(path, _config_level)
        if level:
            return level
    return str(Hints.level.default_value)


def _cached(path: Path | None, read: Any) -> str | None:
    """`read(path)`, remembered until the file changes; None for no file or an unreadable one."""
    try:
        st = path.stat() if path else None
    except OSError:
        return None
    if st is None:
        return None
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _CACHE:
        try:
            _CACHE[key] = read(path, st.st_size)
        except Exception:  # a broken file sets nothing: the checks must still answer
            _CACHE[key] = None
    return _CACHE[key]


def _session_notebook() -> Path | None:
    """The notebook this kernel runs, as Jupyter Server names it (JPY_SESSION_NAME: relative to its root, and the
    kernel runs in the notebook's folder), or None."""
    name = os.environ.get("JPY_SESSION_NAME")
    if not name or not name.endswith(".ipynb"):
        return None
    for path in (Path(name), Path.cwd() / Path(name).name):
        if path.is_file():
            return path
    return None


def _notebook_level(path: Path, size: int) -> str | None:
    """The level a notebook's metadata sets, read no further than Limits.notebook_mb."""
    if size > Limits().notebook_mb * 2**20:
        return None
    meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
    level = meta.get("autograder", {}).get("hints") if isinstance(meta.get("autograder"), dict) else None
    return level if level in LEVELS else None


def _config_files() -> list[Path]:
    """Where the course config may be, first found first."""
    named = os.environ.get("AUTOGRADER_CONFIG")
    if named:
        return [Path(named)]
    here = Path.cwd()
    paths = [d / CONFIG_FILE for d in (here, *here.parents[:3])]
    try:
        from jupyter_core.paths import jupyter_config_path

        paths += [Path(d) / CONFIG_FILE for d in jupyter_config_path()]
    except ImportError:  # pragma: no cover - JupyterLite has no jupyter_core
        pass
    return paths


def _config_level(path: Path, size: int) -> str | None:
    """The level a course config sets (Hints.level), None when it sets none."""
    config = load_config(path)
    return config.Hints.level if "Hints" in config and "level" in config.Hints else None


# Where a namespace keeps what each check gave when its check cell last ran (the summary reads it).
RECORD = "__autograder_checked__"


def record(ns: Mapping[str, Any], results: list[CheckResult]) -> None:
    """Remember, in the namespace, whether each check passed where its check cell stands (the summary reads it).

    nbgrader runs a notebook top to bottom and scores each grade cell there, so what a check gave at its own
    position, not what it gives at the end, is what nbgrader will score.
    """
    if not isinstance(ns, MutableMapping):
        return
    book = ns.get(RECORD)
    if not isinstance(book, dict):
        book = ns[RECORD] = {}
    book.update((r.name, r.passed) for r in results)


def recorded(ns: Mapping[str, Any]) -> dict[str, bool]:
    """{check name: passed} for every check whose check cell ran in this namespace (its latest run)."""
    book = ns.get(RECORD)
    return {k: v for k, v in book.items() if isinstance(k, str) and isinstance(v, bool)} if isinstance(book, dict) else {}


def show(text: str, html: str) -> None:
    """Display HTML with the text as its plain-text fallback in IPython; print the text anywhere else."""
    if "IPython" in sys.modules:
        from IPython import get_ipython
        from IPython.display import display

        if get_ipython() is not None:
            display({"text/plain": text, "text/html": html}, raw=True)
            return
    print(text)


# nbgrader's `validate` prints each line of an error indented by Validator.indent (4 spaces) and cuts it at
# Validator.width - 3 (87) characters, adding "...": lines of at most 83 characters are shown whole.
VALIDATE_COLUMNS = 83


def one_line(result: CheckResult) -> str:
    """The check's name, then the method and the misconception's sentence, then the numbers that showed it.

    Without a sentence: the name and the diagnosis's lead.
    """
    d = diagnosis(result)
    if not d.sentence:
        return f"{result.name}: {d.lead}"
    seen = f". Seen: {' '.join(d.evidence)}" if d.evidence else ""
    return f"{result.name}: {d.lead.rstrip('.')}{seen}"


class Shown:
    """The diagnoses shown in full so far in one notebook: a later failure with the same cause says so in a line.

    A cause is the method a failure is pinned on and its misconception; the check that showed it in full shows it
    in full again when it runs again, and forgets it once it passes.
    """

    def __init__(self, first: dict[str, str] | None = None) -> None:
        self.first = first if first is not None else {}  # cause -> the check that showed it in full

    @staticmethod
    def cause(result: CheckResult) -> str | None:
        """The key of a failure's cause, or None when it has no method of its own to share."""
        if result.passed or result.status == NOT_IMPLEMENTED or not result.misconception:
            return None
        method = result.culprit or (result.targets[0] if len(result.targets) == 1 else "")
        method = method or METHOD_OF.get(result.misconception.split(".")[0], "")
        if not method or method == METHOD_OF["common"]:
            return None
        return f"{method}|{result.misconception}"

    def note(self, result: CheckResult) -> CheckResult:
        """The result as this notebook shows it: in full the first time its cause appears, else in one line."""
        if result.passed:
            for key in [k for k, name in self.first.items() if name == result.name]:
                del self.first[key]
            return result
        key = self.cause(result)
        if key is None or diagnosis(result).same_cause:
            return result
        if self.first.setdefault(key, result.name) == result.name:
            return result
        method = key.split("|")[0]
        return dataclasses.replace(result, message=SAME_CULPRIT.format(method=method), repro="")


# Where a notebook's kernel keeps which diagnoses it has shown in full (see Shown).
SHOWN = "__autograder_shown__"


def shown_in(ns: Mapping[str, Any]) -> Shown:
    """The namespace's record of diagnoses shown in full (a fresh one where the namespace cannot keep it)."""
    book = ns.get(SHOWN)
    if not isinstance(book, dict):
        book = {}
        if isinstance(ns, MutableMapping):
            ns[SHOWN] = book
    return Shown(book)


def validate_lines(text: str) -> list[str]:
    """`text` wrapped so that nbgrader's `validate` shows every word (continuation lines indented)."""
    return textwrap.wrap(text, VALIDATE_COLUMNS, subsequent_indent="    ", break_on_hyphens=False) or [""]


def verdict_text(results: list[CheckResult], hidden: bool) -> str:
    """What a check cell prints: one ✓ line per passed check, the diagnosis of each failed one."""
    lines: list[str] = []
    for r in results:
        lines.extend([f"{PASS} {r.name} (hidden inputs)"] if hidden and r.passed else result_lines(r))
    return "\n".join(lines)


GREEN, RED = "#1a7f37", "#cf222e"
# pre-wrap: a long diagnosis wraps inside the cell (and in nbgrader's feedback HTML) instead of running off the box
BLOCK = "font-family:var(--jp-code-font-family,monospace);font-size:var(--jp-code-font-size,13px);white-space:pre-wrap;"


def result_html(result: CheckResult, hidden: bool = False, brief: bool = False) -> str:
    """One check as HTML: a green ✓ line, or a red ✗ line with the lead, then the evidence, then the folded
    reproduce block (a real disclosure: its triangle shows in JupyterLab and in nbgrader's feedback alike).

    `brief` keeps only the ✗ line with its lead (the summary's form).
    """
    if result.passed:
        # "✓ name" stays one run of text, so the HTML holds the same words as the text line
        if hidden:
            return (f'<div style="{BLOCK}"><span style="color:{GREEN};font-weight:bold">'
                    f"{PASS} {escape(result.name)} (hidden inputs)</span></div>")
        return (f'<div style="{BLOCK}"><span style="color:{GREEN};font-weight:bold">{PASS} {escape(result.name)}</span>: '
                f"{escape(result.message)}</div>")
    d = diagnosis(result)
    parts = [f'<div style="{BLOCK}"><span style="color:{RED};font-weight:bold">{FAIL} {escape(result.name)}</span>: '
             f'<span class="autograder-lead" style="color:{RED}">{escape(d.lead)}</span></div>']
    if brief:
        return parts[0]
    if d.evidence:
        label = '<span style="font-weight:bold">seen:</span> ' if d.sentence else ""
        parts.append(f'<div class="autograder-evidence" style="{BLOCK}margin-left:2em">{label}'
                     f'{escape(chr(10).join(d.evidence))}</div>')
    if d.repro:
        parts.append(f'<details class="autograder-reproduce" style="margin-left:2em">'
                     f'<summary style="display:list-item;cursor:pointer">reproduce</summary>'
                     f'<pre style="{BLOCK}">{escape(chr(10).join(d.repro))}</pre></details>')
    return "".join(parts)


def verdict_html(results: list[CheckResult], hidden: bool) -> str:
    """What a check cell shows in JupyterLab: every check's HTML in one block."""
    return '<div class="autograder-check">' + "".join(result_html(r, hidden) for r in results) + "</div>"


def check_outputs(results: list[CheckResult], hidden: bool) -> list[dict[str, Any]]:
    """The outputs `check(...)` leaves in a graded notebook: the verdict (HTML and text), then CheckFailed if any failed."""
    outs: list[dict[str, Any]] = [{"output_type": "display_data", "metadata": {},
                                   "data": {"text/plain": verdict_text(results, hidden),
                                            "text/html": verdict_html(results, hidden)}}]
    if not all(r.passed for r in results):
        exc = CheckFailed(results)
        outs.append({"output_type": "error", "ename": "CheckFailed", "evalue": str(exc), "traceback": exc._render_traceback_()})
    return outs


# ---------------------------------------------------------------- unfinished exercises in a learner's kernel

_GUARD = ast.parse(
    "try:\n    pass\n"
    "except NotImplementedError as __autograder_exc__:\n"
    "    __import__('autograder.notebook').notebook.unfinished(__autograder_exc__)\n"
    "except Exception as __autograder_exc__:\n"
    "    if not __import__('autograder.workbook').workbook.stopped_by_learner_code(__autograder_exc__):\n"
    "        __autograder_at__ = __import__('autograder.notebook').notebook.raised_at(__autograder_exc__, ())\n"
    "        del __autograder_at__\n"
    "        raise\n"
).body[0]
_SHOW = ast.parse("__import__('autograder.notebook').notebook.show_value(None)").body[0]
_AT = "__autograder_at__"

Position = tuple[int, int, int, int]


class UnfinishedGuard(ast.NodeTransformer):
    """Wrap each cell in `try ... except`, keeping the display of its last expression.

    An unfinished exercise (NotImplementedError) or an error raised inside an exercise's code (a wrong method a demo
    calls) prints one line and lets Run All go on; any other error stops the cell with its traceback as usual, at
    the learner's own line: IPython shows a kernel cell's frame at the line it last ran, so the error is raised again
    from a `raise` placed where the error was (one `raise` per place in the cell, chosen by a few comparisons).
    """

    def visit_Module(self, node: ast.Module) -> ast.Module:
        body = node.body
        if not body or any(isinstance(s, ast.ImportFrom) and s.module == "__future__" for s in body):
            return node
        places = _places(node)
        if isinstance(body[-1], ast.Expr):
            show_last = _copy(_SHOW)
            show_last.value.args = [body[-1].value]
            body = [*body[:-1], show_last]
        guard = _copy(_GUARD)
        guard.body = body
        again = guard.handlers[1].body[0].body  # [__autograder_at__ = raised_at(exc, places), del ..., raise]
        again[0].value.args[1] = ast.Constant(tuple(places))
        again[1:] = [_raise_at(places, 0, len(places), again[1:])]
        node.body = [guard]
        return ast.fix_missing_locations(node)


def _places(tree: ast.AST) -> list[Position]:
    """Every place (lines and columns) a node of the cell spans, in a fixed order."""
    found = set()
    for n in ast.walk(tree):
        at = tuple(getattr(n, k, None) for k in ("lineno", "end_lineno", "col_offset", "end_col_offset"))
        if all(isinstance(x, int) for x in at):
            found.add(at)
    return sorted(found)  # type: ignore[arg-type]


def _raise_at(places: list[Position], low: int, high: int, otherwise: list[ast.stmt]) -> ast.stmt:
    """`raise` again from the place `__autograder_at__` indexes (a binary search over places[low:high]); `otherwise`
    (`del __autograder_at__; raise` where the guard stands) where it indexes none."""
    if high - low <= 1:
        leaf = [_copy(otherwise[0]), ast.Raise()]
        if high - low == 1:
            for n in leaf:  # IPython shows a kernel cell's frame at the line its last instruction ran on
                n.lineno, n.end_lineno, n.col_offset, n.end_col_offset = places[low]
        return ast.If(test=ast.Compare(ast.Name(_AT, ast.Load()), [ast.Eq()], [ast.Constant(low)]), body=leaf,
                      orelse=otherwise)
    mid = (low + high) // 2
    return ast.If(test=ast.Compare(ast.Name(_AT, ast.Load()), [ast.Lt()], [ast.Constant(mid)]),
                  body=[_raise_at(places, low, mid, otherwise)], orelse=[_raise_at(places, mid, high, otherwise)])


def raised_at(exc: BaseException, places: tuple[Position, ...]) -> int:
    """The index in `places` of where the caller's frame raised `exc`: the place of the instruction that failed, or
    else the first place on its line; -1 where neither is known."""
    frame = sys._getframe(1)
    entry = next((t for t in _walk(exc.__traceback__) if t.tb_frame is frame), None)
    if entry is None:
        return -1
    try:
        at = list(frame.f_code.co_positions())[entry.tb_lasti // 2]
    except (AttributeError, IndexError):
        at = (entry.tb_lineno, None, None, None)
    if at in places:
        return places.index(at)  # type: ignore[arg-type]
    return next((i for i, p in enumerate(places) if p[0] == entry.tb_lineno == p[1]), -1)


def _walk(tb: Any) -> Any:
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _copy(node: ast.stmt) -> Any:
    return ast.parse(ast.unparse(node)).body[0]


def show_value(value: Any) -> None:
    """What IPython does with a cell's last expression: display it as the cell's result (Out[n])."""
    from IPython import get_ipython

    get_ipython().displayhook(value)


def unfinished(exc: NotImplementedError) -> None:
    """One line instead of a traceback: which exercise is not done yet."""
    frames = list(traceback.walk_tb(exc.__traceback__))
    code = frames[-1][0].f_code if frames else None
    if code is None or code.co_name == "<module>":
        print("⋯ not done yet: this cell still raises NotImplementedError; "
              "replace the `raise NotImplementedError()` line with your code.")
    else:
        name = getattr(code, "co_qualname", code.co_name)
        print(f"⋯ not done yet: {name} still raises NotImplementedError, so this cell stopped there. "
              "Finish that exercise above, run its cell, then run this cell again.")


def install_unfinished_guard() -> bool:
    """In a learner's kernel, add the guard to IPython's AST transformers (once); False anywhere else."""
    if not learners_kernel():
        return False
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return False
    if not any(isinstance(t, UnfinishedGuard) for t in shell.ast_transformers):
        shell.ast_transformers.append(UnfinishedGuard())
    return True


install_unfinished_guard()
