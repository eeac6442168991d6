"""The learner side of grading: one forked process runs one notebook's cells with IPython semantics.

It never decides a grade. At a grade cell it waits for the grader's requests ("which targets are
missing?", "observe this case") and answers with plain JSON; the grader judges. Everything it sends
goes through `json`, never pickle, so a hostile notebook can at worst send wrong numbers.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

MAX_MESSAGE = 64 * 1024 * 1024  # bytes the grader accepts in one message from a worker
CELL_MARGIN = 1.0  # seconds between the worker's own cell alarm and the grader's SIGKILL (the grader adds more)


@dataclass(frozen=True)
class WorkerLimits:
    """What the grader allows one notebook (from `autograder.settings.Limits`)."""

    check_timeout: float
    cell_timeout: float
    notebook_timeout: float
    memory_mb: int
    output_bytes: int


class CellTimeout(Exception):
    """The cell ran past the per-cell time limit."""


class OutputLimitExceeded(Exception):
    """The cell printed more than the output cap; printing more ends the cell."""


# ------------------------------------------------------------------ capturing outputs like nbclient


class Outputs:
    """The outputs of the running cell, as nbformat dicts, bounded to `limit` characters."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.items: list[dict[str, Any]] = []
        self.size = 0
        self.truncated = False

    def _room(self, n: int) -> bool:
        if self.size + n > self.limit:
            if not self.truncated:
                self.truncated = True
                self.items.append({"output_type": "stream", "name": "stdout",
                                   "text": f"\n[output truncated: more than {self.limit} characters]\n"})
            return False
        self.size += n
        return True

    def stream(self, name: str, text: str) -> None:
        if not text or not self._room(len(text)):
            return
        last = self.items[-1] if self.items else None
        if last and last["output_type"] == "stream" and last["name"] == name and isinstance(last["text"], list):
            last["text"].append(text)  # joined in export(): appending to one str is quadratic in a print loop
        else:
            self.items.append({"output_type": "stream", "name": name, "text": [text]})

    def export(self) -> list[dict[str, Any]]:
        """The outputs as nbformat dicts (stream chunks joined)."""
        return [{**o, "text": "".join(o["text"])} if isinstance(o.get("text"), list) else o for o in self.items]

    def rich(self, output_type: str, data: dict[str, Any], metadata: dict[str, Any], count: int | None = None) -> None:
        size = sum(len(v) if isinstance(v, str) else 100 for v in data.values())
        if not self._room(size):
            return
        out: dict[str, Any] = {"output_type": output_type, "data": data, "metadata": metadata or {}}
        if output_type == "execute_result":
            out["execution_count"] = count
        self.items.append(out)

    def error(self, ename: str, evalue: str, traceback: list[str]) -> None:
        self._room(0)
        self.items.append({"output_type": "error", "ename": ename, "evalue": evalue[:2000],
                           "traceback": [str(t)[:5000] for t in traceback[:200]]})

    def clear(self) -> None:
        self.items.clear()
        self.size = 0


class _Stream:
    """sys.stdout / sys.stderr while a cell runs."""

    def __init__(self, outputs: Outputs, name: str) -> None:
        self.outputs, self.name = outputs, name
        self.encoding, self.errors = "utf-8", "strict"

    def write(self, s: Any) -> int:
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        if self.outputs.truncated:  # a runaway print loop: stop it now rather than at the time limit
            raise OutputLimitExceeded(f"the cell printed more than {self.outputs.limit} characters")
        self.outputs.stream(self.name, s)
        if self.outputs.truncated:
            raise OutputLimitExceeded(f"the cell printed more than {self.outputs.limit} characters")
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

    config = Config()
    config.HistoryManager.enabled = False
    shell = Shell.instance(config=config, displayhook_class=Hook, display_pub_class=Publisher, colors="NoColor")
    return shell


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


def _confine(limits: WorkerLimits, workdir: str) -> None:
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


def _send(conn: Connection, message: dict[str, Any]) -> None:
    conn.send_bytes(json.dumps(message, default=repr).encode())


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

    missing: Any
    observe: Any
    suspicions: list[str]

    @classmethod
    def take(cls) -> ProbeKit:
        from autograder import probes
        from autograder.probes import safe

        return cls(probes.missing, probes.observe, safe.SUSPICIONS)

    def drain(self) -> list[str]:
        """What read_number caught lying since the last call."""
        out = [str(x)[:300] for x in self.suspicions[:20]]
        self.suspicions.clear()
        return out


GUARDED = ("builtins", "math", "json", "numbers", "operator", "multiprocessing.connection")
UNGUARDED_NAMES = {"_", "__", "___", "_dh", "_oh", "_ih", "__builtins__"}


class Guard:
    """Everything the learner's process relies on to answer the grader, as it was before any learner code ran.

    After each cell the worker compares: a replaced attribute of an `autograder` module, of a class or function
    defined there (its code too), of `builtins`, `math`, `json`, ... or a `check` rebound in the notebook is
    tampering. Honest notebooks never replace these; new attributes are ignored.
    """

    def __init__(self, user_ns: dict[str, Any]) -> None:
        from autograder.notebook import check

        self.user_ns = user_ns
        self.check = check
        self.items = self._take()

    @staticmethod
    def _modules() -> dict[str, Any]:
        names = [n for n in list(sys.modules) if n == "autograder" or n.startswith("autograder.")] + list(GUARDED)
        return {n: sys.modules[n] for n in names if n in sys.modules}

    def _take(self) -> dict[tuple[str, ...], Any]:
        items: dict[tuple[str, ...], Any] = {}
        for mname, module in self._modules().items():
            for key, value in list(vars(module).items()):
                if key in UNGUARDED_NAMES:
                    continue
                items[(mname, key)] = value
                owner = getattr(value, "__module__", None) == mname
                if owner and isinstance(value, type):
                    for attr, member in list(vars(value).items()):
                        items[(mname, key, attr)] = member
                elif owner and callable(value) and hasattr(value, "__code__"):
                    items[(mname, key, "__code__")] = value.__code__
                    items[(mname, key, "__defaults__")] = value.__defaults__
                elif mname.startswith("autograder") and isinstance(value, dict):
                    for k, v in list(value.items())[:1000]:
                        items[(mname, key, f"[{k!r}]")] = v
        return items

    def changes(self) -> list[str]:
        """What the notebook replaced since the snapshot (empty for an honest notebook)."""
        now = self._take()
        keys = [k for k, v in self.items.items() if k not in now or now[k] is not v]
        replaced = set(keys)
        changed = [".".join(k) for k in keys if not (len(k) > 2 and k[:2] in replaced)]  # a new function, not also its code
        ns_check = self.user_ns.get("check")
        if callable(ns_check) and ns_check is not self.check:
            changed.append("check (rebound in the notebook)")
        return changed[:10]


def answer_checks(conn: Connection, shell: Any, limits: Any, kit: ProbeKit, guard: Guard) -> None:
    """Serve the grader's requests at a grade cell until it says resume; then report any tampering by the probes' calls."""
    missing, observe = kit.missing, kit.observe
    while True:
        request = json.loads(conn.recv_bytes())
        op = request.get("op")
        if op == "resume":
            _send(conn, {"op": "resumed", "tampered": guard.changes()})
            return
        name = request["check"]
        if op == "missing":
            _send(conn, {"missing": missing(name, shell.user_ns)})
        elif op == "observe":
            old_limit = sys.getrecursionlimit()
            kit.drain()
            try:
                observation = observe(name, shell.user_ns, request["case"], limits.check_timeout)
            finally:
                sys.setrecursionlimit(old_limit)
            _send(conn, {"observation": observation, "suspect": kit.drain()})


def child_main(conn: Connection, cells: list[dict[str, str]], limits: WorkerLimits, workdir: str) -> None:
    """Run the cells in order; report each cell's outputs; answer the grader at grade cells."""
    from autograder.settings import Limits

    kit = ProbeKit.take()
    _confine(limits, workdir)
    check_limits = Limits(check_timeout=limits.check_timeout)
    outputs = Outputs(limits.output_bytes)
    shell = make_shell(outputs)
    guard = Guard(shell.user_ns)
    for index, cell in enumerate(cells):
        outputs.clear()
        outputs.truncated = False
        if cell["kind"] == "checks":
            _send(conn, {"op": "grade", "index": index})
            answer_checks(conn, shell, check_limits, kit, guard)
        else:
            run_cell(shell, outputs, cell["source"], limits.cell_timeout)
            _send(conn, {"op": "cell", "index": index, "outputs": outputs.export(), "tampered": guard.changes()})
    _send(conn, {"op": "done"})
    conn.close()
    os._exit(0)  # skip atexit handlers that learner code may have registered
