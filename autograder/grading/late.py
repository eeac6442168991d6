"""Late submissions, exactly as `nbgrader autograde` records them: timestamp, due date + extension, penalty plugin.

nbgrader reads `timestamp.txt` of each submission into the gradebook's submission row, and its
`AssignLatePenalties` preprocessor asks the configured plugin (`AssignLatePenalties.plugin_class`, by default
`LateSubmissionPlugin` with its `penalty_method`) for each submitted notebook's penalty, clamped to [0, score].
Here the same classes are built from the same config, and applied after grading to every notebook of the batch, the
skipped ones included (so that a due date, an extension or a plugin set after grading takes effect on re-run), one
student at a time: a student whose step fails says why in that student's rows, and the others go on.
"""

from __future__ import annotations

import datetime
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from nbgrader import utils as nbutils
from nbgrader.api import Gradebook, MissingEntry, Notebook, SubmittedNotebook
from nbgrader.coursedir import CourseDirectory

from .submission import Submission, Unreadable
from .types import Code


class _Row(Protocol):
    student: str
    notebook: str
    late: str
    flags: list[str]

    def add(self, code: Code, text: str) -> None: ...


def _late_by(seconds: float) -> str:
    """'2 d 3 h' / '5 h 12 min' / '40 s': how late, for the summary."""
    d, rest = divmod(int(seconds), 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    parts = [f"{d} d"] * bool(d) + [f"{h} h"] * bool(h) + [f"{m} min"] * bool(m and not d)
    return " ".join(parts) or f"{s} s"


MAX_TIMESTAMP_BYTES = 4096  # nbgrader writes ~30 characters


@dataclass(frozen=True)
class SubmissionTime:
    """A submission's time as `timestamp.txt` gives it: None when there is none; `problem` says why it is unreadable."""

    when: datetime.datetime | None
    problem: str = ""


def submission_time(submission: Submission) -> SubmissionTime:
    """`timestamp.txt` read as nbgrader reads it, without trusting it.

    No file, or an empty one: no time (nbgrader warns and records none: on time). A file that is not a regular file of
    the submission, not UTF-8 or not a date is where nbgrader would stop the whole run (its `get_existing_timestamp`
    calls a `fail` that does not exist): here the notebook is graded with no time, as if the file were empty, and
    `problem` (a flag for the row) says why.
    """
    name = "timestamp.txt"
    try:
        raw = submission.read(name, MAX_TIMESTAMP_BYTES)
    except FileNotFoundError:
        return SubmissionTime(None)
    except (Unreadable, OSError) as exc:
        return SubmissionTime(None, _unreadable(str(exc) if isinstance(exc, Unreadable) else f"{name}: {exc.strerror}"))
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return SubmissionTime(None, _unreadable(f"{name} is not UTF-8 text"))
    if not text:
        return SubmissionTime(None)
    try:
        return SubmissionTime(nbutils.parse_utc(text))
    except Exception:  # ValueError, OverflowError...: whatever the parser says, the text is not a time nbgrader can use
        return SubmissionTime(None, _unreadable(f"{name} holds {text[:40]!r}, not a date and time"))


def _unreadable(why: str) -> str:
    return f"submission time unreadable ({why}): graded as submitted on time, as with no timestamp.txt; check when it came in"


class LatePenalties:
    """nbgrader's late-submission step for one student at a time, with the plugin the course's config names."""

    def __init__(self, coursedir: CourseDirectory) -> None:
        self.coursedir = coursedir
        self.penalties: Any = None  # made at the first late notebook: nbgrader.preprocessors loads nbconvert (~0.6 s)

    def apply(self, gb: Gradebook, assignment: str, submission: Submission, rows: list[_Row]) -> None:
        """Record one student's submission time and each notebook's late penalty as nbgrader does (committed); note
        them in the rows, and flag every row when the time cannot be read."""
        student = rows[0].student
        if not submission.folder.is_dir() and not submission.problem:
            return  # nbgrader autograde has nothing to grade, so it records nothing either
        time = submission_time(submission)
        if time.problem:
            for row in rows:
                row.flags.append(time.problem)
        if time.when:  # as Autograde.init_assignment: keep the submission row's time in step with timestamp.txt
            gb.update_or_create_submission(assignment, student, timestamp=time.when)
        try:
            found = gb.find_submission(assignment, student)
        except MissingEntry:
            return
        notebooks = dict(gb.db.query(Notebook.name, SubmittedNotebook).join(SubmittedNotebook.notebook)
                         .filter(SubmittedNotebook.assignment_id == found.id))
        late = found.total_seconds_late
        for row in rows:
            rel = f"{row.notebook}.ipynb"
            notebook = notebooks.get(row.notebook)
            if notebook is None or (rel not in submission.files and rel not in submission.refused):
                continue  # nbgrader runs no preprocessor, AssignLatePenalties included, on a notebook not submitted
            if time.problem:
                notebook.flagged = True  # the formgrader's Flagged? box
            notebook.late_submission_penalty = None
            if late > 0:
                if self.penalties is None:
                    from nbgrader.preprocessors import AssignLatePenalties

                    penalties = AssignLatePenalties(config=self.coursedir.config)  # the config nbgrader's own run reads
                    penalties.init_plugin()
                    self.penalties = penalties
                penalty = self.penalties.plugin_inst.late_submission_penalty(row.student, notebook.score, late)
                if penalty is not None:
                    # nbgrader's own clamp to [0, score], so a plugin's odd value lands exactly where nbgrader puts it
                    notebook.late_submission_penalty = self.penalties._check_late_penalty(notebook, penalty)
                # how late is named whatever the penalty method: with `none` the instructor still needs to know
                row.late = _late_by(late)
                what = ("no penalty" if notebook.late_submission_penalty is None
                        else f"penalty {notebook.late_submission_penalty:g}")
                row.add(Code.LATE, f"late by {_late_by(late)}: {what}")
        gb.db.commit()


def grant_extension(coursedir: CourseDirectory, assignment: str, student: str, extension: datetime.timedelta) -> None:
    """Give a student more time (replacing any earlier extension), as nbgrader's `Gradebook.grant_extension` does.

    nbgrader keeps an extension on the student's submission row, which only grading creates; this creates the row
    first (as `nbgrader autograde` would, without a timestamp) so that an extension can be granted before grading.
    """
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        try:
            gb.find_assignment(assignment)
        except MissingEntry:
            raise LookupError(f"assignment {assignment!r} is not in the gradebook: "
                              f"run `nbgrader generate_assignment {assignment}` first") from None
        try:
            gb.find_student(student)
        except MissingEntry:  # a mistyped id would become a student of the gradebook
            if not (Path(coursedir.root) / coursedir.submitted_directory / student).is_dir():
                raise LookupError(f"student {student!r} is not in the gradebook and has no submission: check the id, "
                                  "or add the roster first (nbgrader db student import roster.csv)") from None
            gb.update_or_create_student(student)
        try:
            gb.find_submission(assignment, student)
        except MissingEntry:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # SQLAlchemy's autoflush notes from inside nbgrader's add_submission
                gb.add_submission(assignment, student)
        seconds = extension.total_seconds()
        gb.grant_extension(assignment, student, minutes=seconds / 60)
