"""Everything the grader writes: the gradebook, autograded notebooks, the resume state, and the course lock."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import sqlite3
import tempfile
import warnings
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
from nbgrader import utils as nbutils
from nbgrader.api import BaseCell, Comment, Grade, Gradebook, MissingEntry
from sqlalchemy import bindparam, event, select, update
from sqlalchemy.engine import Engine

from .runner import Graded
from .source import GradingError

STATE_FILE = ".autograder-state.json"
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
_SURROGATES = {c: "\ufffd" for c in range(0xD800, 0xE000)}
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet reads a cell starting so as a formula


def csv_text(cells: list[str]) -> list[str]:
    """A CSV line's cells as safe text: valid UTF-8, and a cell a spreadsheet would run as a formula quoted with `'`
    (OWASP's advice; numbers are not touched)."""
    out = []
    for cell in cells:
        cell = valid_text(cell)
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


def write_notebook(nb: nbformat.NotebookNode, path: Path) -> str:
    """The autograded notebook, atomically; returns its SHA-256 (the state records it).

    Not fsynced: after a power cut a notebook that is not the file recorded has another hash, and is regraded.
    """
    # nbformat.writes would validate first, and only warn when invalid: the cells came through sanitize and the
    # outputs through the channel's checks, so the same bytes are written without that pass (~40% of the write)
    text = nbformat.v4.writes_json(nb)
    try:
        data = text.encode()
    except UnicodeEncodeError:  # a lone surrogate in an output or flag (a worker sent it): written as U+FFFD
        data = text.translate(_SURROGATES).encode()
    atomic_write(path, data, durable=False)
    return hashlib.sha256(data).hexdigest()


@contextlib.contextmanager
def course_lock(root: Path) -> Iterator[None]:
    """Hold the course's grading lock, or refuse at once when another grader holds it."""
    path = root / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise GradingError(f"another grader is already running on {root} (it holds {path}); wait for it to finish") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)  # closing releases the lock


class State:
    """What was graded, from which inputs: lets a re-run skip unchanged submissions.

    Each record carries an HMAC under the course secret: a record edited by anyone without the secret (a
    submission's process cannot read it) is ignored, and its notebook graded again.
    """

    def __init__(self, root: Path, secret: bytes) -> None:
        self.path = root / STATE_FILE
        self.secret = secret
        self.rejected: list[str] = []  # keys whose record failed authentication
        try:
            data = json.loads(self.path.read_text())
            self.records: dict[str, dict[str, Any]] = data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            self.records = {}  # missing or damaged: regrade everything, which is always correct

    @staticmethod
    def key(assignment: str, student: str, notebook: str) -> str:
        """The record's key: one per assignment, student and notebook."""
        return f"{assignment}/{student}/{notebook}"

    def _mac(self, key: str, record: dict[str, Any]) -> str:
        body = json.dumps([key, {k: v for k, v in record.items() if k != "mac"}], sort_keys=True)
        return hmac.new(self.secret, body.encode(), hashlib.sha256).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        """The record under `key` if the grader wrote it (its HMAC checks out), else None."""
        record = self.records.get(key)
        if not isinstance(record, dict):
            return None
        if not hmac.compare_digest(str(record.get("mac", "")), self._mac(key, record)):
            self.rejected.append(key)
            return None
        return record

    def put(self, key: str, record: dict[str, Any], save: bool = True) -> None:
        """Store a record (with its HMAC) and write the whole state atomically (save=False: at the next `save`)."""
        self.records[key] = {**record, "mac": self._mac(key, record)}
        if save:
            self.save()

    def save(self) -> None:
        """Write the whole state atomically."""
        atomic_write(self.path, json.dumps(self.records, indent=1, sort_keys=True).encode())


def record_grades(gb: Gradebook, assignment: str, student: str, notebook: str, graded: Graded, timestamp: Any,
                  flagged: bool | None = None, commit: bool = True) -> None:
    """The rows `nbgrader autograde` writes for one notebook (student, submission, auto scores, auto comments) and
    the formgrader's Flagged? box (`formgrader.flag_box`: None leaves it), in one commit; with commit=False in the
    caller's, which commits several notebooks at once."""
    try:
        _ensure_submission(gb, assignment, student, timestamp)
        submitted = gb.find_submission_notebook(notebook, assignment, student)
        gb.db.flush()  # rows nbgrader's add_submission made are in the database before they are updated below
        # The same columns nbgrader's ORM objects would write, as one query and one UPDATE each for the notebook's
        # grades and comments (the ORM's unit of work cost ~10 ms a notebook; nbgrader's find_grade is a query per cell)
        grades = {name: (row_id, manual) for name, row_id, manual in gb.db.execute(
            select(BaseCell.name, Grade.id, Grade.manual_score).join(Grade, Grade.cell_id == BaseCell.id)
            .where(Grade.notebook_id == submitted.id))}
        comments = dict(gb.db.execute(select(BaseCell.name, Comment.id).join(Comment, Comment.cell_id == BaseCell.id)
                                      .where(Comment.notebook_id == submitted.id)).all())
        grade_rows, comment_rows = [], []
        for grade_id, (auto, _) in graded.scores.items():
            if grade_id not in grades:
                raise MissingEntry(f"no grade {grade_id} in {student}'s {notebook}")
            row_id, manual = grades[grade_id]
            grade_rows.append({"row": row_id, "auto": auto, "needs": manual is not None or auto is None})
        for grade_id, text in graded.comments.items():
            if grade_id not in comments:
                raise MissingEntry(f"no comment {grade_id} in {student}'s {notebook}")
            comment_rows.append({"row": comments[grade_id], "text": text})
        if grade_rows:
            gb.db.execute(_UPDATE_GRADE, grade_rows)
        if comment_rows:
            gb.db.execute(_UPDATE_COMMENT, comment_rows)
        if flagged is not None:
            submitted.flagged = flagged
        if commit:
            gb.db.commit()
    except BaseException:
        rollback(gb)
        raise


_GRADES, _COMMENTS = Grade.__table__, Comment.__table__
_UPDATE_GRADE = (update(_GRADES).where(_GRADES.c.id == bindparam("row"))
                 .values(auto_score=bindparam("auto"), needs_manual_grade=bindparam("needs")))
_UPDATE_COMMENT = update(_COMMENTS).where(_COMMENTS.c.id == bindparam("row")).values(auto_comment=bindparam("text"))


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


def _ensure_submission(gb: Gradebook, assignment: str, student: str, timestamp: Any) -> None:
    """The student and their submission (with its time), as nbgrader's update_or_create_* make them; nbgrader's
    add_* commit, but only when a student or submission is new (once per student), not for every notebook.
    A submission found once is remembered for the gradebook's session (forgotten on rollback)."""
    known = _SUBMISSIONS.setdefault(gb, {})
    submission = known.get((assignment, student))
    if submission is None:
        try:
            gb.find_student(student)
        except MissingEntry:
            gb.add_student(student)
        try:
            submission = gb.find_submission(assignment, student)
        except MissingEntry:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # SQLAlchemy's autoflush notes from inside nbgrader's add_submission
                if timestamp:
                    submission = gb.add_submission(assignment, student, timestamp=timestamp)
                else:
                    submission = gb.add_submission(assignment, student)
            known[(assignment, student)] = submission
            return
        known[(assignment, student)] = submission
    if timestamp:
        submission.timestamp = nbutils.parse_utc(timestamp)


# Submissions each gradebook session has found, by (assignment, student): one lookup per student, not per notebook.
_SUBMISSIONS: weakref.WeakKeyDictionary[Gradebook, dict[tuple[str, str], Any]] = weakref.WeakKeyDictionary()


def rollback(gb: Gradebook) -> None:
    """Roll the gradebook's session back, and forget what it had found (rolled-back objects are stale)."""
    _SUBMISSIONS.pop(gb, None)
    gb.db.rollback()
