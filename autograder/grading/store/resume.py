"""What the store already holds: a notebook graded by an earlier run from the very same inputs is skipped.

A notebook is skipped while its journal record's fingerprint (`discover.fingerprint`) matches and its autograded
notebook is the very file this grader wrote. The formgrader's ⚡ Autograde button runs plain `nbgrader autograde`,
which writes the restored grade cells, hidden tests included, into `autograded/`, where `nbgrader generate_feedback`
would publish them: the grader records the hash of every autograded notebook it writes, and regrades a notebook whose
file no longer has that hash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from ..types import Record, Row, Task
from .journal import Journal


def autograded_digest(path: Path) -> str | None:
    """SHA-256 of the autograded notebook file, None when there is none."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def autograded_untouched(record: Record, path: Path) -> bool:
    """True when the autograded notebook is the very file this grader wrote (no Autograde button, no edit since)."""
    return record.autograded_sha256 == autograded_digest(path)  # None: none was written, and none is there


def still_graded(record: Record | None, fingerprint: str, autograded: Path) -> bool:
    """True when the store holds this notebook graded from these inputs: its record has this fingerprint, and its
    autograded notebook is the file this grader wrote."""
    return record is not None and record.fingerprint == fingerprint and autograded_untouched(record, autograded)


def unchanged(tasks: list[Task], journal: Journal, assignment: str, autograded: Callable[[str], Path],
              force: bool = False) -> tuple[list[Row], list[Task]]:
    """The rows of the notebooks still graded (skipped: their records' rows), and the tasks left to grade; `force`
    grades every one. `autograded` gives a student's autograded folder of the assignment."""
    skipped, todo = [], []
    for task in tasks:
        item = task.item
        old = journal.get(Journal.key(assignment, item.student, item.notebook))
        if not force and still_graded(old, task.fingerprint, autograded(item.student) / f"{item.notebook}.ipynb"):
            assert old is not None
            skipped.append(old.row(item.student, item.notebook))
        else:
            todo.append(task)
    return skipped, todo
