"""The learner side of grading: one forked process runs one notebook's cells with IPython semantics.

It never decides a grade. At a grade cell it waits for the grader's requests ("which targets are
missing?", "observe this case") and answers with plain JSON; the grader judges. Everything it sends
goes through `json`, never pickle, so a hostile notebook can at worst send wrong numbers.
"""

from __future__ import annotations

import ast
import gc
import itertools
import json
import operator
import os
import resource
import signal
import sys
import warnings
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from . import channel

CELL_MARGIN = 1.0  # seconds between the worker's own cell alarm and the grader's SIGKILL (the grader adds more)


class CellTimeout(Exception):
    """The cell ran past the per-cell time limit."""


class OutputLimitExceeded(Exception):
    """The cell printed more than the output cap; printing more ends the cell."""


# ------------------------------------------------------------------ capturing outputs like nbclient


class Outputs:
    """The outputs of the running cell, as nbformat dicts, bounded to `limit` bytes of JSON (channel.output_size).

    The grader measures the same way and refuses more, so this count is only the honest worker's courtesy.
    """

    def __init__(self, limit: int, notebook_limit: int = 2**62) -> None:
        self.limit = limit
        self.notebook_limit = notebook_limit  # bytes all cells may leave; `spent`: what earlier cells left
        self.spent = 0
        self.items: list[dict[str, Any]] = []
        self.size = 0
        self.truncated = False  # past the cell's cap: printing more ends the cell
        self.dropped = False  # past the notebook's: what comes is dropped, and the cell runs on

    def _room(self, n: int) -> bool:
        if self.truncated or self.dropped:
            return False
        if self.size + n > self.limit or len(self.items) >= channel.MAX_OUTPUTS:
            self.truncated = True
            self._note(channel.NOTE.format(limit=self.limit))
            return False
        if self.spent + self.size + n > self.notebook_limit:
            self.dropped = True
            self._note(channel.NOTEBOOK_NOTE.format(limit=self.notebook_limit))
            return False
        self.size += n
        return True

    def _note(self, text: str) -> None:
        note = {"output_type": "stream", "name": "stdout", "text": "\n" + text + "\n"}
        self.items.append(note)
        self.size += channel.output_size(note)

    def next_cell(self) -> None:
        """The cell is over: its outputs count against the notebook's bound; the next cell starts with none."""
        self.spent += self.size
        self.clear()

    def stream(self, name: str, text: str) -> None:
        """Text printed to stdout or stderr (consecutive writes to one stream make one output, as in Jupyter)."""
        if not text:
            return
        last = self.items[-1] if self.items else None
        joins = last is not None and last["output_type"] == "stream" and last["name"] == name and isinstance(last["text"], list)
        envelope = 0 if joins else channel.output_size({"output_type": "stream", "name": name, "text": ""})
        if not self._room(envelope + channel.text_size(text)):
            return
        if joins:
            last["text"].append(text)  # type: ignore[index]  # joined in export(): appending to one str is quadratic
        else:
            self.items.append({"output_type": "stream", "name": name, "text": [text]})

    def export(self) -> list[dict[str, Any]]:
        """The outputs as nbformat dicts (stream chunks joined)."""
        return [{**o, "text": "".join(o["text"])} if isinstance(o.get("text"), list) else o for o in self.items]

    def rich(self, output_type: str, data: dict[str, Any], metadata: dict[str, Any], count: int | None = None) -> None:
        """A display_data or execute_result, counted by its JSON bytes whatever its mime types hold."""
        room = self.limit - self.size
        bundle, meta = _mime_json(data, room), _json_copy(metadata or {}, room)
        if bundle is None or meta is None:  # a part alone is over the cap: not worth copying
            self._room(self.limit + 1)
            return
        out: dict[str, Any] = {"output_type": output_type, "data": bundle, "metadata": meta if isinstance(meta, dict) else {}}
        if output_type == "execute_result":
            out["execution_count"] = count
        if self._room(channel.output_size(out)):
            self.items.append(out)

    def error(self, ename: str, evalue: str, traceback: list[str]) -> None:
        """An exception that ended the cell: always kept (within the grader's reserve), shortened."""
        lines = [str(t)[: channel.ERROR_TEXT] for t in traceback[-channel.ERROR_LINES:]]
        out = {"output_type": "error", "ename": ename[: channel.ERROR_TEXT], "evalue": evalue[: channel.ERROR_TEXT],
               "traceback": lines}
        n = channel.output_size(out)
        if self.size + n > self.limit + channel.RESERVE // 2:
            return  # a cell showing error after error: the first ones already decide its grade
        self.size += n
        self.items.append(out)

    def clear(self) -> None:
        """clear_output(): the cell starts over with no output."""
        self.items.clear()
        self.size = 0
        self.truncated = self.dropped = False


def _mime_json(data: dict[str, Any], room: int) -> dict[str, Any] | None:
    """A display's mime bundle as JSON-ready copies (bytes as base64, like ipykernel), dropping what cannot be;
    None when one value alone is bigger than `room` bytes."""
    import base64

    bundle: dict[str, Any] = {}
    for mime, value in data.items():
        if isinstance(value, bytes):
            value = base64.b64encode(value).decode("ascii")
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            value = "".join(value)
        if isinstance(value, str):
            if len(value) > room:
                return None
        elif channel.JSON_MIME.match(str(mime)):
            value = _json_copy(value, room)
            if value is None:
                return None
        else:
            continue
        if value is not _NOT_JSON:
            bundle[str(mime)] = value
    return bundle


_NOT_JSON = object()


def _json_copy(value: Any, room: int) -> Any:
    """A plain-JSON copy of `value` (so later changes to it change no output), _NOT_JSON if it has no JSON form,
    None if its JSON is bigger than `room` bytes."""
    try:
        text = channel.encode(value)
    except (TypeError, ValueError, RecursionError):
        return _NOT_JSON
    if len(text) > room:
        return None
    copy = json.loads(text)
    try:  # the channel's own rule (nesting, integer size): what it would refuse is dropped here, never sent
        channel.plain(copy, "an output", channel.MAX_DEPTH, None)
    except channel.Violation:
        return _NOT_JSON
    return copy


class _Stream:
    """sys.stdout / sys.stderr while a cell runs."""

    def __init__(self, outputs: Outputs, name: str) -> None:
        self.outputs, self.name = outputs, name
        self.encoding, self.errors = "utf-8", "strict"

    def write(self, s: Any) -> int:
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        if self.outputs.truncated:  # a runaway print loop: stop it now rather than at the time limit
            raise OutputLimitExceeded(f"the cell printed more than {self.outputs.limit} bytes")
        self.outputs.stream(self.name, s)
        if self.outputs.truncated:
            raise OutputLimitExceeded(f"the cell printed more than {self.outputs.limit} bytes")
        return len(s)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("no file descriptor while grading")


def make_shell(outputs: Outputs) -> Any:
    """An IPython InteractiveShell whose display hook, display publisher and tracebacks fill `outputs`."""
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    class Hook(DisplayHook):
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

    config = Config()
    config.HistoryManager.enabled = False
    # Figures are shown by their text (`<Figure size ... with 1 Axes>`), never drawn: no grade depends on a picture,
    # and rendering a PNG took more time than anything else in a plotting cell (~0.2 s a figure).
    config.InlineBackend.figure_formats = set()
    shell = Shell.instance(config=config, displayhook_class=Hook, display_pub_class=Publisher, colors="NoColor")
    # Python's plain traceback (file, line, code): the default "Context" mode took 15-30 ms per error, and a blank
    # notebook raises in every exercise cell.
    shell.InteractiveTB.set_mode("Plain")
    try:
        raise NotImplementedError
    except NotImplementedError:  # the first traceback loads the formatter's modules: once here, not in every cell
        shell.InteractiveTB.structured_traceback(*sys.exc_info())
    return shell


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


# ------------------------------------------------------------------ the process

PRELOAD = ["autograder.grading.warm"]
_CONTEXT: Any = None


def forkserver_context(start: bool = False) -> Any:
    """The forkserver context (one warm process forks every worker); `start` launches the server now, in the background."""
    global _CONTEXT
    if _CONTEXT is None:
        import multiprocessing

        # Inherited by the fork server: one BLAS thread per worker (and a small address space), inline figures.
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, "1")
        os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        _CONTEXT = ctx
    if start:
        from multiprocessing import forkserver

        forkserver.ensure_running()  # returns at once; the server imports PRELOAD while the grader imports nbgrader
    return _CONTEXT


def _die_with_parent() -> None:
    """Linux: SIGKILL this worker when the fork server exits (the grader was killed), even if it ignores its pipe."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _confine(limits: Any, workdir: str) -> None:
    """Own process group, scratch directory, resource limits, no inherited terminal output, nbgrader's environment."""
    os.setpgid(0, 0)  # the grader kills the whole group: processes the notebook starts go too
    _die_with_parent()
    os.chdir(workdir)
    os.environ["NBGRADER_EXECUTION"] = "autograde"
    mb = 1024 * 1024
    caps = {
        resource.RLIMIT_AS: limits.memory_mb * mb,
        resource.RLIMIT_CORE: 0,
        resource.RLIMIT_FSIZE: 256 * mb,  # a file written in the scratch directory
        resource.RLIMIT_CPU: int(limits.notebook_timeout) + 5,  # backstop: the grader's wall clock comes first
    }
    for what, value in caps.items():
        try:
            _, hard = resource.getrlimit(what)
            resource.setrlimit(what, (value if hard == resource.RLIM_INFINITY else min(value, hard), hard))
        except (ValueError, OSError):
            pass
    # Learner code writing to the real fd 1/2 (C code, os.write, sys.__stderr__) must not reach the
    # grader's terminal or the notebook outputs.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)


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


@dataclass(frozen=True)
class ProbeKit:
    """The grader's probe functions, taken before any learner code runs (so patching the modules later misses them)."""

    checks: frozenset[str]
    missing_targets: Any  # (check name, namespace) -> list of missing targets
    observe: Any  # (check name, namespace, case, check timeout) -> observation
    suspicions: list[str]

    @classmethod
    def take(cls) -> ProbeKit:
        from autograder import probes
        from autograder.probes import safe

        return cls(frozenset(probes.NEEDS), probes.missing, probes.observe, safe.SUSPICIONS)

    def drain(self) -> list[str]:
        """What read_number caught lying since the last call."""
        out = [str(x)[:300] for x in self.suspicions[:20]]
        self.suspicions.clear()
        return out


GUARDED = ("builtins", "math", "json", "json.encoder", "numbers", "operator", "multiprocessing.connection")
UNGUARDED_NAMES = {"_", "__", "___", "_dh", "_oh", "_ih", "__builtins__", "_PREPARED"}  # the last: emptied by child_main


class Guard:
    """Everything the learner's process relies on to answer the grader, as it was before any learner code ran.

    After each cell the worker compares: a replaced attribute of an `autograder` module, of a class or function
    defined there (its code too), of `builtins`, `math`, `json`, ... or a `check` rebound in the notebook is
    tampering. Honest notebooks never replace these; new attributes are ignored.
    """

    def __init__(self, user_ns: dict[str, Any]) -> None:
        import autograder

        self.user_ns = user_ns
        self.check = autograder.check  # the function a notebook imports (the stand-in's, inside the sandbox)
        # (mapping, its keys, their values) for each mapping walked
        self.views: list[tuple[Any, tuple[Any, ...], tuple[Any, ...]]] = []
        self.functions: tuple[Any, ...] = ()
        self.owned: list[tuple[Any, type, dict[str, Any]]] = []  # (object, its class, its attributes) of `watch`
        self.items = self._take(self.views)
        # A function's code, defaults, globals... as the collector sees them: reading `__code__` raises an audit
        # event per function (hundreds per cell through the worker's audit hook, ~4 ms); this is one call.
        self.referents = gc.get_referents
        self.function_parts = self.referents(*self.functions)

    @staticmethod
    def _modules() -> dict[str, Any]:
        names = [n for n in list(sys.modules) if n.split(".")[0] == "autograder"] + list(GUARDED)
        return {n: sys.modules[n] for n in names if n in sys.modules}

    def _take(self, views: list[tuple[Any, tuple[Any, ...], tuple[Any, ...]]] | None = None) -> dict[tuple[str, ...], Any]:
        """Every guarded item; with `views`, also each mapping walked with its keys and values (for `unchanged`)."""
        items: dict[tuple[str, ...], Any] = {}
        modules = self._modules()
        functions: list[Any] = []

        def view(mapping: Any, pairs: list[tuple[Any, Any]]) -> None:
            if views is not None:
                views.append((mapping, tuple(k for k, _ in pairs), tuple(v for _, v in pairs)))

        view(sys.modules, list(modules.items()))
        for mname, module in modules.items():
            pairs = [(k, v) for k, v in list(vars(module).items()) if k not in UNGUARDED_NAMES]
            view(vars(module), pairs)
            for key, value in pairs:
                items[(mname, key)] = value
                owner = getattr(value, "__module__", None) == mname
                if owner and isinstance(value, type):
                    members = list(vars(value).items())
                    view(vars(value), members)
                    for attr, member in members:
                        items[(mname, key, attr)] = member
                elif owner and callable(value) and hasattr(value, "__code__"):
                    items[(mname, key, "__code__")] = value.__code__
                    items[(mname, key, "__defaults__")] = value.__defaults__
                    functions.append(value)
                elif mname.startswith("autograder") and isinstance(value, dict):
                    entries = list(value.items())[:1000]
                    view(value, entries)
                    for k, v in entries:
                        items[(mname, key, f"[{k!r}]")] = v
        if views is not None:
            self.functions = tuple(functions)
        return items

    def watch(self, *objects: Any, mutable: tuple[str, ...] = ("seq", "function_parts")) -> None:
        """Also guard the worker's own objects (its writer, probe kit, connection, this guard): an attribute of one
        replaced (CPython raises no audit event for an instance's attribute) or its class swapped is tampering."""
        for obj in objects:
            state = {k: v for k, v in vars(obj).items() if k not in mutable}
            self.owned.append((obj, type(obj), state))

    def _owned_changes(self) -> list[str]:
        changed = []
        for obj, cls, state in self.owned:
            now = {k: v for k, v in vars(obj).items() if k in state or k not in ("seq", "function_parts")}
            if type(obj) is not cls:
                changed.append(f"the worker's {cls.__name__}'s class")
            changed += [f"the worker's {cls.__name__}.{k}" for k in sorted(set(now) | set(state))
                        if now.get(k, _MISSING) is not state.get(k, _MISSING)]
        return changed

    def unchanged(self) -> bool:
        """True when every guarded item is still the very object of the snapshot: identity checks at C speed, the
        same items `changes` compares (it runs only when this says something moved)."""
        if self.owned and self._owned_changes():
            return False
        for mapping, keys, values in self.views:
            if not all(map(operator.is_, map(mapping.get, keys, itertools.repeat(_MISSING)), values)):
                return False
        parts = self.referents(*self.functions)
        return len(parts) == len(self.function_parts) and all(map(operator.is_, parts, self.function_parts))

    def changes(self) -> list[str]:
        """What the notebook replaced since the snapshot (empty for an honest notebook)."""
        ns_check = self.user_ns.get("check")
        rebound = callable(ns_check) and ns_check is not self.check
        if not rebound and self.unchanged():
            return []
        owned = self._owned_changes()
        now = self._take()
        keys = [k for k, v in self.items.items() if k not in now or now[k] is not v]
        if not keys:  # a part nothing guards moved (a function's __dict__ made on first use): look again from here
            self.function_parts = self.referents(*self.functions)
        replaced = set(keys)
        changed = [".".join(k) for k in keys if not (len(k) > 2 and k[:2] in replaced)]  # a new function, not also its code
        if rebound:
            changed.append("check (rebound in the notebook)")
        return (owned + changed)[:10]


_MISSING = object()


def answer_checks(conn: Connection, writer: channel.Writer, shell: Any, limits: Any, kit: ProbeKit, guard: Guard) -> None:
    """Serve the grader's requests at a grade cell until it says resume; then report any tampering by the probes' calls."""
    missing_targets, observe = kit.missing_targets, kit.observe
    while True:
        request = channel.decode_request(conn.recv_bytes())
        op = request["op"]
        if op == "resume":
            writer.resumed(guard.changes())
            return
        check = request["check"]
        if check not in kit.checks:
            raise KeyError(check)
        if op == "missing":
            writer.missing(missing_targets(check, shell.user_ns))
        else:
            old_limit = sys.getrecursionlimit()
            kit.drain()
            try:
                observation = observe(check, shell.user_ns, request["case"], limits.check_timeout)
            finally:
                sys.setrecursionlimit(old_limit)
            writer.observation(observation, kit.drain())


@dataclass
class Prepared:
    """What every worker needs before learner code runs, made once in the process that forks the workers."""

    kit: ProbeKit
    outputs: Outputs
    shell: Any
    guard: Guard | None = None

    @classmethod
    def make(cls) -> Prepared:
        """The kit, the shell and (last, so that it sees all of them in place) the guard's snapshot."""
        from autograder.settings import Limits

        global _PREPARED
        Limits()  # whatever traitlets sets up on the class at first use happens here, before the guard's snapshot
        outputs = Outputs(Limits().output_bytes)
        shell = make_shell(outputs)
        warm_figures()
        _PREPARED = ready = cls(ProbeKit.take(), outputs, shell)
        ready.guard = Guard(shell.user_ns)
        return ready


_PREPARED: Prepared | None = None


def prepare() -> None:
    """Build the probe kit, the IPython shell and the tamper guard's snapshot now, in the fork server (no learner
    code has run there), so that each forked worker starts with them: ~0.1 s less per notebook."""
    Prepared.make()


def child_main(conn: Connection, plan: dict[str, Any], workdir: str) -> None:
    """Run the plan's cells in order; report each cell's outputs; answer the grader at grade cells."""
    from autograder.settings import Limits

    from .audit import install_audit_hook

    global _PREPARED
    ready, _PREPARED = _PREPARED or Prepared.make(), None
    # From here only this call's frame holds the kit and the guard: learner code would need frames or the
    # collector to reach them (both audited), not a lookup in sys.modules (which raises no event)
    kit, outputs, shell, guard = ready.kit, ready.outputs, ready.shell, ready.guard
    del ready
    assert guard is not None
    limits = Limits(**plan["limits"])
    outputs.limit, outputs.notebook_limit = limits.output_bytes, limits.notebook_output_bytes
    _confine(limits, workdir)
    writer = channel.Writer(conn)
    guard.watch(writer, kit, conn, guard)
    install_audit_hook(writer.audit)  # last: from here on, every audited event of learner code is reported
    for index, cell in enumerate(plan["cells"]):
        outputs.next_cell()
        if cell["kind"] == "checks":
            writer.grade(index)
            answer_checks(conn, writer, shell, limits, kit, guard)
        else:
            run_cell(shell, outputs, cell["source"], limits.cell_timeout)
            writer.cell(index, outputs.export(), guard.changes())
    writer.done()
    conn.close()
    os._exit(0)  # skip atexit handlers that learner code may have registered
