"""What the store already holds: a notebook graded by an earlier run from the very same inputs is skipped.

A notebook is skipped while nothing its grade depended on has moved since its journal record was written
(`dependencies.moved`: the file, the assignment's cells, the settings, the grader, the checks that ran) and its
autograded notebook is the very file this grader wrote. The formgrader's ⚡ Autograde button runs plain `nbgrader autograde`,
which writes the restored grade cells, hidden tests included, into `autograded/`, where `nbgrader generate_feedback`
would publish them: the grader records the hash of every autograded notebook it writes, and regrades a notebook whose
file no longer has that hash.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..types import CellResult, Depends, Record, Row, Task
from .dependencies import Digests, moved
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


NEW = "not graded before"
EARLIER = "graded by an earlier version of the grader, whose record does not say what the grade depended on"
EDITED = "its autograded notebook was changed outside the grader (the formgrader's Autograde button?)"
FORCED = "--force"
FORGED = "its resume record was edited outside the grader"


@dataclass
class Plan:
    """What a run will do: the rows of the notebooks still graded, the tasks to grade and why each, and the regrade
    round their records join (a round's score changes are reported once all of it is stored)."""

    skipped: list[Row]
    todo: list[Task]
    why: dict[str, list[str]]  # task label -> why it is graded (phrases)
    round: int  # the regrade round this run's regraded notebooks belong to
    before: dict[str, dict[str, CellResult] | None] = field(default_factory=dict)  # journal key -> the cells before

    def reasons(self) -> list[tuple[str, int]]:
        """Each reason with the number of notebooks it regrades, most first, then by reason."""
        counts = Counter(phrase for phrases in self.why.values() for phrase in phrases)
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def why_graded(record: Record | None, depends: Depends, autograded: Path, digests: Digests) -> list[str]:
    """Why the store does not hold this notebook graded from these inputs (empty: it does, and is skipped): what
    its grade depended on moved (`dependencies.moved`), or its autograded notebook is not the file this grader wrote."""
    if record is None:
        return [NEW]
    if record.depends is None:
        return [EARLIER]
    why = moved(record.depends, depends, digests)
    if not why and not autograded_untouched(record, autograded):
        why.append(EDITED)
    return why


def current_round(journal: Journal, assignment: str) -> int:
    """The regrade round a run joins: one a killed run left unreported, else a new one."""
    mine = [r for k, r in journal.records.items() if k.startswith(f"{assignment}/")]
    open_rounds = [r.round for r in mine if r.round and not r.settled]
    return max(open_rounds) if open_rounds else max((r.round for r in mine), default=0) + 1


def plan(tasks: list[Task], journal: Journal, assignment: str, autograded: Callable[[str], Path], digests: Digests,
         force: bool = False) -> Plan:
    """Which notebooks to grade and why, and which are still graded (skipped: their records' rows); `force` grades
    every one. `autograded` gives a student's autograded folder of the assignment. A regraded notebook's record keeps
    its grade cells as they were when the round began (`before`), for the score-change report."""
    round_ = current_round(journal, assignment)
    out = Plan([], [], {}, round_)
    for task in tasks:
        item = task.item
        key = Journal.key(assignment, item.student, item.notebook)
        old = journal.get(key)
        assert task.depends is not None
        why = why_graded(old, task.depends, autograded(item.student) / f"{item.notebook}.ipynb", digests)
        if old is None and key in journal.rejected:
            why = [FORGED]
        if force and not why:
            why = [FORCED]
        if not why:
            assert old is not None
            out.skipped.append(old.row(item.student, item.notebook))
            continue
        out.todo.append(task)
        out.why[item.label] = why
        if old is not None and old.depends is not None:
            out.before[key] = old.before if old.round == round_ and old.before is not None else old.cells
        else:
            out.before[key] = None
    return out


def settle(journal: Journal, assignment: str, round_: int) -> list[str]:
    """Mark the round's records reported (its score-change report is written); the journal keys settled."""
    keys = [k for k, r in journal.records.items()
            if k.startswith(f"{assignment}/") and r.round == round_ and not r.settled]
    journal.append([(k, dataclasses.replace(journal.records[k], settled=True)) for k in keys])
    return keys


def moved_students(journal: Journal, assignment: str, round_: int) -> list[str]:
    """The students with a notebook whose grade cells (points or verdicts) the round changed."""
    prefix = f"{assignment}/"
    return sorted({key[len(prefix):].partition("/")[0] for key, r in journal.records.items()
                   if key.startswith(prefix) and r.round == round_ and r.before is not None and r.before != r.cells})

