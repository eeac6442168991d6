"""Late submissions, exactly as `nbgrader autograde` records them: timestamp, due date + extension, penalty plugin.

nbgrader reads `timestamp.txt` of each submission into the gradebook's submission row, and its
`AssignLatePenalties` preprocessor asks the configured plugin (`AssignLatePenalties.plugin_class`, by default
`LateSubmissionPlugin` with its `penalty_method`) for each submitted notebook's penalty, clamped to [0, score].
Here the same classes are built from the same config, and applied to every notebook of the batch after grading,
the skipped ones included, so that a due date, an extension or a plugin set after grading takes effect on re-run.
"""

from __future__ import annotations

import datetime
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from nbgrader.api import Gradebook, MissingEntry, Notebook, SubmittedNotebook
from nbgrader.coursedir import CourseDirectory


class _Row(Protocol):
    student: str
    notebook: str
    reason: str
    late: str


def _late_by(seconds: float) -> str:
    """'2 d 3 h' / '5 h 12 min' / '40 s': how late, for the summary."""
    d, rest = divmod(int(seconds), 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    parts = [f"{d} d"] * bool(d) + [f"{h} h"] * bool(h) + [f"{m} min"] * bool(m and not d)
    return " ".join(parts) or f"{s} s"


def apply_late_penalties(coursedir: CourseDirectory, assignment: str, rows: Iterable[_Row]) -> None:
    """Record each row's submission time and late penalty in the gradebook as nbgrader does; note them in the row."""
    rows = list(rows)
    penalties: Any = None  # made at the first late notebook: nbgrader.preprocessors loads nbconvert (~0.6 s)
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        for student in dict.fromkeys(r.student for r in rows):
            folder = Path(coursedir.format_path(coursedir.submitted_directory, student, assignment))
            if not folder.is_dir():
                continue  # nbgrader autograde has nothing to grade, so it records nothing either
            timestamp = coursedir.get_existing_timestamp(str(folder))
            if timestamp:  # as Autograde.init_assignment: keep the submission row's time in step with timestamp.txt
                gb.update_or_create_submission(assignment, student, timestamp=timestamp)
        found: dict[str, tuple[Any, dict[str, Any]]] = {}  # student -> (submission, its notebooks by name)
        for row in rows:
            folder = Path(coursedir.format_path(coursedir.submitted_directory, row.student, assignment))
            if not (folder / f"{row.notebook}.ipynb").is_file():
                continue  # nbgrader runs no preprocessor, AssignLatePenalties included, on a notebook not submitted
            if row.student not in found:  # one query for a student's notebooks, not one per notebook
                try:
                    submission = gb.find_submission(assignment, row.student)
                except MissingEntry:
                    submission = None
                notebooks = {} if submission is None else dict(
                    gb.db.query(Notebook.name, SubmittedNotebook).join(SubmittedNotebook.notebook)
                    .filter(SubmittedNotebook.assignment_id == submission.id))
                found[row.student] = (submission, notebooks)
            submission, notebooks = found[row.student]
            notebook = notebooks.get(row.notebook)
            if submission is None or notebook is None:
                continue
            notebook.late_submission_penalty = None
            late = submission.total_seconds_late
            if late > 0:
                if penalties is None:
                    from nbgrader.preprocessors import AssignLatePenalties

                    penalties = AssignLatePenalties(config=coursedir.config)  # the config nbgrader's own run reads
                    penalties.init_plugin()
                penalty = penalties.plugin_inst.late_submission_penalty(row.student, notebook.score, late)
                if penalty is not None:
                    # nbgrader's own clamp to [0, score], so a plugin's odd value lands exactly where nbgrader puts it
                    notebook.late_submission_penalty = penalties._check_late_penalty(notebook, penalty)
                # how late is named whatever the penalty method: with `none` the instructor still needs to know
                row.late = _late_by(late)
                what = ("no penalty" if notebook.late_submission_penalty is None
                        else f"penalty {notebook.late_submission_penalty:g}")
                row.reason = "; ".join(x for x in [row.reason, f"late by {_late_by(late)}: {what}"] if x)
        gb.db.commit()  # one commit for the batch: every penalty is worked out again on the next run anyway


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
