"""What the formgrader shows and may change: its Flagged? column, and autograded notebooks it rewrites.

The formgrader's ⚡ Autograde button runs plain `nbgrader autograde`, which writes the restored grade cells, hidden
tests included, into `autograded/`, where `nbgrader generate_feedback` would publish them. The grader records the
hash of every autograded notebook it writes, and regrades a notebook whose file no longer has that hash.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from nbgrader.api import Gradebook, MissingEntry

AUTOGRADED_HASH = "autograded_sha256"  # the state record's key


def autograded_digest(path: Path) -> str | None:
    """SHA-256 of the autograded notebook file, None when there is none."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def autograded_untouched(record: dict[str, Any], path: Path) -> bool:
    """True when the autograded notebook is the very file this grader wrote (no Autograde button, no edit since)."""
    # a record from before this check has no hash: regrade once; None is recorded when no notebook was written
    return AUTOGRADED_HASH in record and record[AUTOGRADED_HASH] == autograded_digest(path)


def show_flags(gb: Gradebook, assignment: str, student: str, notebook: str, flags: list[str],
               previous: dict[str, Any] | None) -> None:
    """Tick the formgrader's Flagged? box (`SubmittedNotebook.flagged`) for a FLAGGED notebook.

    A grader's own flag (set in the formgrader) is kept; the box is cleared only when this grader set it and the
    regraded notebook is no longer suspect.
    """
    try:
        submitted = gb.find_submission_notebook(notebook, assignment, student)
    except MissingEntry:
        return
    if flags:
        submitted.flagged = True
    elif previous and previous.get("flags"):
        submitted.flagged = False
    gb.db.commit()
