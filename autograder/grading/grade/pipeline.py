"""One notebook's way through the grader, as a list of steps you can read (nbgrader's preprocessors' shape).

    READ   = [read_submission]                    where the course folder is (the driver of a cluster)
    GRADE  = [parse_notebook, sanitize_notebook,  where the sandbox is (a local thread, or a Dask worker)
              execute_and_judge, mark_not_run, render_notebook]
    STEPS  = READ + GRADE

Each step takes the notebook's `Work` and the assignment's `Shared` settings and fills in one field of the work.
A step raises `Unreadable` when the notebook cannot be graded; `grade` turns that into the task's `Result`.
Every step is timed through `Shared.clock` when one is given (benchmarks/profile_grade.py), nothing patched.
After the steps, the one writer (`store.writer.Writer`) stores the result.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode

from ...checks.messages import hint_level
from ...settings import Limits, Tolerance
from ..discover.assignment import NotebookSpec
from ..discover.submission import Refused, Submission, Unreadable, submission_time
from ..pages.safe_html import escape_markdown
from ..types import Code, Graded, Item, Reason, Result, Submitted, Task
from . import bounded, runner
from .judge import stopped_output
from .sanitize import Sanitized, notebook_bytes, sanitize

Clock = Callable[[str, str, float], None]  # (notebook, stage, seconds): a profiler's, see benchmarks/profile_grade.py


@dataclass
class Shared:
    """What every notebook of an assignment is graded with (sent once to each cluster worker, not per task)."""

    notebooks: dict[str, NotebookSpec]
    limits: Limits
    tolerance: Tolerance
    secret: bytes | None = None  # the course's: draws the hidden checks' inputs
    clock: Clock | None = field(default=None, compare=False)  # told each step's time, from any thread
    hints: str = "misconception"  # settings.Hints.level: what a diagnosis in the feedback may show

    def others(self, notebook: str) -> dict[str, str]:
        """grade_id -> notebook, for the cells of the assignment's other notebooks (sanitize names a moved cell)."""
        return {name: nb for nb, s in self.notebooks.items() if nb != notebook for name in s.cells}

    def __getstate__(self) -> dict[str, Any]:
        # the settings as plain values: the course's config (a database password, say) never travels; nor the clock
        plain = {name: getattr(self.limits, name) for name in self.limits.trait_names(config=True)}
        tol = {name: getattr(self.tolerance, name) for name in self.tolerance.trait_names(config=True)}
        return {"notebooks": self.notebooks, "limits": plain, "tolerance": tol, "secret": self.secret,
                "hints": self.hints}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.notebooks, self.secret, self.clock, self.hints = state["notebooks"], state["secret"], None, state["hints"]
        self.limits, self.tolerance = Limits(**state["limits"]), Tolerance(**state["tolerance"])


@dataclass
class Work:
    """One notebook part-way through the steps: each step fills in the next field."""

    item: Item
    submitted: Submitted | None = None  # read_submission
    timestamp: str | None = None  # read_submission: the submission's time
    nb: NotebookNode | None = None  # parse_notebook
    sanitized: Sanitized | None = None  # sanitize_notebook
    graded: Graded | None = None  # execute_and_judge, then mark_not_run and render_notebook


def read_submission(work: Work, shared: Shared) -> None:
    """Read the notebook and its submission's other files through `Submission` (never a link, FIFO or device)."""
    submission = Submission.scan(work.item.path.parent)
    work.timestamp = submission_time(submission).when  # `finish` flags a time it cannot read
    data = notebook_bytes(submission, work.item.notebook, shared.limits.notebook_mb * 2**20)
    files = submission.other_files()
    others = {rel for rel in submission.refused if not rel.endswith(".ipynb")}
    work.submitted = Submitted(data, files, submission.flags(others))


def parse_notebook(work: Work, shared: Shared) -> None:
    """The notebook's bytes as a notebook, read in a bounded helper (Unreadable when they are not one; Refused past a
    bound on its shape or the time to read it)."""
    assert work.submitted is not None
    work.nb = bounded.read(work.submitted.data, shared.limits)


def sanitize_notebook(work: Work, shared: Shared) -> None:
    """nbgrader's sanitize steps: outputs cleared, test cells restored, metadata checked; refused files flagged first."""
    assert work.nb is not None and work.submitted is not None
    work.sanitized = sanitize(work.nb, shared.notebooks[work.item.notebook], shared.others(work.item.notebook))
    work.sanitized.flags[:0] = list(work.submitted.flags)


def execute_and_judge(work: Work, shared: Shared) -> None:
    """Run the cells in a sandboxed worker; judge each grade cell here, outside the sandbox; score as nbgrader does."""
    assert work.sanitized is not None and work.submitted is not None
    clock, name = shared.clock, work.item.notebook
    with hint_level(shared.hints):  # the grade cells are judged in this thread, inside runner.execute
        work.graded = runner.execute(work.sanitized, shared.notebooks[name], shared.limits, shared.tolerance,
                                     work.submitted.files, shared.secret,
                                     None if clock is None else lambda stage, seconds: clock(name, stage, seconds))


def mark_not_run(work: Work, shared: Shared) -> None:
    """A notebook none of whose cells ran is not graded (its reason says so), whatever its score."""
    graded = work.graded
    assert graded is not None
    if graded.reason and not any(c.get("execution_count") for c in graded.nb.cells if c.cell_type == "code"):
        graded.reason, graded.ran, graded.cause = f"could not run: {graded.reason}", False, Code.COULD_NOT_RUN


def render_notebook(work: Work, shared: Shared) -> None:
    """The autograded notebook's file, made inert for a browser and serialised in a bounded helper (not on the writer's
    path); a cell it could not make safe in time is shown as plain text, and flagged."""
    graded = work.graded
    assert graded is not None
    if graded.nb is not None:
        graded.data, graded.digest, flags = bounded.render(graded.nb, shared.limits)
        graded.nb = None  # its file is what is stored (the notebook object, not made safe, is not kept)
        graded.flags.extend(flags)


Step = Callable[[Work, Shared], None]
READ: list[Step] = [read_submission]
GRADE: list[Step] = [parse_notebook, sanitize_notebook, execute_and_judge, mark_not_run, render_notebook]
STEPS: list[Step] = READ + GRADE


def run_steps(steps: list[Step], work: Work, shared: Shared) -> Work:
    """Run the steps in order, each timed through the clock when there is one."""
    for step in steps:
        t0 = time.perf_counter()
        try:
            step(work, shared)
        finally:
            if shared.clock is not None:
                shared.clock(work.item.notebook, step.__name__, time.perf_counter() - t0)
    return work


def grade(task: Task, shared: Shared, steps: list[Step] = STEPS, work: Work | None = None) -> Result:
    """The task through `steps` (from `work`, when part of them already ran): its result, unreadable ones included."""
    work = work or Work(task.item)
    try:
        run_steps(steps, work, shared)
    except Unreadable as exc:
        return unreadable(task, exc, work.timestamp)
    return Result(task, work.graded, timestamp=work.timestamp)


def unreadable(task: Task, exc: Unreadable, timestamp: str | None = None) -> Result:
    """The result of a notebook that cannot be read: why, and FLAGGED when it was refused."""
    return Result(task, None, Reason(Code.UNREADABLE, str(exc)), [str(exc)] if isinstance(exc, Refused) else [], timestamp)


def not_graded(release_nb: Path, spec: NotebookSpec, why: Reason, flags: list[str] | None = None) -> Graded:
    """Zero for every grade cell, the reason on every solution cell and atop the notebook shown as feedback."""
    try:
        nb = sanitize(nbformat.read(release_nb, as_version=4), spec).nb
    except Exception:
        nb = nbformat.v4.new_notebook()
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(f"**This notebook could not be graded: {escape_markdown(why.text)}.** "
                                                     "Every test cell scores 0."))
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            cell.outputs = [nbformat.from_dict(stopped_output(why.text))]
    graded = runner.score(nb, spec, list(flags or []), why.text)
    graded.scores, graded.ran, graded.cause = runner.zero_scores(spec), False, why.code
    graded.comments = {c.name: f"Not graded: {escape_markdown(why.text)}" for c in spec.cells.values() if c.solution}
    return graded
