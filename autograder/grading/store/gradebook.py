"""Every write of this grader to nbgrader's gradebook, in one place: `GradebookWriter`, which batch grading opens once per
run and which alone writes the gradebook at its three moments:

    before grading   the students the gradebook lacks (`register_students`), in the order nbgrader would add them
    while grading    each group of notebooks' grades, comments, times and Flagged? boxes (`write`, in bulk)
    after grading    submission times, late penalties and Flagged? boxes (`submissions_as_filed`, `file_late`)

and the `extension` command's `grant_extension`. The rows are those `nbgrader autograde` writes, column for column."""

from __future__ import annotations

import contextlib
import datetime
import sqlite3
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nbgrader import utils as nbutils
from nbgrader.api import Comment, Grade, Gradebook, MissingEntry, SubmittedAssignment, SubmittedNotebook, new_uuid
from nbgrader.coursedir import CourseDirectory
from sqlalchemy import bindparam, event, func, insert, select, update
from sqlalchemy.engine import Engine

from ..types import Graded, Record

BUSY_TIMEOUT_MS = 60_000  # how long a write waits for a gradebook another program holds locked


@event.listens_for(Engine, "connect")
def _busy_timeout(dbapi_connection: Any, _record: Any) -> None:
    """Every SQLite gradebook connection waits for a lock instead of failing after sqlite's default 5 s."""
    if isinstance(dbapi_connection, sqlite3.Connection):
        dbapi_connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


@dataclass
class Entry:
    """One graded notebook's gradebook rows to write: its scores, comments, time and Flagged? box."""

    student: str
    notebook: str
    graded: Graded
    timestamp: Any  # the submission's time as nbgrader reads timestamp.txt, or None
    flagged: bool | None  # None leaves the formgrader's Flagged? box as it is (`flag_box`)


@dataclass
class Filed:
    """One student's submission as the gradebook holds it: what nbgrader's late-penalty step reads."""

    id: str
    timestamp: datetime.datetime | None
    extension: datetime.timedelta | None
    notebooks: dict[str, tuple[str, float]]  # notebook name -> (submitted notebook id, its score)


def flag_box(flags: list[str], previous: Record | None) -> bool | None:
    """The formgrader's Flagged? box (`SubmittedNotebook.flagged`) for a regraded notebook: True (tick it) when
    FLAGGED, False (clear it) when this grader had set it and the notebook is no longer suspect, None (leave it:
    a grader's own flag, set in the formgrader, is kept) otherwise."""
    if flags:
        return True
    if previous and previous.flags:
        return False
    return None


class GradebookWriter:
    """The rows `nbgrader autograde` writes (student's submission, its notebooks, auto scores and comments), for many
    notebooks in one transaction, as a few bulk statements; the one writer of the gradebook (see the module docstring).

    The columns are those nbgrader's ORM writes: a new submission mirrors the whole assignment as `add_submission`
    does (a submitted notebook per notebook, a grade per grade and task cell, a comment per solution and task cell,
    every value as its ORM defaults leave it), then each notebook's grades and comments are set as `SaveAutoGrades`
    sets them; after grading, submission times and late penalties as `Autograde.init_assignment` and
    `AssignLatePenalties` set them (`late.LatePenalties` decides them). Nothing is committed but by `commit`.
    """

    def __init__(self, gb: Gradebook, assignment: str) -> None:
        self.gb = gb
        found = gb.find_assignment(assignment)
        self.assignment_id = found.id
        self.duedate: datetime.datetime | None = found.duedate
        # name -> (notebook id, grade row cells, comment row cells), as add_submission walks them
        self.layout: dict[str, tuple[str, list[str], list[str]]] = {}
        self.cell_names: dict[str, str] = {}
        for nb in found.notebooks:
            grades = [c.id for c in nb.grade_cells] + [c.id for c in nb.task_cells]
            comments = [c.id for c in nb.solution_cells] + [c.id for c in nb.task_cells]
            self.layout[nb.name] = (nb.id, grades, comments)
            for cell in [*nb.grade_cells, *nb.solution_cells, *nb.task_cells]:
                self.cell_names[cell.id] = cell.name
        self.submissions: dict[str, str] = {}  # student -> submitted_assignment id, committed
        self._new: dict[str, str] = {}  # made in this transaction

    @classmethod
    @contextlib.contextmanager
    def open(cls, db_url: str, course_id: str, assignment: str) -> Iterator[GradebookWriter]:
        """The gradebook of the course, open for this run's writes to the assignment's rows; closed at the end."""
        with Gradebook(db_url, course_id) as gb:
            yield cls(gb, assignment)

    def register_students(self, students: list[str]) -> None:
        """Add the students the gradebook lacks, in the given order, in one commit.

        nbgrader's exports list students in the order they were added (their names are usually empty); plain nbgrader
        adds them one submission after another, in order, while this grader stores notebooks as they finish.
        """
        from nbgrader.api import Student

        db = self.gb.db
        known = {sid for (sid,) in db.query(Student.id).all()}
        for student in dict.fromkeys(students):
            if student not in known:
                db.add(Student(id=student))
        self.commit()

    def write(self, entries: list[Entry]) -> None:
        """Every entry's rows, in the open transaction (MissingEntry: a grade cell the assignment does not have)."""
        db = self.gb.db
        wanted = {e.student for e in entries} - self.submissions.keys() - self._new.keys()
        if wanted:
            for student, sub_id in db.execute(select(_SUBS.c.student_id, _SUBS.c.id).where(
                    _SUBS.c.assignment_id == self.assignment_id, _SUBS.c.student_id.in_(wanted))):
                self.submissions[student] = sub_id
        cells, comments, notebook_ids = self._mirror({s: None for s in sorted(wanted - self.submissions.keys())})
        old = {(e.student, e.notebook) for e in entries} - cells.keys()
        if old:  # submissions already in the gradebook: their rows' ids, in one query per table
            subs_of = {self.submissions.get(s) or self._new[s]: s for s, _ in old}
            names = {nb_id: name for name, (nb_id, _, _) in self.layout.items()}
            for sn_id, sub_id, nb_id in db.execute(select(_NOTEBOOKS.c.id, _NOTEBOOKS.c.assignment_id, _NOTEBOOKS.c.notebook_id)
                                                   .where(_NOTEBOOKS.c.assignment_id.in_(subs_of))):
                key = (subs_of[sub_id], names.get(nb_id, ""))
                if key in old:
                    notebook_ids[key] = sn_id
            by_sn = {notebook_ids[k]: k for k in old if k in notebook_ids}
            for row, sn_id, cell, manual in db.execute(select(_GRADES.c.id, _GRADES.c.notebook_id, _GRADES.c.cell_id,
                                                              _GRADES.c.manual_score).where(_GRADES.c.notebook_id.in_(by_sn))):
                cells.setdefault(by_sn[sn_id], {})[self.cell_names.get(cell, "")] = (row, manual)
            for row, sn_id, cell in db.execute(select(_COMMENTS.c.id, _COMMENTS.c.notebook_id, _COMMENTS.c.cell_id)
                                               .where(_COMMENTS.c.notebook_id.in_(by_sn))):
                comments.setdefault(by_sn[sn_id], {})[self.cell_names.get(cell, "")] = row
        grade_rows, comment_rows, times, flags = [], [], {}, []
        for e in entries:
            key = (e.student, e.notebook)
            if key not in notebook_ids:
                raise MissingEntry(f"no notebook {e.notebook} in {e.student}'s submission")
            for grade_id, (auto, _) in e.graded.scores.items():
                if grade_id not in cells.get(key, {}):
                    raise MissingEntry(f"no grade {grade_id} in {e.student}'s {e.notebook}")
                row, manual = cells[key][grade_id]
                grade_rows.append({"row": row, "auto": auto, "needs": manual is not None or auto is None})
            for grade_id, text in e.graded.comments.items():
                if grade_id not in comments.get(key, {}):
                    raise MissingEntry(f"no comment {grade_id} in {e.student}'s {e.notebook}")
                comment_rows.append({"row": comments[key][grade_id], "text": text})
            if e.timestamp:
                times[self.submissions.get(e.student) or self._new[e.student]] = nbutils.parse_utc(e.timestamp)
            if e.flagged is not None:
                flags.append({"row": notebook_ids[key], "flag": e.flagged})
        if grade_rows:
            db.execute(_UPDATE_GRADE, grade_rows)
        if comment_rows:
            db.execute(_UPDATE_COMMENT, comment_rows)
        if times:
            db.execute(_UPDATE_TIME, [{"row": k, "time": v} for k, v in times.items()])
        if flags:
            db.execute(_UPDATE_FLAG, flags)

    def _mirror(self, fresh: dict[str, Any]) -> tuple[dict[tuple[str, str], dict[str, tuple[str, float | None]]],
                                                    dict[tuple[str, str], dict[str, str]], dict[tuple[str, str], str]]:
        """New submissions (student -> its time, or None) that mirror the whole assignment, as `add_submission`
        makes them, in the open transaction; their grade rows, comment rows and submitted notebooks, by (student,
        notebook)."""
        db = self.gb.db
        cells: dict[tuple[str, str], dict[str, tuple[str, float | None]]] = {}  # (student, nb) -> cell -> (row, manual)
        comments: dict[tuple[str, str], dict[str, str]] = {}
        notebook_ids: dict[tuple[str, str], str] = {}
        if not fresh:
            return cells, comments, notebook_ids
        subs, nbs, grades, comms = [], [], [], []
        for student, timestamp in fresh.items():
            sub_id = self._new[student] = new_uuid()
            subs.append({"id": sub_id, "assignment_id": self.assignment_id, "student_id": student,
                         "timestamp": timestamp, "extension": None})
            for name, (nb_id, grade_cells, comment_cells) in self.layout.items():
                sn_id = notebook_ids[(student, name)] = new_uuid()
                nbs.append({"id": sn_id, "assignment_id": sub_id, "notebook_id": nb_id, "flagged": False,
                            "late_submission_penalty": None})
                cells[(student, name)] = {}
                for cell in grade_cells:
                    row = new_uuid()
                    cells[(student, name)][self.cell_names[cell]] = (row, None)
                    grades.append({"id": row, "notebook_id": sn_id, "cell_id": cell, "auto_score": None,
                                   "manual_score": None, "extra_credit": None, "needs_manual_grade": True})
                comments[(student, name)] = {}
                for cell in comment_cells:
                    row = new_uuid()
                    comments[(student, name)][self.cell_names[cell]] = row
                    comms.append({"id": row, "notebook_id": sn_id, "cell_id": cell, "auto_comment": None,
                                  "manual_comment": None})
        db.execute(insert(_SUBS), subs)
        db.execute(insert(_NOTEBOOKS), nbs)
        if grades:
            db.execute(insert(_GRADES), grades)
        if comms:
            db.execute(insert(_COMMENTS), comms)
        return cells, comments, notebook_ids

    def submissions_as_filed(self, students: list[str], create: dict[str, datetime.datetime]) -> dict[str, Filed]:
        """The students' submissions as nbgrader's late-penalty step reads them, in two queries; a student in `create`
        without one gets one first, with that time, as `update_or_create_submission` makes it (in the open
        transaction). Each notebook's score is nbgrader's own `SubmittedNotebook.score`, summed by the database."""
        db = self.gb.db
        found: dict[str, Filed] = {}
        for sub_id, student, timestamp, extension in db.execute(
                select(_SUBS.c.id, _SUBS.c.student_id, _SUBS.c.timestamp, _SUBS.c.extension)
                .where(_SUBS.c.assignment_id == self.assignment_id, _SUBS.c.student_id.in_(students))):
            found[student] = Filed(sub_id, timestamp, extension, {})
        fresh = {s: t for s, t in create.items() if s not in found}
        self._mirror(fresh)
        for student, timestamp in fresh.items():
            found[student] = Filed(self._new[student], timestamp, None, {})
        by_sub = {f.id: f for f in found.values()}
        names = {nb_id: name for name, (nb_id, _, _) in self.layout.items()}
        if by_sub:
            notebooks = list(db.execute(select(_NOTEBOOKS.c.id, _NOTEBOOKS.c.assignment_id, _NOTEBOOKS.c.notebook_id)
                                        .where(_NOTEBOOKS.c.assignment_id.in_(by_sub))))
            # SubmittedNotebook.score (the sum of each grade's Grade.score, 0.0 without grades), in one grouped query
            # instead of its correlated subquery per notebook
            scores = {sn_id: score for sn_id, score in db.execute(
                select(Grade.notebook_id, func.sum(Grade.score))
                .where(Grade.notebook_id.in_([n for n, _, _ in notebooks])).group_by(Grade.notebook_id))}
            for sn_id, sub_id, nb_id in notebooks:
                if nb_id in names:
                    score = scores.get(sn_id)
                    by_sub[sub_id].notebooks[names[nb_id]] = (sn_id, 0.0 if score is None else score)
        return found

    def file_late(self, times: dict[str, datetime.datetime], penalties: dict[str, float | None], flagged: list[str]) -> None:
        """Submission times (submission id -> time), late penalties and ticked Flagged? boxes (submitted notebook
        ids), in the open transaction."""
        db = self.gb.db
        if times:
            db.execute(_UPDATE_TIME, [{"row": k, "time": v} for k, v in times.items()])
        if penalties:
            db.execute(_UPDATE_PENALTY, [{"row": k, "penalty": v} for k, v in penalties.items()])
        if flagged:
            db.execute(_UPDATE_FLAG, [{"row": k, "flag": True} for k in flagged])


    def commit(self) -> None:
        """Commit everything written since the last commit."""
        self.gb.db.commit()
        self.submissions.update(self._new)
        self._new.clear()

    def rollback(self) -> None:
        """Undo everything written since the last commit."""
        self._new.clear()
        self.gb.db.rollback()


_SUBS, _NOTEBOOKS = SubmittedAssignment.__table__, SubmittedNotebook.__table__
_GRADES, _COMMENTS = Grade.__table__, Comment.__table__
_UPDATE_GRADE = (update(_GRADES).where(_GRADES.c.id == bindparam("row"))
                 .values(auto_score=bindparam("auto"), needs_manual_grade=bindparam("needs")))
_UPDATE_COMMENT = update(_COMMENTS).where(_COMMENTS.c.id == bindparam("row")).values(auto_comment=bindparam("text"))
_UPDATE_TIME = update(_SUBS).where(_SUBS.c.id == bindparam("row")).values(timestamp=bindparam("time"))
_UPDATE_PENALTY = (update(_NOTEBOOKS).where(_NOTEBOOKS.c.id == bindparam("row"))
                   .values(late_submission_penalty=bindparam("penalty")))
_UPDATE_FLAG = update(_NOTEBOOKS).where(_NOTEBOOKS.c.id == bindparam("row")).values(flagged=bindparam("flag"))


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
