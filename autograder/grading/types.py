"""The grading data types, in one place: what one notebook is (Item, Task), what was read of it (Submitted), what
grading it gave (Graded, Result), what the summary shows (Row, its Status and Reasons), what the resume journal keeps
(Record), and the one error that stops a whole batch (GradingError).

A status or a reason's kind is an enum member, never text to search: the texts are for people.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..settings import RECORD_DIGEST_CHARS

if TYPE_CHECKING:
    from nbformat import NotebookNode

# Bump when a change to the grading machinery may change a grade: the runner, sanitising, scoring, the sandbox and
# worker, the reading of notebooks. A change to a check (its code, the code it reaches, its tolerance) or to the
# judging every check shares needs no bump: each record keeps their digests (store/dependencies.py).
GRADER_VERSION = f"{__version__}/grading-4"


def short_digest(data: bytes | hashlib._Hash) -> str:
    """The SHA-256 of `data` (or this hash's), shortened to what a resume record keeps of one dependency."""
    h = data if not isinstance(data, bytes) else hashlib.sha256(data)
    return h.hexdigest()[:RECORD_DIGEST_CHARS]


def grader_version() -> str:
    """The grader's version as a record keeps it: GRADER_VERSION, and the Python that compiled the checks."""
    return f"{GRADER_VERSION} python {sys.version_info.major}.{sys.version_info.minor}"


@dataclass
class Depends:
    """What one notebook's grade depended on, each part as a digest or a value; `checks` is filled once it ran."""

    grader: str  # GRADER_VERSION and Python's version: the grading machinery no other part covers
    submission: str  # the submitted file's digest
    cells: dict[str, str]  # source cell -> digest (the key "" : the names of the assignment's other notebooks' cells)
    settings: dict[str, Any]  # "Limits.cell_timeout" -> value, and the other settings of a grade or its feedback
    judging: str = ""  # the shared judging code's digest, when a check ran
    checks: dict[str, str] = field(default_factory=dict)  # check -> digest, for every check that ran

    def to_json(self) -> dict[str, Any]:
        """As JSON values."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> Depends:
        """From JSON values (KeyError, TypeError or ValueError when they are not a record of this version)."""
        return cls(str(data["grader"]), str(data["submission"]), {str(k): str(v) for k, v in data["cells"].items()},
                   dict(data["settings"]), str(data["judging"]), {str(k): str(v) for k, v in data["checks"].items()})


class GradingError(Exception):
    """A problem that stops the whole batch (bad assignment, missing gradebook); the message is one line."""


class Status(str, enum.Enum):
    """What became of one notebook in this run (its value is the text the summary and the CSV show)."""

    GRADED = "graded"
    SKIPPED = "skipped (unchanged)"  # graded by an earlier run from the same inputs; its record is reused
    NOT_GRADED = "not graded"

    def __str__(self) -> str:
        return self.value


class Code(str, enum.Enum):
    """The kind of a Reason (stable: the journal keeps it)."""

    STOPPED = "stopped"  # the worker stopped part-way (time limit, protocol, tampering): later test cells score 0
    COULD_NOT_RUN = "could-not-run"  # nothing of the notebook ran
    UNREADABLE = "unreadable"  # the file cannot be read as a notebook (missing, too big, not JSON, refused)
    NOTE = "note"  # what else the grader noticed: a limit hit, a cell missing, an error in a solution cell
    UNSANDBOXED = "unsandboxed"  # graded with --unsafe-no-sandbox
    GRADER_ERROR = "grader-error"  # a bug of the grader while grading this notebook (graded 0, the batch goes on)
    STORE_FAILED = "store-failed"  # its grade could not be stored (the next run grades it again)
    CLUSTER_LOST = "cluster-lost"  # the cluster lost its task after its retries (the next run grades it again)
    EDITED_STATE = "edited-state"  # its resume record failed authentication: ignored, regraded
    UNNAMED = "unnamed"  # the submission folder's name cannot be a student id
    LATE = "late"  # how late, and the penalty
    STEP_FAILED = "step-failed"  # a step after grading (late penalty, copying other files) failed for this submission


@dataclass(frozen=True)
class Reason:
    """Why a row is as it is: a kind, for programs, and a sentence, for people."""

    code: Code
    text: str


@dataclass(frozen=True)
class Item:
    """One notebook of one student's submission."""

    student: str
    notebook: str
    path: Path

    @property
    def label(self) -> str:
        return f"{self.student}/{self.notebook}"


@dataclass(frozen=True)
class Task:
    """One notebook to grade, with the fingerprint of its inputs (kept in its record once stored)."""

    item: Item
    fingerprint: str
    depends: Depends | None = None  # what its grade depends on, but the checks (known once it ran)


@dataclass
class Submitted:
    """One notebook as read from its submission, with everything grading needs of the submission's files."""

    data: bytes  # the notebook file
    files: dict[str, str]  # the other files, as `Submission.other_files` gives them
    flags: list[str]  # the submission's refused files (links, FIFOs, devices, outside hard links), named


@dataclass
class Graded:
    """One notebook, graded: its scores, comments, the autograded notebook and what the grader noticed."""

    scores: dict[str, tuple[float | None, float]]  # grade_id -> (auto_score, max_score)
    comments: dict[str, str | None]  # solution grade_id -> auto_comment
    nb: NotebookNode | None
    flags: list[str] = field(default_factory=list)  # suspected cheating: for the instructor to review
    reason: str = ""  # why some or all cells could not be graded normally
    ran: bool = True  # False: nothing of the notebook ran (unreadable, or the worker died at once)
    notes: list[str] = field(default_factory=list)  # what else happened (limits hit, cells missing or moved)
    misconceptions: list[str] = field(default_factory=list)  # ids behind the failed checks, for the class report
    cause: Code | None = None  # set when it was not graded for a reason of its own (UNREADABLE, GRADER_ERROR)
    data: bytes | None = None  # the autograded notebook file, made safe and serialised where it was graded
    digest: str | None = None  # its SHA-256
    checks: list[str] = field(default_factory=list)  # the checks that ran (judged, or started when the worker stopped)
    verdicts: dict[str, list[Verdict]] = field(default_factory=dict)  # grade_id -> each check's verdict, in order

    @property
    def score(self) -> float:
        """Points earned (cells awaiting manual grading count 0)."""
        return sum(s or 0.0 for s, _ in self.scores.values())

    @property
    def max_score(self) -> float:
        """Points possible."""
        return sum(m for _, m in self.scores.values())


@dataclass
class Result:
    """What an executor hands back for one task: the graded notebook, or why it could not even be read."""

    task: Task
    graded: Graded | None = None
    why: Reason | None = None  # when graded is None: UNREADABLE, GRADER_ERROR (stored as 0) or CLUSTER_LOST (not stored)
    flags: list[str] = field(default_factory=list)  # an unreadable notebook's own flags (it was refused)
    timestamp: str | None = None  # the submission's time, read with the submission


@dataclass
class Row:
    """A line of the summary table and of the CSV."""

    student: str
    notebook: str
    score: float
    max_score: float
    status: Status
    flags: list[str] = field(default_factory=list)  # suspected cheating, for the instructor to review
    reasons: list[Reason] = field(default_factory=list)  # why it could not be graded, or what the grader noticed
    misconceptions: list[str] = field(default_factory=list)  # ids of the likely mistakes (the class report counts them)
    late: str = ""  # how late the submission is ("2 d 3 h"), whatever the penalty; "" when on time
    attempted: bool = True  # False when every solution cell is as released (nbgrader's "No response.")

    @property
    def reason(self) -> str:
        """The reasons as one sentence list, for the summary, the CSV and the class report."""
        return "; ".join(dict.fromkeys(r.text for r in self.reasons if r.text))

    def has(self, code: Code) -> bool:
        """Whether one of its reasons is of this kind."""
        return any(r.code is code for r in self.reasons)

    def add(self, code: Code, text: str) -> None:
        """One more reason (a reason already given is not repeated)."""
        if not any(r.code is code and r.text == text for r in self.reasons):
            self.reasons.append(Reason(code, text))


@dataclass(frozen=True)
class Verdict:
    """One check's verdict in a grade cell, as a record keeps it: its status and the first line of what it said."""

    check: str
    status: str
    sentence: str

    def to_json(self) -> list[str]:
        """As JSON values."""
        return [self.check, self.status, self.sentence]


@dataclass
class CellResult:
    """One grade cell of a graded notebook, as its record keeps it: its points and its checks' verdicts."""

    points: float | None
    max_points: float
    verdicts: list[Verdict] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """As JSON values."""
        return {"points": self.points, "max": self.max_points, "verdicts": [v.to_json() for v in self.verdicts]}

    @classmethod
    def from_json(cls, data: Any) -> CellResult:
        """From JSON values (KeyError, TypeError or ValueError when they are not one)."""
        points = data["points"]
        return cls(None if points is None else float(points), float(data["max"]),
                   [Verdict(str(c), str(s), str(t)) for c, s, t in data["verdicts"]])


def cells_json(cells: dict[str, CellResult] | None) -> dict[str, Any] | None:
    """Grade cells as JSON values (None stays None)."""
    return None if cells is None else {name: cell.to_json() for name, cell in cells.items()}


def cells_from_json(data: Any) -> dict[str, CellResult] | None:
    """Grade cells from JSON values (None stays None)."""
    return None if data is None else {str(name): CellResult.from_json(cell) for name, cell in data.items()}


@dataclass
class Record:
    """A notebook's entry in the resume journal: what it was graded from, and the row it gave."""

    fingerprint: str
    score: float
    max_score: float
    flags: list[str]
    reasons: list[Reason]
    misconceptions: list[str]
    attempted: bool
    autograded_sha256: str | None  # the autograded notebook this grader wrote (None: none was written)
    depends: Depends | None = None  # what its grade depended on (None: a record of an earlier version, regraded)
    cells: dict[str, CellResult] = field(default_factory=dict)  # grade_id -> its points and verdicts
    # A regrade's score changes: the grade cells as they were when the regrade (its `round`) began, kept until the
    # round's report is written (`settled`) and shown until the next round begins (outputs/score_changes.py)
    before: dict[str, CellResult] | None = None
    round: int = 0
    settled: bool = True

    def to_json(self) -> dict[str, Any]:
        """The record as JSON values."""
        return {"fingerprint": self.fingerprint, "score": self.score, "max_score": self.max_score, "flags": self.flags,
                "reasons": [[r.code.value, r.text] for r in self.reasons], "misconceptions": self.misconceptions,
                "attempted": self.attempted, "autograded_sha256": self.autograded_sha256,
                "depends": None if self.depends is None else self.depends.to_json(), "cells": cells_json(self.cells),
                "before": cells_json(self.before), "round": self.round, "settled": self.settled}

    @classmethod
    def from_json(cls, data: Any) -> Record | None:
        """The record these JSON values hold, or None when they are not one (a record of another version)."""
        try:
            reasons = [Reason(Code(code), str(text)) for code, text in data["reasons"]]
            digest = data["autograded_sha256"]
            record = cls(str(data["fingerprint"]), float(data["score"]), float(data["max_score"]),
                         [str(f) for f in data["flags"]], reasons, [str(m) for m in data["misconceptions"]][:100],
                         data["attempted"] is True, None if digest is None else str(digest))
            if data.get("depends") is not None:
                record.depends = Depends.from_json(data["depends"])
                record.cells = cells_from_json(data["cells"]) or {}
                record.before = cells_from_json(data["before"])
                record.round, record.settled = int(data["round"]), data["settled"] is True
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        return record

    def row(self, student: str, notebook: str) -> Row:
        """The summary row of a notebook skipped because this record matches it."""
        return Row(student, notebook, self.score, self.max_score, Status.SKIPPED, list(self.flags), list(self.reasons),
                   list(self.misconceptions), attempted=self.attempted)
