"""The grader side of one notebook: start a worker, feed it cells, judge its observations, build the graded notebook."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode, from_dict
from nbgrader import utils as nbutils

from .. import checks as catalog
from ..checks import NOT_IMPLEMENTED, CheckResult, judge_checks
from ..notebook import CheckFailed, verdict_text
from ..settings import Limits, Tolerance
from .sanitize import Sanitized, redact_hidden_tests
from .source import NotebookSpec, SourceCell
from .worker import MAX_MESSAGE, WorkerLimits, child_main, forkserver_context

GRACE = 5.0  # seconds the grader waits beyond a worker's own time limit before it kills the worker


class Stopped(Exception):
    """The worker stopped answering: died, timed out, or sent garbage; the message is the reason."""


class Tampered(Stopped):
    """The notebook replaced part of the grader's side of the worker; grading stops there (flagged)."""


@dataclass
class Graded:
    """One notebook, graded: its scores, comments, the autograded notebook and what the grader noticed."""

    scores: dict[str, tuple[float | None, float]]  # grade_id -> (auto_score, max_score)
    comments: dict[str, str | None]  # solution grade_id -> auto_comment
    nb: NotebookNode | None
    flags: list[str] = field(default_factory=list)  # suspected cheating: for the instructor to review
    reason: str = ""  # why some or all cells could not be graded normally
    ran: bool = True  # False: nothing of the notebook ran (unreadable, or the worker died at once)
    notes: list[str] = field(default_factory=list)  # what else happened (limits hit, cells missing or moved)
    misconceptions: list[str] = field(default_factory=list)  # ids behind the failed checks, for the class report

    @property
    def score(self) -> float:
        """Points earned (cells awaiting manual grading count 0)."""
        return sum(s or 0.0 for s, _ in self.scores.values())

    @property
    def max_score(self) -> float:
        """Points possible."""
        return sum(m for _, m in self.scores.values())


_LIVE: set[Session] = set()
_LIVE_LOCK = threading.Lock()


def kill_all() -> None:
    """Kill every running worker (the grader is being interrupted)."""
    with _LIVE_LOCK:
        sessions = list(_LIVE)
    for s in sessions:
        s.kill()


def context() -> Any:
    """The forkserver context: one warm process (numpy, matplotlib, IPython, the catalog imported) forks every worker."""
    return forkserver_context()


def zero_scores(spec: NotebookSpec) -> dict[str, tuple[float | None, float]]:
    """Every grade cell at 0: what an ungradable notebook records."""
    return {c.name: (0.0, c.points or 0.0) for c in spec.grade_cells}


class Session:
    """The conversation with one worker process."""

    def __init__(self, cells: list[dict[str, str]], limits: Limits, workdir: str) -> None:
        self.limits = limits
        ctx = context()
        self.conn, child = ctx.Pipe(duplex=True)
        wl = WorkerLimits(limits.check_timeout, limits.cell_timeout, limits.notebook_timeout, limits.memory_mb, limits.output_bytes)
        self.proc = ctx.Process(target=child_main, args=(child, cells, wl, workdir), daemon=True)
        self.proc.start()
        child.close()
        with _LIVE_LOCK:
            _LIVE.add(self)
        self.deadline = time.monotonic() + limits.notebook_timeout
        self.where = "before the first cell"

    def recv(self, timeout: float) -> dict[str, Any]:
        """The worker's next message, or Stopped."""
        left = self.deadline - time.monotonic()
        if left <= 0 or not self.conn.poll(min(timeout, left)):
            self.kill()
            if left <= timeout:
                raise Stopped(f"the notebook ran past its time limit of {self.limits.notebook_timeout:g} s ({self.where})")
            raise Stopped(f"no answer within {timeout - GRACE:g} s ({self.where}): an infinite loop that ignores the time limit?")
        try:
            data = self.conn.recv_bytes(MAX_MESSAGE)
        except (EOFError, OSError) as exc:
            raise Stopped(self._death(exc)) from None
        try:
            message = json.loads(data)
        except ValueError:
            self.kill()
            raise Stopped(f"the worker sent unreadable data ({self.where})") from None
        if not isinstance(message, dict):
            self.kill()
            raise Stopped(f"the worker sent unreadable data ({self.where})")
        return message

    def send(self, message: dict[str, Any]) -> None:
        try:
            self.conn.send_bytes(json.dumps(message).encode())
        except (OSError, ValueError) as exc:
            raise Stopped(self._death(exc)) from None

    def _death(self, exc: BaseException) -> str:
        self.proc.join(2)
        code = self.proc.exitcode
        if code is None:
            self.kill()
            return f"the worker closed its connection ({self.where})"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            hint = {"SIGSEGV": " (a segfault)", "SIGXCPU": " (CPU time limit)", "SIGKILL": " (out of memory?)"}.get(name, "")
            return f"the worker process was killed by {name}{hint} ({self.where})"
        return f"the notebook's code ended the worker process (exit status {code}) ({self.where})"

    def kill(self) -> None:
        """SIGKILL the worker's process group (the worker and whatever the notebook started), then the worker."""
        if self.proc.pid:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)

    def close(self) -> None:
        self.kill()
        self.conn.close()
        with _LIVE_LOCK:
            _LIVE.discard(self)


def _as_obs(reply: dict[str, Any]) -> dict[str, Any]:
    obs = reply.get("observation")
    if not isinstance(obs, dict):
        raise Stopped("the worker sent a malformed observation")
    return obs


NUDGE = 1.0 + 2.0**-10  # about 0.1%: a real function barely notices; a table of the visible answers does


def nudge(case: Any) -> Any:
    """The case with every non-integer float input scaled by NUDGE (integers, counts and names kept)."""
    if isinstance(case, float) and not case.is_integer():
        return case * NUDGE
    if isinstance(case, list):
        return [nudge(x) for x in case]
    if isinstance(case, dict):
        return {k: nudge(v) for k, v in case.items()}
    return case


def grade_check_call(session: Session, names: tuple[str, ...], hidden: bool, tolerance: Tolerance,
                     flags: list[str] | None = None, visible_passed: set[str] | None = None) -> list[CheckResult]:
    """One `check(...)` statement: the worker observes, this process judges (as `run_checks` would in a kernel).

    Suspicions go to `flags`: a learner object that lied to read_number, and a hidden check that fails where
    the visible one (in `visible_passed`) passes its exact inputs but not the same inputs nudged by 0.1%.
    """
    wait = session.limits.check_timeout + GRACE
    flags = flags if flags is not None else []
    visible_passed = visible_passed if visible_passed is not None else set()

    def missing(name: str) -> Callable[[], list[str]]:
        def ask() -> list[str]:
            session.send({"op": "missing", "check": name})
            got = session.recv(wait).get("missing")
            if not (isinstance(got, list) and all(isinstance(t, str) for t in got)):
                raise Stopped("the worker sent a malformed answer")
            return got
        return ask

    def observe(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
        def ask(case: dict[str, Any]) -> dict[str, Any]:
            session.send({"op": "observe", "check": name, "case": case})
            reply = session.recv(wait)
            for text in _strings(reply.get("suspect"))[:3]:
                flag = f"lying object in check {name}: {text}"
                if flag not in flags:
                    flags.append(flag)
            return _as_obs(reply)
        return ask

    class WorkerProber:
        """Observations from the worker (see checks.run.Prober)."""

        def missing(self, name: str) -> list[str]:
            return missing(name)()

        def observe(self, name: str, case: dict[str, Any]) -> dict[str, Any]:
            return observe(name)(case)

    def judged_all(checks: list[Any], hide: bool) -> list[CheckResult]:
        try:
            return judge_checks(checks, hide, tolerance, WorkerProber(), get=catalog.get)
        except Stopped:
            raise
        except Exception as exc:  # a judge fed numbers of the wrong shape: only a tampered worker sends those
            return [CheckResult(c.name, c.targets, False, 0.0, c.points,
                                f"the learner's process returned malformed data ({type(exc).__name__})", "error")
                    for c in checks]

    def judged(check: Any, hide: bool) -> CheckResult:
        return judged_all([check], hide)[0]

    results = judged_all([catalog.get(name) for name in names], hidden)
    for name, result in zip(names, results):
        check = catalog.get(name)
        if not hidden and result.passed:
            visible_passed.add(name)
        elif hidden and not result.passed and name in visible_passed and result.status != NOT_IMPLEMENTED:
            cases = check.make_cases(False)
            moved = nudge(cases)
            if moved != cases and judged(check, False).passed:
                variant = dataclasses.replace(check, cases=lambda rng, hide, moved=moved: moved)
                if not judged(variant, False).passed:
                    flags.append(f"hard-coded answers? {name} passes its visible inputs but fails the same inputs "
                                 "nudged by 0.1% (and its hidden inputs)")
    return results


def _strings(value: Any) -> list[str]:
    """A list of short strings from the worker, whatever it sent."""
    return [str(x)[:300] for x in value[:20]] if isinstance(value, list) else []


def check_outputs(results: list[CheckResult], hidden: bool) -> list[dict[str, Any]]:
    """The outputs `check(...)` leaves in a kernel: the verdict lines, then CheckFailed if any check failed."""
    outs: list[dict[str, Any]] = [{"output_type": "stream", "name": "stdout", "text": verdict_text(results, hidden) + "\n"}]
    if not all(r.passed for r in results):
        exc = CheckFailed(results)
        outs.append({"output_type": "error", "ename": "CheckFailed", "evalue": str(exc), "traceback": exc._render_traceback_()})
    return outs


def _stopped_output(reason: str) -> dict[str, Any]:
    return {"output_type": "error", "ename": "NotGraded", "evalue": reason, "traceback": [f"Not graded: {reason}"]}


def _flag_output(flags: list[str]) -> dict[str, Any]:
    return {"output_type": "stream", "name": "stdout", "text": "".join(f"⚠ flagged for review: {f}\n" for f in flags)}


LIMIT_ERRORS = {
    "CellTimeout": "stopped at the time limit of {cell_timeout:g} s per cell",
    "MemoryError": "ran out of memory (limit {memory_mb} MiB)",
    "OutputLimitExceeded": "printed more than {output_bytes} characters; the cell was stopped and the rest dropped",
    "SystemExit": "called sys.exit() (the cell stopped there)",
}


def note_errors(cell: NotebookNode, where: str, solution: bool, limits: Limits, notes: list[str]) -> None:
    """Notes for a cell that hit a limit or exited, and for errors in the learner's own (solution) cells."""
    for out in cell.outputs:
        if out.get("output_type") != "error":
            continue
        ename = str(out.get("ename", ""))
        if ename in LIMIT_ERRORS:
            text = LIMIT_ERRORS[ename].format(cell_timeout=limits.cell_timeout, memory_mb=limits.memory_mb,
                                              output_bytes=limits.output_bytes)
            notes.append(f"{where} {text}")
        elif solution and ename != "NotImplementedError":
            notes.append(f"{where} raised {ename}")


def annotate(nb: NotebookNode, flags: list[str], notes: list[str]) -> None:
    """A first cell telling the learner (and the instructor, in the feedback) what the grader flagged and noticed."""
    if not flags and not notes:
        return
    text = ""
    if flags:
        text += "**⚠ Flagged for review by the instructor:**\n\n" + "".join(f"- {f}\n" for f in flags) + "\n"
    if notes:
        text += "**Grading notes:**\n\n" + "".join(f"- {n}\n" for n in notes)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(text.strip()))


def plan_cells(nb: NotebookNode, spec: NotebookSpec) -> list[tuple[int, SourceCell | None]]:
    """The code cells to run, in order: (index in the notebook, the source grade cell decided by the grader or None)."""
    plan = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        src = spec.cells.get(grade_id) if grade_id else None
        plan.append((i, src if src is not None and src.grade and not src.solution and src.calls else None))
    return plan


def execute(sanitized: Sanitized, spec: NotebookSpec, limits: Limits, tolerance: Tolerance, files_from: Path | None) -> Graded:
    """Run the sanitized notebook in a fresh worker, judge its grade cells, fill in the outputs, score it."""
    nb = sanitized.nb
    flags, notes = list(sanitized.flags), list(sanitized.notes)
    plan = plan_cells(nb, spec)
    payload = [{"kind": "checks"} if src else {"kind": "code", "source": nb.cells[i].source} for i, src in plan]
    workdir = tempfile.mkdtemp(prefix="autograder-")
    reason = ""
    visible_passed: set[str] = set()
    misconceptions: list[str] = []
    try:
        if files_from is not None:
            _copy_files(files_from, Path(workdir))
        session = Session(payload, limits, workdir)
        try:
            count = 0
            for step, (i, src) in enumerate(plan):
                cell = nb.cells[i]
                grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
                session.where = f"cell {i + 1}" + (f" ({grade_id})" if grade_id else "")
                if src is None:
                    msg = session.recv(limits.cell_timeout + GRACE)
                    if msg.get("op") != "cell" or msg.get("index") != step or not isinstance(msg.get("outputs"), list):
                        raise Stopped(f"the worker sent an unexpected message ({session.where})")
                    count += 1
                    cell.outputs = [from_dict(o) for o in msg["outputs"] if isinstance(o, dict)]
                    cell.execution_count = count
                    solution = bool(cell.metadata.get("nbgrader", {}).get("solution"))
                    note_errors(cell, session.where, solution, limits, notes)
                    tampered = _strings(msg.get("tampered"))
                    if tampered:
                        raise Tampered(f"{session.where} replaced {', '.join(tampered)}")
                    continue
                msg = session.recv(limits.cell_timeout + GRACE)
                if msg.get("op") != "grade" or msg.get("index") != step:
                    raise Stopped(f"the worker sent an unexpected message ({session.where})")
                outputs: list[dict[str, Any]] = []
                found: list[str] = []
                for call in src.calls or ():
                    results = grade_check_call(session, call.names, call.hidden, tolerance, found, visible_passed)
                    outputs += check_outputs(results, call.hidden)
                    misconceptions[:] = dict.fromkeys([*misconceptions, *(r.misconception for r in results if r.misconception)])
                    if not all(r.passed for r in results):
                        break  # CheckFailed ends the cell, as in a kernel
                session.send({"op": "resume"})
                reply = session.recv(limits.check_timeout + GRACE)
                if reply.get("op") != "resumed":
                    raise Stopped(f"the worker sent an unexpected message ({session.where})")
                tampered = _strings(reply.get("tampered"))
                if tampered:
                    raise Tampered(f"the notebook's code, called by the checks of {session.where}, replaced {', '.join(tampered)}")
                if found:
                    outputs.append(_flag_output(found))
                    flags.extend(f for f in found if f not in flags)
                count += 1
                cell.outputs = [from_dict(o) for o in outputs]
                cell.execution_count = count
            msg = session.recv(limits.cell_timeout + GRACE)
        except Stopped as exc:
            reason = str(exc)
            if isinstance(exc, Tampered):
                flags.append(f"tampering with the grader: {reason}; the test cells from there on score 0")
                reason = "stopped: the notebook tampered with the grader (flagged)"
            ran = {i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.get("execution_count")}
            for i, _ in plan:
                if i not in ran:
                    nb.cells[i].outputs = [from_dict(_stopped_output(reason))]
        finally:
            session.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    graded = score(nb, spec, flags, reason)
    graded.notes = notes
    graded.misconceptions = misconceptions
    annotate(nb, flags, notes)
    return graded


def score(nb: NotebookNode, spec: NotebookSpec, flags: list[str], reason: str) -> Graded:
    """nbgrader's own rules (`determine_grade`) on the executed cells; missing grade cells score 0."""
    scores = zero_scores(spec)
    comments: dict[str, str | None] = {}
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        src = spec.cells.get(grade_id) if grade_id else None
        if src is None:
            continue
        if src.grade:
            auto, max_score = nbutils.determine_grade(cell)
            scores[src.name] = (auto, max_score)
        if src.solution:
            unchanged = cell.metadata.nbgrader.get("checksum") == nbutils.compute_checksum(cell)
            comments[src.name] = "No response." if unchanged else None
        if src.grade and not src.solution and cell.cell_type == "code":
            cell.source = redact_hidden_tests(cell.source)
    return Graded(scores, comments, nb, flags, reason)


def _copy_files(src: Path, dest: Path, limit: int = 50 * 1024 * 1024) -> None:
    """The submission's other files (data the notebook reads), never its notebooks, within a size budget."""
    budget = limit
    for path in sorted(src.rglob("*")):
        if path.is_symlink() or not path.is_file() or path.suffix == ".ipynb":
            continue
        size = path.stat().st_size
        if size > budget:
            continue
        budget -= size
        target = dest / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
