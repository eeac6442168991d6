"""What the formgrader shows and may change: its Flagged? column, and autograded notebooks it rewrites.

The formgrader's ⚡ Autograde button runs plain `nbgrader autograde`, which writes the restored grade cells, hidden
tests included, into `autograded/`, where `nbgrader generate_feedback` would publish them. The grader records the
hash of every autograded notebook it writes, and regrades a notebook whose file no longer has that hash.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..types import Record


def autograded_digest(path: Path) -> str | None:
    """SHA-256 of the autograded notebook file, None when there is none."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def autograded_untouched(record: Record, path: Path) -> bool:
    """True when the autograded notebook is the very file this grader wrote (no Autograde button, no edit since)."""
    return record.autograded_sha256 == autograded_digest(path)  # None: none was written, and none is there


def flag_box(flags: list[str], previous: Record | None) -> bool | None:
    """The formgrader's Flagged? box (`SubmittedNotebook.flagged`) for a regraded notebook: True (tick it) when
    FLAGGED, False (clear it) when this grader had set it and the notebook is no longer suspect, None (leave it:
    a grader's own flag, set in the formgrader, is kept) otherwise."""
    if flags:
        return True
    if previous and previous.flags:
        return False
    return None
