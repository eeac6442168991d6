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
        if last and last["output_type"] == "stream" and last["name"] == name:
            last["text"] += text
        else:
            self.items.append({"output_type": "stream", "name": name, "text": text})

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
        if isinstance(s, str):
            self.outputs.stream(self.name, s)
            return len(s)
        raise TypeError(f"write() argument must be str, not {type(s).__name__}")

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


def _confine(limits: WorkerLimits, workdir: str) -> None:
    """Scratch directory, resource limits, no inherited terminal output, nbgrader's environment."""
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

    checks: dict[str, Any]
    missing_targets: Any
    observe: Any

    @classmethod
    def take(cls) -> ProbeKit:
        from autograder import catalog
        from autograder.check import missing_targets, observe

        return cls(dict(catalog.BY_NAME), missing_targets, observe)


def answer_checks(conn: Connection, shell: Any, limits: Any, kit: ProbeKit) -> None:
    """Serve the grader's requests at a grade cell until it says resume."""
    missing_targets, observe = kit.missing_targets, kit.observe
    while True:
        request = json.loads(conn.recv_bytes())
        op = request.get("op")
        if op == "resume":
            return
        check = kit.checks[request["check"]]
        if op == "missing":
            _send(conn, {"missing": missing_targets(check, shell.user_ns)})
        elif op == "observe":
            old_limit = sys.getrecursionlimit()
            try:
                _send(conn, {"observation": observe(check, shell.user_ns, request["case"], limits)})
            finally:
                sys.setrecursionlimit(old_limit)


def child_main(conn: Connection, cells: list[dict[str, str]], limits: WorkerLimits, workdir: str) -> None:
    """Run the cells in order; report each cell's outputs; answer the grader at grade cells."""
    from autograder.settings import Limits

    kit = ProbeKit.take()
    _confine(limits, workdir)
    check_limits = Limits(check_timeout=limits.check_timeout)
    outputs = Outputs(limits.output_bytes)
    shell = make_shell(outputs)
    for index, cell in enumerate(cells):
        outputs.clear()
        outputs.truncated = False
        if cell["kind"] == "checks":
            _send(conn, {"op": "grade", "index": index})
            answer_checks(conn, shell, check_limits, kit)
        else:
            run_cell(shell, outputs, cell["source"], limits.cell_timeout)
            _send(conn, {"op": "cell", "index": index, "outputs": outputs.items})
    _send(conn, {"op": "done"})
    conn.close()
    os._exit(0)  # skip atexit handlers that learner code may have registered
