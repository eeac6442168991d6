"""The one writer: keeps an executor fed, and stores what it hands back, a group at a time, in this thread alone.

A group is every result in within `GROUP_SECONDS` of the first. Storing it:
1. its autograded notebooks are written to autograded/ by a small pool of threads (each file atomically; their
   bytes were made where the notebook was graded), meanwhile
2. its gradebook rows are written in one transaction of bulk statements (`gradebook.GradebookWriter`, the run's one
   writer of the gradebook) and committed;
3. once both are done, its resume records are appended to the journal in one write and one fsync: each says what
   the grade depended on (the checks that ran, digested: `dependencies.Digests`), its grade cells, and, for a
   regrade, its grade cells as they were when the regrade began (`resume.Plan.before`, for the score-change report).

A kill before 2's commit leaves no row and no record of the group (regraded next time); between the commit and 3,
only the records are missing (regraded, the same rows updated in place: never a duplicate); a notebook file
written but not recorded, or recorded but not written, has another hash than its record and is regraded. If the
group's transaction fails, each notebook is stored alone, so that only the one that fails says why.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from concurrent.futures import ALL_COMPLETED, FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from ...lines import one_line
from ..discover.assignment import AssignmentSpec
from ..discover.submission import Submission, submission_time
from ..grade import runner
from ..grade.bounded import notebook_file
from ..grade.executors import Executor
from ..grade.pipeline import Clock, not_graded
from ..grade.sandbox.client import UNSANDBOXED
from ..pages.safe_html import safe_notebook
from ..types import CellResult, Code, Graded, Reason, Record, Result, Row, Status, Task
from .dependencies import Digests
from .files import atomic_write
from .gradebook import Entry, GradebookWriter, flag_box
from .journal import Journal
from .resume import Plan, autograded_digest

GROUP_SECONDS = 0.5  # how long the writer waits for more finished notebooks, to store them in one transaction
FILE_THREADS = 2  # threads writing autograded notebooks while the gradebook transaction runs


@dataclass
class Paths:
    """Where the writer puts one student's autograded notebooks, and the released notebooks (for not-graded ones)."""

    autograded: Callable[[str], Path]  # student -> autograded/<student>/<assignment>/
    release: Path  # release/<assignment>/


class Writer:
    """Stores graded notebooks: autograded files, gradebook rows and resume records (see the module docstring)."""

    def __init__(self, gradebook: GradebookWriter, spec: AssignmentSpec, paths: Paths, journal: Journal,
                 clock: Clock | None = None, plan: Plan | None = None, digests: Digests | None = None) -> None:
        self.gradebook, self.assignment, self.spec = gradebook, spec.name, spec
        self.paths, self.journal, self.clock = paths, journal, clock
        self.plan, self.digests = plan, digests  # the regrade round and the cells before; the checks' digests
        self.files = ThreadPoolExecutor(max_workers=FILE_THREADS, thread_name_prefix="autograded-files")
        self.groups: list[int] = []  # notebooks stored per transaction

    def run(self, todo: list[Task], executor: Executor, progress: bool = True, desc: str = "") -> list[Row]:
        """Grade `todo` with `executor`, storing each group of results as it comes in; the rows, in arrival order."""
        from tqdm import tqdm

        rows: list[Row] = []
        if not todo:
            return rows
        bar = tqdm(total=len(todo), unit="nb", desc=desc or f"grading {self.assignment}", file=sys.stderr,
                   disable=not progress, dynamic_ncols=True)
        pending = iter(todo)
        flying: dict[Future[Result], Task] = {}

        def fill() -> None:
            while len(flying) < max(1, executor.window()):
                task = next(pending, None)
                if task is None:
                    return
                try:
                    future = executor.submit(task)
                except OSError:  # the executor is gone (a Dask scheduler lost): nothing of it is stored as a grade
                    raise
                except Exception as exc:  # a grader bug starting one notebook must not lose the rest of the batch
                    future = Future()
                    future.set_result(Result(task, None, grader_error(exc)))
                flying[future] = task

        try:
            fill()
            while flying:
                done, _ = wait(flying, return_when=FIRST_COMPLETED)
                if flying.keys() - done:  # a moment for more to finish: one commit and one append for all
                    done |= wait(flying.keys() - done, timeout=GROUP_SECONDS, return_when=ALL_COMPLETED)[0]
                group = []
                for future in done:
                    task = flying.pop(future)
                    try:
                        group.append(future.result())
                    except Exception as exc:  # a grader bug must not lose the rest of the batch
                        group.append(Result(task, None, grader_error(exc)))
                fill()  # the executor gets its next notebooks before this thread stores: no worker waits for it
                rows += self.store(group)
                bar.update(len(group))
        except BaseException:
            executor.stop()
            runner.kill_all()
            raise
        finally:
            bar.close()
        return rows

    def store(self, group: list[Result]) -> list[Row]:
        """Store one group (see the module docstring); its rows."""
        bulk = self.gradebook
        t0 = time.perf_counter()
        settled = [(result, *self._settle(result)) for result in group]
        storing = [(result, task, graded, row) for result, task, graded, row in settled if graded is not None]
        writes = [self.files.submit(self._write_file, task, graded) for _, task, graded, _ in storing]
        entries = [self._entry(task, graded, result) for result, task, graded, _ in storing]
        t1 = time.perf_counter()
        try:
            bulk.write(entries)
            bulk.commit()
            committed = [True] * len(entries)
        except Exception:
            bulk.rollback()
            committed = []
            for entry, (_, _, _, row) in zip(entries, storing):
                try:
                    bulk.write([entry])
                    bulk.commit()
                    committed.append(True)
                except Exception as exc:  # one notebook's storage failing must not lose the rest of the batch
                    bulk.rollback()
                    committed.append(False)
                    row.status, row.score = Status.NOT_GRADED, 0.0
                    row.reasons = [Reason(Code.STORE_FAILED, f"could not store the grade ({_one_line(exc)})")]
        t2 = time.perf_counter()
        records = []
        for write, ok, (_, task, graded, row) in zip(writes, committed, storing):
            digest = write.result()
            if ok:  # no record for a notebook that could not be stored: the next run grades it again
                records.append((self._key(task), self._record(task, graded, row, digest)))
        t3 = time.perf_counter()
        self.journal.append(records)
        self.groups.append(len(group))
        if self.clock is not None:  # each notebook of the group charged its share
            for result in group:
                for stage, seconds in (("store: rows", t1 - t0), ("store: gradebook", t2 - t1),
                                       ("store: files (waited for)", t3 - t2), ("store: journal", time.perf_counter() - t3)):
                    self.clock(result.task.item.notebook, stage, seconds / len(group))
        return [row for _, _, _, row in settled]

    def _key(self, task: Task) -> str:
        return Journal.key(self.assignment, task.item.student, task.item.notebook)

    def _settle(self, result: Result) -> tuple[Task, Graded | None, Row]:
        """The result as what to store (None: nothing, the cluster lost it) and its row."""
        task, item = result.task, result.task.item
        nb_spec = self.spec.notebooks[item.notebook]
        graded = result.graded
        if graded is None:
            why = result.why or Reason(Code.GRADER_ERROR, "grader error: no result")
            if why.code is Code.CLUSTER_LOST:  # nothing is stored, so the next run grades it again; the row says so
                return task, None, Row(item.student, item.notebook, 0.0, nb_spec.max_score, Status.NOT_GRADED,
                                       reasons=[why])
            graded = not_graded(self.paths.release / f"{item.notebook}.ipynb", nb_spec, why, result.flags)
        graded.flags = [one_line(f) for f in dict.fromkeys(graded.flags)]
        graded.reason, graded.notes = one_line(graded.reason), [one_line(n) for n in graded.notes]
        untouched = bool(graded.comments) and all(c == runner.NO_RESPONSE for c in graded.comments.values())
        row = Row(item.student, item.notebook, graded.score, graded.max_score,
                  Status.GRADED if graded.ran else Status.NOT_GRADED, graded.flags, reasons_of(graded),
                  graded.misconceptions, attempted=graded.ran and not untouched)
        return task, graded, row

    def _entry(self, task: Task, graded: Graded, result: Result) -> Entry:
        item = task.item
        timestamp = result.timestamp
        if result.graded is None and timestamp is None:  # not read at all (a grader error): read it here
            timestamp = submission_time(Submission.scan(item.path.parent)).when
        return Entry(item.student, item.notebook, graded, timestamp, flag_box(graded.flags, self.journal.get(self._key(task))))

    def _write_file(self, task: Task, graded: Graded) -> str | None:
        """The autograded notebook (in a file thread); its SHA-256 for the record."""
        path = self.paths.autograded(task.item.student) / f"{task.item.notebook}.ipynb"
        if graded.data is None and graded.nb is not None:  # graded here (not_graded): serialised here
            graded.data, graded.digest = notebook_file(safe_notebook(graded.nb))
        if graded.data is None:
            return autograded_digest(path)
        atomic_write(path, graded.data, durable=False)  # not fsynced: after a power cut another hash, regraded
        return graded.digest

    def _record(self, task: Task, graded: Graded, row: Row, digest: str | None) -> Record:
        depends = task.depends
        if depends is not None and self.digests is not None:  # the checks that ran, as this run judged them
            depends = dataclasses.replace(depends, judging=self.digests.judging() if graded.checks else "",
                                          checks={name: self.digests.check(name) for name in graded.checks})
        cells = {name: CellResult(points, most, list(graded.verdicts.get(name, [])))
                 for name, (points, most) in graded.scores.items()}
        before = self.plan.before.get(self._key(task)) if self.plan is not None else None
        return Record(task.fingerprint, row.score, row.max_score, list(row.flags), list(row.reasons),
                      list(row.misconceptions)[:100], row.attempted, digest, depends, cells, before,
                      self.plan.round if before is not None and self.plan is not None else 0, before is None)

    def close(self) -> None:
        """Stop the file threads."""
        self.files.shutdown()


def reasons_of(graded: Graded) -> list[Reason]:
    """A graded notebook's reasons, each of its kind."""
    reasons = []
    if graded.reason:
        reasons.append(Reason(graded.cause or (Code.STOPPED if graded.ran else Code.COULD_NOT_RUN), graded.reason))
    for note in graded.notes:
        reasons.append(Reason(Code.UNSANDBOXED if note == UNSANDBOXED else Code.NOTE, note))
    return list(dict.fromkeys(reasons))


def grader_error(exc: BaseException) -> Reason:
    """The reason of a notebook a grader bug stopped (graded 0; the batch goes on)."""
    return Reason(Code.GRADER_ERROR, one_line(f"grader error {type(exc).__name__}: {exc}"))


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {one_line(exc)[:200]}"
