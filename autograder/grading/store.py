"""Everything the grader writes: the gradebook, autograded notebooks, the resume state, and the course lock."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
from nbgrader.api import Gradebook

from .runner import Graded
from .source import GradingError

STATE_FILE = ".autograder-state.json"
LOCK_FILE = ".autograder.lock"


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that a kill at any moment leaves the old file or the new one, never half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_notebook(nb: nbformat.NotebookNode, path: Path) -> None:
    """The autograded notebook, atomically."""
    atomic_write(path, nbformat.writes(nb).encode())


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
    """What was graded, from which inputs: lets a re-run skip unchanged submissions."""

    def __init__(self, root: Path) -> None:
        self.path = root / STATE_FILE
        try:
            data = json.loads(self.path.read_text())
            self.records: dict[str, dict[str, Any]] = data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            self.records = {}  # missing or damaged: regrade everything, which is always correct

    @staticmethod
    def key(assignment: str, student: str, notebook: str) -> str:
        return f"{assignment}/{student}/{notebook}"

    def get(self, key: str) -> dict[str, Any] | None:
        record = self.records.get(key)
        return record if isinstance(record, dict) else None

    def put(self, key: str, record: dict[str, Any]) -> None:
        self.records[key] = record
        atomic_write(self.path, json.dumps(self.records, indent=1, sort_keys=True).encode())


def record_grades(gb: Gradebook, assignment: str, student: str, notebook: str, graded: Graded, timestamp: Any) -> None:
    """The rows `nbgrader autograde` writes for one notebook (student, submission, auto scores, auto comments), in one commit."""
    gb.update_or_create_student(student)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SQLAlchemy's autoflush notes from inside nbgrader's add_submission
        if timestamp:
            gb.update_or_create_submission(assignment, student, timestamp=timestamp)
        else:
            gb.update_or_create_submission(assignment, student)
    try:
        for grade_id, (auto, _) in graded.scores.items():
            grade = gb.find_grade(grade_id, notebook, assignment, student)
            grade.auto_score = auto
            grade.needs_manual_grade = grade.manual_score is not None or auto is None
        for grade_id, text in graded.comments.items():
            gb.find_comment(grade_id, notebook, assignment, student).auto_comment = text
        gb.db.commit()
    except BaseException:
        gb.db.rollback()
        raise
