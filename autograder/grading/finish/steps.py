"""The steps after grading, for every notebook of the batch (the skipped ones included): each submission's time and
late penalties (`late`), then its other files into autograded/ (`other_files`).

`FINISH_STUDENTS` students a transaction of bulk statements, through the run's one gradebook writer. A step that fails
for one submission says why in that submission's rows (its gradebook changes are not kept); every other submission
is penalised and copied as usual.
"""

from __future__ import annotations

from ...lines import one_line
from ..discover.course import Course
from ..discover.submission import Submission
from ..store.gradebook import GradebookWriter
from ..types import Code, Row
from .late import LatePenalties
from .other_files import copy_other_files

LATE_STEP = "its submission time and late penalty"
FINISH_STUDENTS = 500  # students a transaction: a few thousand rows, so no other program waits long


def finish(course: Course, assignment: str, rows: list[Row], gradebook: GradebookWriter) -> None:
    """Late penalties, then other files, for every submission the rows name (see the module docstring)."""
    by_student: dict[str, list[Row]] = {}
    for row in rows:
        by_student.setdefault(row.student, []).append(row)
    penalties = LatePenalties(course.coursedir)
    students = list(by_student)
    for start in range(0, len(students), FINISH_STUDENTS):
        work = [(Submission.scan(course.submitted(s, assignment)), by_student[s])
                for s in students[start:start + FINISH_STUDENTS]]
        try:
            _file_late(gradebook, penalties, work)
        except Exception:  # the chunk's transaction failed: each submission alone, so only the one at fault says so
            gradebook.rollback()
            for one in work:
                try:
                    _file_late(gradebook, penalties, [one])
                except Exception as exc:
                    gradebook.rollback()
                    _step_failed(one[1], LATE_STEP, exc)
        for submission, its_rows in work:
            try:
                flags = copy_other_files(course.coursedir, assignment, its_rows[0].student, submission)
                for row in its_rows:
                    row.flags.extend(f for f in flags if f not in row.flags)
            except Exception as exc:
                _step_failed(its_rows, "copying its other files into autograded/", exc)


def _file_late(gradebook: GradebookWriter, penalties: LatePenalties, work: list[tuple[Submission, list[Row]]]) -> None:
    filings, failed = penalties.apply(gradebook, work)
    gradebook.commit()
    for filing in filings:
        filing.note()
    for _, its_rows in work:
        if its_rows[0].student in failed:
            _step_failed(its_rows, LATE_STEP, failed[its_rows[0].student])


def _step_failed(rows: list[Row], what: str, exc: BaseException) -> None:
    why = f"{what} failed ({type(exc).__name__}: {one_line(exc)[:200]})"
    for row in rows:
        row.add(Code.STEP_FAILED, why)
