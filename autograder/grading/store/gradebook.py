"""Everything the grader writes but the resume journal: the gradebook rows, autograded notebooks, CSV text, the course
secret and the course lock."""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import secrets
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from nbgrader import utils as nbutils
from nbgrader.api import Comment, Grade, Gradebook, MissingEntry, SubmittedAssignment, SubmittedNotebook, new_uuid
from sqlalchemy import bindparam, event, func, insert, select, update
from sqlalchemy.engine import Engine

from ...lines import one_line
from ..discover.assignment import GradingError
from ..grade.bounded import notebook_file
from ..types import Graded

LOCK_FILE = ".autograder.lock"
SECRET_FILE = ".autograder-secret"
BUSY_TIMEOUT_MS = 60_000  # how long a write waits for a gradebook another program holds locked


@event.listens_for(Engine, "connect")
def _busy_timeout(dbapi_connection: Any, _record: Any) -> None:
    """Every SQLite gradebook connection waits for a lock instead of failing after sqlite's default 5 s."""
    if isinstance(dbapi_connection, sqlite3.Connection):
        dbapi_connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def course_secret(root: Path) -> bytes:
    """The course's secret (32 random bytes, hex, mode 0600), created on the first `grade` and kept for every re-run.

    It draws the hidden checks' inputs and authenticates the resume state; no grading worker can see it.
    """
    path = root / SECRET_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_secret(path)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
        f.flush()
        os.fsync(f.fileno())
    return _read_secret(path)


def _read_secret(path: Path) -> bytes:
    try:
        text = path.read_text().strip()
        os.chmod(path, 0o600)
    except OSError as exc:
        raise GradingError(f"cannot read the course secret {path}: {exc.strerror}") from None
    if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise GradingError(f"the course secret {path} is damaged (not 64 hex digits); restore it, or delete it to make "
                           "a new one (the hidden checks' inputs will change)")
    return bytes.fromhex(text)


def atomic_write(path: Path, data: bytes, durable: bool = True) -> None:
    """Write `data` to `path` so that a kill at any moment leaves the old file or the new one, never half of it;
    `durable` also survives a power cut (fsync)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def valid_text(text: str) -> str:
    """`text` with every lone surrogate (which no UTF-8 writer can encode: it came from a worker, or a file name that
    is not UTF-8) replaced by U+FFFD, and NUL and the other control characters but tab and newline by U+FFFD too."""
    text = str(text)
    return text if text.isprintable() else text.translate(_INVALID)


_INVALID = {c: "\ufffd" for c in [*range(0x20), 0x7F, *range(0xD800, 0xE000)] if chr(c) not in "\t\n"}
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet reads a cell starting so as a formula


def csv_text(cells: list[str]) -> list[str]:
    """A CSV line's cells as safe text: one line each with nothing hidden (`one_line`: valid UTF-8 too), and a cell a
    spreadsheet would run as a formula quoted with `'` (OWASP's advice; numbers are not touched)."""
    out = []
    for cell in cells:
        cell = one_line(cell)
        if cell.startswith(FORMULA_START) and not _number(cell):
            cell = "'" + cell
        out.append(cell)
    return out


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# (a code cell's outputs sit three levels deeper in the notebook's indented JSON: every line of them is that much longer)
OUTPUTS_DEPTH = 3


def written_size(outputs: list[Any]) -> int:
    """The bytes a code cell's outputs take in the autograded notebook's file, as `notebook_file` writes them:
    nbformat's JSON, indented a space a level, each multi-line text a list of its lines (compact JSON undercounts it
    many times: a newline is 2 bytes there, ~10 here; a JSON list item 2, ~7)."""
    from nbformat.v4.rwbase import split_lines

    cell = split_lines(nbformat.from_dict({"cells": [{"cell_type": "code", "outputs": outputs}]})).cells[0]
    text = json.dumps(cell.outputs, indent=1, sort_keys=True, separators=(",", ": "), ensure_ascii=False)
    return len(text.encode("utf-8", "surrogatepass")) + OUTPUTS_DEPTH * text.count("\n")


def write_notebook(nb: nbformat.NotebookNode, path: Path) -> str:
    """The autograded notebook, atomically; returns its SHA-256 (the resume record keeps it).

    Not fsynced: after a power cut a notebook that is not the file recorded has another hash, and is regraded.
    """
    data, digest = notebook_file(nb)
    atomic_write(path, data, durable=False)
    return digest


@contextlib.contextmanager
def course_lock(root: Path) -> Iterator[None]:
    """Hold the course's grading lock, or refuse at once when another grader holds it.

    The lock file exists only while a grader holds it: the holder removes it before letting go, and a grader that
    locked a file someone removed meanwhile (its inode is no longer the path's) locks the new one instead.
    """
    path = root / LOCK_FILE
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise GradingError(f"another grader is already running on {root} (it holds {path}); wait for it to finish") from None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the last holder removed it after we opened it: lock the file the path names now
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # still holding the lock: nobody else can have taken this file meanwhile
        os.close(fd)  # closing releases the lock


@dataclass
class Entry:
    """One graded notebook's gradebook rows to write: its scores, comments, time and Flagged? box."""

    student: str
    notebook: str
    graded: Graded
    timestamp: Any  # the submission's time as nbgrader reads timestamp.txt, or None
    flagged: bool | None  # None leaves the formgrader's Flagged? box as it is (`formgrader.flag_box`)


@dataclass
class Filed:
    """One student's submission as the gradebook holds it: what nbgrader's late-penalty step reads."""

    id: str
    timestamp: datetime.datetime | None
    extension: datetime.timedelta | None
    notebooks: dict[str, tuple[str, float]]  # notebook name -> (submitted notebook id, its score)


class BulkGradebook:
    """The rows `nbgrader autograde` writes (student's submission, its notebooks, auto scores and comments), for many
    notebooks in one transaction, as a few bulk statements.

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


def register_students(db_url: str, course_id: str, students: list[str]) -> None:
    """Add the students the gradebook lacks, in the given order, in one commit.

    nbgrader's exports list students in the order they were added (their names are usually empty); plain nbgrader
    adds them one submission after another, in order, while this grader stores notebooks as they finish.
    """
    from nbgrader.api import Student

    with Gradebook(db_url, course_id) as gb:
        known = {sid for (sid,) in gb.db.query(Student.id).all()}
        for student in dict.fromkeys(students):
            if student not in known:
                gb.db.add(Student(id=student))
        gb.db.commit()
