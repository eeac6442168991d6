"""`python -m autograder grade`: a batch, phase after phase (each a folder of `autograder.grading`).

    discover  the course, the assignment as nbgrader stored it, who submitted, each notebook and what its grade
              depends on (discover.fingerprint)
    store     under the course's lock, with its secret: the resume journal says which notebooks are unchanged
              (skipped) and why the others are graded, one line per reason (store.resume.plan; --dry-run stops
              here); the run's one gradebook writer registers the students to grade
    grade     the rest, by an executor (grade.executors.LocalPool here, or grade.cluster's DaskPool on Dask), each
              notebook through grade.pipeline's steps; the one writer (store.writer) stores them a group at a time
    finish    late penalties and other files, for every notebook of the batch
    outputs   the summary, the class report, the score changes of a regrade and the rest of outputs.registry.OUTPUTS;
              then the regrade round is settled (store.resume.settle): the feedback of the students whose grade or
              diagnosis moved is removed, for `nbgrader generate_feedback` to make again, and the round marked reported

This module only orders the phases; each phase's work is in its folder.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from traitlets.config import Config

from .. import checks as catalog
from ..lines import one_line
from ..settings import BatchGrading, Hints, Limits, Tolerance
from .discover.assignment import load_assignment
from .discover.course import Course, named, unnamed_rows
from .discover.fingerprint import settings_values, tasks
from .finish.steps import finish
from .grade import bounded
from .grade.executors import LocalPool
from .grade.pipeline import Clock, Shared
from .grade.sandbox.client import MODE, UNSANDBOXED
from .outputs.registry import Outcome, shown, write_outputs
from .outputs.score_changes import ScoreChanges, of_round
from .store.dependencies import Digests
from .store.files import SECRET_FILE, course_lock, course_secret
from .store.gradebook import GradebookWriter
from .store.journal import Journal
from .store.resume import FORGED, Plan, moved_students, plan, settle
from .store.writer import Paths, Writer
from .types import Code, GradingError, Row

if TYPE_CHECKING:
    from .grade.cluster import Connection

EDITED_STATE = f"{FORGED}: ignored, regraded"


@dataclass
class Options:
    """What the command line asked for."""

    assignment: str
    config: Config
    course: str | None = None
    students: list[str] | None = None
    jobs: int = 0
    force: bool = False
    csv_path: str | None = None
    progress: bool = True
    unsafe_no_sandbox: bool = False  # run workers without the OS sandbox (every row says so)
    cluster: str | None = None  # a Dask scheduler (address, scheduler file or module:Cluster) grades instead of local workers
    looked_at: str = ""  # which config was read, for an error that says where the grader looked ("config: ./x.py")
    written: list[Path] = field(default_factory=list)  # filled by run(): the files it wrote besides the gradebook
    shown: list[str] = field(default_factory=list)  # filled by run(): the texts to print at the end (the summary table)
    clock: Clock | None = None  # told the time of every step, from any thread (benchmarks/profile_grade.py)
    dry_run: bool = False  # say what would be graded and why, write nothing
    tell: Callable[[str], None] | None = None  # told each line of why notebooks are graded, before they are


@dataclass
class Round:
    """A run's regrade round once its grades are stored: its score changes, and what is left to do once they are
    reported (the students whose feedback is out of date)."""

    journal: Journal
    number: int
    changes: ScoreChanges
    moved: list[str]  # students whose grade or diagnosis moved in the round


def reason_lines(plan: Plan) -> list[str]:
    """One line per reason some notebooks are graded: "12 notebooks: check `tanh_backward` changed"."""
    return [one_line(f"{n} notebook{'s' * (n != 1)}: {why}") for why, n in plan.reasons()]


def default_jobs(memory_mb: int, cpus: int | None = None, memory_bytes: int | None = None) -> int:
    """Notebooks graded at a time by default: one more than the CPUs, never more than fit in memory at their limit.

    A notebook's worker waits for the grader at every cell and grade cell, and its start waits on the kernel (its
    cgroups, its namespaces): with one notebook per CPU a core stands idle meanwhile; one more keeps it busy.
    """
    cpus = cpus or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    if memory_bytes is None:
        try:
            memory_bytes = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):  # a system that does not say: bounded by the CPUs alone
            return cpus + 1
    return max(1, min(cpus + 1, memory_bytes // (max(memory_mb, 1) * 2**20)))


def run(options: Options) -> list[Row]:
    """Grade the assignment's submissions in parallel; store each group of notebooks as it finishes; the outputs."""
    limits, tolerance = Limits(config=options.config), Tolerance(config=options.config)
    for name in tolerance.checks:  # a tolerance of a check that is not one would never be used: said before anything
        if name not in catalog.BY_NAME:
            raise GradingError(f"Tolerance.checks names {one_line(name)!r}, which is not a check")
        try:
            tolerance.for_check(name)
        except ValueError as exc:
            raise GradingError(one_line(exc)) from None
    jobs = options.jobs or BatchGrading(config=options.config).jobs or default_jobs(limits.memory_mb)
    if options.cluster and options.unsafe_no_sandbox:
        raise GradingError("--cluster grades only in the sandbox (--unsafe-no-sandbox is for one machine)")
    # on a cluster, the workers start their own sandboxes (asked at once, so they start while the course is read): the
    # driver (a login node, say) needs none
    with contextlib.ExitStack() as stack:
        cluster = None
        if options.cluster and not options.dry_run:
            from .grade.cluster import connection  # Dask is an optional dependency (the `cluster` extra)

            cluster = stack.enter_context(connection(options.cluster, options.jobs))
        course = Course.open(options.config, options.course, options.looked_at)
        stack.enter_context(course_lock(course.root))
        if not options.cluster and not options.dry_run:  # (a dry run starts no sandbox)
            stack.enter_context(MODE.using(options.unsafe_no_sandbox))
            bounded.HELPERS.warm()
            stack.callback(bounded.HELPERS.close)
        rows, regrade = grade(options, course, limits, tolerance, jobs, cluster)
        if regrade is None:  # --dry-run: nothing was written
            return rows
        rows.sort(key=lambda r: (r.student, r.notebook))
        if options.unsafe_no_sandbox:
            for row in rows:
                row.add(Code.UNSANDBOXED, UNSANDBOXED)
        for row in rows:
            validate(row)
        outcome = Outcome(course.root, options.assignment, rows, options.csv_path, options.students, changes=regrade.changes)
        options.shown = shown(outcome)
        try:
            write_outputs(outcome)  # (a report that could not be written leaves its round open: the next run writes it)
            if regrade.changes.fresh:  # the report is written: the round is done, once its stale feedback is gone
                for student in regrade.moved:
                    shutil.rmtree(course.feedback(student, options.assignment), ignore_errors=True)
                if regrade.moved:
                    options.shown.append(f"feedback to make again (nbgrader generate_feedback {options.assignment}): "
                                         f"grade or diagnosis moved for {', '.join(one_line(s) for s in regrade.moved)}")
                settle(regrade.journal, options.assignment, regrade.number)
        finally:
            options.written += outcome.written
            regrade.journal.close()
    return rows


def grade(options: Options, course: Course, limits: Limits, tolerance: Tolerance, jobs: int,
          cluster: Connection | None) -> tuple[list[Row], Round | None]:
    """Under the course lock: find what needs grading and say why, grade it (locally or on `cluster`), store it,
    finish; the rows and the regrade round (None for --dry-run, which stops once it has said what it would grade)."""
    # discover
    try:
        spec = load_assignment(course.coursedir.db_url, options.assignment)
    except GradingError as exc:
        raise GradingError(f"{exc} (course folder {course.root}; {options.looked_at or 'no config read'})") from None
    hints = Hints(config=options.config).level
    settings = settings_values(limits, options.unsafe_no_sandbox, hints)
    digests = Digests(tolerance)
    students = course.students(options.assignment, options.students)  # before the secret and journal: a refusal writes nothing
    if not students:
        raise GradingError(f"no submissions of {options.assignment!r} in {course.root / course.coursedir.submitted_directory}")
    # store: what it holds already, and why the rest is graded
    if options.dry_run and not (course.root / SECRET_FILE).exists():
        secret = b""  # never graded: no secret is made, and no record is there to read
    else:
        secret = course_secret(course.root)
    journal = Journal(course.root, secret)
    rows = unnamed_rows(students, {name: nb.max_score for name, nb in spec.notebooks.items()})
    autograded = lambda student: course.autograded(student, options.assignment)  # noqa: E731
    round_open = any(k.startswith(f"{options.assignment}/") and not r.settled for k, r in journal.records.items())
    todo_plan = plan(tasks(course, spec, named(students), settings), journal, options.assignment, autograded, digests,
                     options.force)
    skipped, todo = todo_plan.skipped, todo_plan.todo
    for line in reason_lines(todo_plan):
        if options.tell is not None:
            options.tell(line)
    if options.dry_run:
        if options.tell is not None:
            for task in todo:
                options.tell(f"would grade {one_line(task.item.label)}: {'; '.join(todo_plan.why[task.item.label])}")
            options.tell(f"dry run: {len(todo)} notebook{'s' * (len(todo) != 1)} would be graded, {len(skipped)} "
                         "unchanged; nothing written")
        return rows + skipped, None
    rows += skipped
    if not options.cluster and todo:
        MODE.ready()  # the reading above overlapped the sandbox's start; the gradebook is written only now
    elif not options.cluster:  # nothing to grade: the sandbox warmed for nothing; stopped now, not after `finish`
        MODE.pool.close()
    with GradebookWriter.open(course.coursedir.db_url, course.coursedir.course_id, options.assignment) as gradebook:
        gradebook.register_students([t.item.student for t in todo])
        # grade, stored by the one writer
        shared = Shared(spec.notebooks, limits, tolerance, secret, options.clock, hints)
        writer = Writer(gradebook, spec, Paths(autograded, course.release(options.assignment)), journal, options.clock,
                        todo_plan, digests)
        try:
            if cluster is not None:
                from .grade.cluster import dask_pool

                if todo:  # (nothing to grade: the workers are not waited for)
                    with dask_pool(cluster, shared, options.assignment) as dask:
                        rows += writer.run(todo, dask, options.progress, desc=f"grading {options.assignment} on the cluster")
            else:
                pool = LocalPool(shared, jobs)
                try:
                    rows += writer.run(todo, pool, options.progress)
                finally:
                    pool.close()
        finally:
            writer.close()
            journal.close()
        for row in rows:  # a record the grader did not write (its HMAC fails) was ignored: say so
            if Journal.key(options.assignment, row.student, row.notebook) in journal.rejected:
                row.add(Code.EDITED_STATE, EDITED_STATE)
        # finish
        finish(course, options.assignment, [r for r in rows if not r.has(Code.UNNAMED)], gradebook)
    fresh = round_open or any(before is not None for before in todo_plan.before.values())
    changes = of_round(journal.records, options.assignment, fresh)
    return rows, Round(journal, todo_plan.round, changes, moved_students(journal, options.assignment, todo_plan.round))


def validate(row: Row) -> None:
    """Make every text of the row one line with nothing hidden (`one_line`), which each writer can encode."""
    row.student, row.notebook = one_line(row.student), one_line(row.notebook)
    row.reasons = [type(r)(r.code, one_line(r.text)) for r in row.reasons]
    row.flags = [one_line(f) for f in dict.fromkeys(row.flags)]
    row.misconceptions = [one_line(m) for m in row.misconceptions]
