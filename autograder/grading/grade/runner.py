"""The grader side of one notebook: start a worker, feed it cells, judge its observations, build the graded notebook."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode, from_dict
from nbgrader import utils as nbutils

from ... import notebook
from ...lines import one_line
from ...settings import EXIT_STATUS_TIMEOUT, GRACE, MAX_AUDITS, REQUEST_TIMEOUT, RESERVE, VERDICT_CHARS, Limits, Tolerance
from ..discover.assignment import NotebookSpec, SourceCell
from ..pages.hidden_tests import redact_hidden_tests
from ..pages.safe_html import escape_markdown
from ..types import Graded, Verdict
from . import channel
from .bounded import written_size
from .channel import Violation
from .judge import Unanswered, flag_output, judge_cell, stopped_output
from .sandbox import frames
from .sandbox.client import MODE, UNSANDBOXED, SandboxFailed, Unavailable, submission_files
from .sanitize import Sanitized

NO_RESPONSE = "No response."  # nbgrader's comment on a solution cell left as released


class Stopped(Unanswered):
    """The worker stopped answering: died, timed out, or sent garbage; the message is the reason."""


class Tampered(Stopped):
    """The notebook replaced part of the grader's side of the worker; grading stops there (flagged)."""


_LIVE: set[Session] = set()
_LIVE_LOCK = threading.Lock()


def kill_all() -> None:
    """Kill every running worker (the grader is being interrupted)."""
    with _LIVE_LOCK:
        sessions = list(_LIVE)
    for s in sessions:
        s.kill()


def zero_scores(spec: NotebookSpec) -> dict[str, tuple[float | None, float]]:
    """Every grade cell at 0: what an ungradable notebook records."""
    return {c.name: (0.0, c.points or 0.0) for c in spec.grade_cells}


class Session:
    """The conversation with one worker process."""

    def __init__(self, cells: list[dict[str, str]], limits: Limits, files: dict[str, str]) -> None:
        self.limits = limits
        self.reader = channel.Reader(limits.output_bytes)
        self.audits: list[str] = []  # audited events of learner code, each with where the grader was
        try:
            self.worker = MODE.launch(channel.plan(cells, limits), files)
        except (SandboxFailed, Unavailable) as exc:  # this notebook scores 0 with why; the batch goes on
            raise Stopped(f"the grading sandbox could not start a worker: {exc}") from None
        self.channel = self.worker.channel
        with _LIVE_LOCK:
            _LIVE.add(self)
        self.deadline = time.monotonic() + limits.notebook_timeout
        self.where = "before the first cell"

    def recv(self, timeout: float) -> channel.Message:
        """The worker's next message, checked by the channel; audit reports on the way are kept. Stopped or Violation."""
        wait_until = min(time.monotonic() + timeout, self.deadline)
        while True:
            message = self.reader.read(self._recv_bytes(wait_until, timeout))
            if not isinstance(message, channel.Audit):
                return message
            if len(self.audits) >= MAX_AUDITS:
                raise Violation(f"sent more than {MAX_AUDITS} audit reports")
            what = message.event if message.detail == message.event else f"{message.event} ({message.detail})"
            self.audits.append(f"{what} from {message.where}, {self.where}")

    def _recv_bytes(self, wait_until: float, timeout: float) -> bytes:
        """One whole frame before `wait_until` (the step's deadline, never past the notebook's): Stopped at the
        deadline when nothing came, Violation when the worker stopped mid-frame or announced too much."""
        limit = channel.max_message(self.limits.output_bytes)
        try:
            return self.channel.recv(wait_until, limit)
        except frames.Silent:
            self.kill()
            if wait_until >= self.deadline:
                raise Stopped(f"the notebook ran past its time limit of {self.limits.notebook_timeout:g} s ({self.where})") from None
            raise Stopped(f"no answer within {timeout - GRACE:g} s ({self.where}): an infinite loop that ignores the time limit?") from None
        except frames.Garbled as exc:
            self.kill()
            raise Violation(str(exc)) from None
        except (EOFError, OSError) as exc:
            raise Stopped(self._death(exc)) from None

    def send(self, message: dict[str, Any]) -> None:
        """A request to the worker (built by `channel`), written before the current step's deadline."""
        try:
            self.channel.send(channel.encode(message), min(time.monotonic() + REQUEST_TIMEOUT, self.deadline))
        except TimeoutError:
            self.kill()
            raise Stopped(f"the worker did not read the grader's request ({self.where})") from None
        except (OSError, ValueError) as exc:
            raise Stopped(self._death(exc)) from None

    def _death(self, exc: BaseException) -> str:
        code = self.worker.exitcode(EXIT_STATUS_TIMEOUT)
        if code is None:
            self.kill()
            return f"the worker closed its connection ({self.where})"
        if self.worker.out_of_memory():
            return (f"the notebook ran out of memory: it held more than its limit of {self.limits.memory_mb} MiB, "
                    f"files in its own /tmp, /dev/shm and working folder included ({self.where})")
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            hint = {"SIGSEGV": " (a segfault)", "SIGXCPU": " (CPU time limit)", "SIGKILL": " (out of memory?)"}.get(name, "")
            return f"the worker process was killed by {name}{hint} ({self.where})"
        return f"the notebook's code ended the worker process (exit status {code}) ({self.where})"

    def kill(self) -> None:
        """SIGKILL the worker and every process the notebook started (in the sandbox: its whole PID namespace)."""
        self.worker.kill()

    def close(self) -> None:
        self.worker.close()
        with _LIVE_LOCK:
            _LIVE.discard(self)


class WorkerObserver:
    """The judge's view of one worker: every request built by the channel, every reply checked by it."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.suspects: list[str] = []  # learner objects caught lying to the probes

    def _reply(self, kind: type) -> Any:
        message = self.session.recv(self.session.limits.check_timeout + GRACE)
        if not isinstance(message, kind):
            raise Violation(f"sent {_what(message)} where {kind.__name__.lower()} was due")
        return message

    def missing(self, check: str) -> list[str]:
        """The check's targets the notebook lacks."""
        self.session.send(channel.missing_request(check))
        return self._reply(channel.Missing).targets

    def observe(self, check: str, case: dict[str, Any]) -> dict[str, Any]:
        """The raw observations of one case."""
        self.session.send(channel.observe_request(check, case))
        reply = self._reply(channel.Observation)
        for text in reply.suspects[:3]:
            flag = f"lying object in check {check}: {text[:300]}"
            if flag not in self.suspects:
                self.suspects.append(flag)
        return reply.observation


OUTPUTS_DROPPED = "outputs dropped: the notebook's outputs passed"
LIMIT_ERRORS = {
    "CellTimeout": "stopped at the time limit of {cell_timeout:g} s per cell",
    "MemoryError": "ran out of memory (limit {memory_mb} MiB)",
    "OutputLimitExceeded": "printed more than {output_bytes} bytes of output; the cell was stopped and the rest dropped",
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


def first_line(message: str) -> str:
    """A verdict's first non-empty line, one line and bounded: what a record and the score-change report keep."""
    line = next((ln for ln in str(message).splitlines() if ln.strip()), "")
    line = one_line(line)
    return line if len(line) <= VERDICT_CHARS else line[: VERDICT_CHARS - 1] + "…"


def annotate(nb: NotebookNode, flags: list[str], notes: list[str]) -> None:
    """A first cell telling the learner (and the instructor, in the feedback) what the grader flagged and noticed."""
    if not flags and not notes:
        return
    text = ""  # the flags and notes quote learner code (exception names, objects' reprs): escaped, never markup
    if flags:
        text += "**⚠ Flagged for review by the instructor:**\n\n" + "".join(f"- {escape_markdown(f)}\n" for f in flags) + "\n"
    if notes:
        text += "**Grading notes:**\n\n" + "".join(f"- {escape_markdown(n)}\n" for n in notes)
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


def execute(sanitized: Sanitized, spec: NotebookSpec, limits: Limits, tolerance: Tolerance,
            files_from: Path | dict[str, str] | None, secret: bytes | None = None,
            clock: Callable[[str, float], None] | None = None) -> Graded:
    """Run the sanitized notebook in a fresh worker, judge its grade cells here, fill in the outputs, score it.

    `files_from` is the submission's folder, or its other files already read (as `submission_files` gives
    them: how a cluster worker gets them). `secret` (the course's) draws the hidden checks' inputs; None keeps the
    package's, as plain nbgrader has them. `clock` (stage, seconds), when given, is told how long the worker took to
    start and the judge to judge.
    """
    nb = sanitized.nb
    flags, notes = list(sanitized.flags), list(sanitized.notes)
    plan = plan_cells(nb, spec)
    payload = [{"kind": "checks"} if src else {"kind": "code", "source": nb.cells[i].source} for i, src in plan]
    reason = ""
    misconceptions: list[str] = []
    ran: list[str] = []
    verdicts: dict[str, list[Verdict]] = {}
    if MODE.unsafe:
        notes.append(UNSANDBOXED)
    try:
        files = files_from if isinstance(files_from, dict) else submission_files(files_from)
        t0 = time.perf_counter()
        session = Session(payload, limits, files)
        if clock is not None:
            clock("worker start", time.perf_counter() - t0)
        try:
            _converse(session, nb, plan, limits, tolerance, secret, flags, notes, misconceptions, clock, ran, verdicts)
        except Stopped as exc:
            reason = str(exc)
            if isinstance(exc, Tampered):
                flags.append(f"tampering with the grader: {reason}; the test cells from there on score 0")
                reason = "stopped: the notebook tampered with the grader (flagged)"
            _stop_rest(nb, plan, reason)
        except Violation as exc:
            flags.append(f"broke the grading protocol: the worker {exc} ({session.where}); the test cells from there on score 0")
            reason = "stopped: the notebook's process broke the grading protocol (flagged)"
            session.kill()
            _stop_rest(nb, plan, reason)
        finally:
            session.close()
            flags.extend(f"introspection by learner code: {a}" for a in session.audits)
    except Stopped as exc:  # no worker at all: the sandbox could not start one
        reason = str(exc)
        _stop_rest(nb, plan, reason)
    graded = score(nb, spec, flags, reason)
    graded.notes = notes
    graded.misconceptions = misconceptions
    graded.checks, graded.verdicts = ran, verdicts
    annotate(nb, flags, notes)
    return graded


def _what(message: channel.Message) -> str:
    """A message named in a few words (its op, and its cell index if it has one) for the evidence."""
    index = getattr(message, "index", None)
    return type(message).__name__.lower() + (f" {index}" if index is not None else "")


def _stop_rest(nb: NotebookNode, plan: list[tuple[int, SourceCell | None]], reason: str) -> None:
    """Every cell that did not run gets the reason as its error output (its grade cells score 0)."""
    ran = {i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.get("execution_count")}
    for i, _ in plan:
        if i not in ran:
            nb.cells[i].outputs = [from_dict(stopped_output(reason))]


def _converse(session: Session, nb: NotebookNode, plan: list[tuple[int, SourceCell | None]], limits: Limits,
              tolerance: Tolerance, secret: bytes | None, flags: list[str], notes: list[str],
              misconceptions: list[str], clock: Callable[[str, float], None] | None = None,
              ran: list[str] | None = None, verdicts: dict[str, list[Verdict]] | None = None) -> None:
    """Drive the worker through the plan: outputs of code cells, judged checks of grade cells, then done; `ran` is
    told each check that starts, `verdicts` each grade cell's verdicts."""
    observer = WorkerObserver(session)
    shown = notebook.Shown()  # each diagnosis in full once per notebook, as the learner's kernel shows it
    count = output_bytes = 0
    for step, (i, src) in enumerate(plan):
        cell = nb.cells[i]
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        session.where = f"cell {i + 1}" + (f" ({grade_id})" if grade_id else "")
        msg = session.recv(limits.cell_timeout + GRACE)
        due = channel.Cell if src is None else channel.Grade
        if not isinstance(msg, due) or msg.index != step:
            raise Violation(f"sent {_what(msg)} where {due.__name__.lower()} {step} was due")
        count += 1
        if src is None:
            cell.outputs = msg.outputs
            cell.execution_count = count
            note_errors(cell, session.where, bool(cell.metadata.get("nbgrader", {}).get("solution")), limits, notes)
            # the total counts outputs as the autograded file holds them (indented, text in lines: up to ~6x their
            # compact JSON); once past it, a cell's outputs are dropped uncounted. (Held: one cell's outputs at most,
            # never the notebook's; RESERVE: the honest worker's own notes and errors)
            if output_bytes <= limits.notebook_output_bytes + RESERVE and msg.outputs:
                output_bytes += written_size(msg.outputs)
            over = output_bytes > limits.notebook_output_bytes + RESERVE and msg.outputs
            dropped = channel.NOTEBOOK_NOTE.format(limit=limits.notebook_output_bytes)
            if (over or any(dropped in str(o.get("text", "")) for o in msg.outputs)) and not any(
                    n.startswith(OUTPUTS_DROPPED) for n in notes):
                notes.append(f"{OUTPUTS_DROPPED} {limits.notebook_output_bytes} bytes, from {session.where} on")
            if over:
                cell.outputs = [from_dict({"output_type": "stream", "name": "stdout",
                                           "text": channel.NOTEBOOK_NOTE.format(limit=limits.notebook_output_bytes) + "\n"})]
            if msg.tampered:
                raise Tampered(f"{session.where} replaced {', '.join(msg.tampered)}")
            continue
        t0 = time.perf_counter()
        verdict = judge_cell(observer, src.calls or (), tolerance, secret, shown, ran)
        if verdicts is not None:
            verdicts[src.name] = [Verdict(r.name, r.status, "" if r.passed else first_line(r.message))  # (a pass
                                  for r in verdict.results]  # says its check's description: no need to keep it)
        if clock is not None:
            clock("judge (probes included)", time.perf_counter() - t0)
        misconceptions[:] = dict.fromkeys([*misconceptions, *(r.misconception for r in verdict.results if r.misconception)])
        session.send(channel.resume_request())
        reply = session.recv(limits.check_timeout + GRACE)
        if not isinstance(reply, channel.Resumed):
            raise Violation(f"sent {_what(reply)} where resumed was due")
        if reply.tampered:
            raise Tampered(f"the notebook's code, called by the checks of {session.where}, replaced {', '.join(reply.tampered)}")
        found = [f for f in [*verdict.flags, *observer.suspects] if f not in flags]
        observer.suspects.clear()
        outputs = verdict.outputs + ([flag_output(found)] if found else [])
        flags.extend(found)
        cell.outputs = [from_dict(o) for o in outputs]
        cell.execution_count = count
    done = session.recv(limits.cell_timeout + GRACE)
    if not isinstance(done, channel.Done):
        raise Violation(f"sent {_what(done)} where done was due")


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
            comments[src.name] = NO_RESPONSE if unchanged else None
        if src.grade and not src.solution and cell.cell_type == "code":
            cell.source = redact_hidden_tests(cell.source)
    return Graded(scores, comments, nb, flags, reason)
