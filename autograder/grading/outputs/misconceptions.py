"""The most common misconceptions behind the failed checks of a batch: each with the students who hit it, for the
class report's section and its CSV (reports/<assignment>-misconceptions.csv)."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...checks import MISCONCEPTIONS
from ...checks.messages import METHOD_OF, at_level
from ..store.files import atomic_write
from ..types import Row
from .text import csv_text


@dataclass(frozen=True)
class Misconception:
    """One misconception as the class hit it."""

    id: str
    sentence: str
    method: str
    students: tuple[str, ...]
    notebooks: tuple[str, ...]


def common_misconceptions(rows: Sequence[Row]) -> list[Misconception]:
    """Misconceptions by the number of students who hit them (most first), each student counted once."""
    students: dict[str, set[str]] = defaultdict(set)
    notebooks: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        for m in r.misconceptions:
            students[m].add(r.student)
            notebooks[m].add(r.notebook)
    ranked = sorted(students, key=lambda m: (-len(students[m]), m))
    # the instructor's report: each sentence whole, its solution part included (messages.at_level)
    return [Misconception(m, at_level(MISCONCEPTIONS.get(m, ""), "solution").replace("{name}", "a node"),
                          METHOD_OF.get(m.split(".")[0], m.split(".")[0]),
                          tuple(sorted(students[m])), tuple(sorted(notebooks[m]))) for m in ranked]


def render_csv(rows: Sequence[Row]) -> str:
    """misconception, method, students (count), the students, the sentence; most common first."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["misconception", "method", "students", "student_ids", "notebooks", "sentence"])
    for m in common_misconceptions(rows):
        w.writerow([*csv_text([m.id, m.method]), len(m.students), *csv_text([" ".join(m.students), " ".join(m.notebooks),
                                                                            m.sentence])])
    return buf.getvalue()


def write(path: Path, rows: Sequence[Row]) -> None:
    """Write the CSV whole or not at all (its cells are one line each already: its own line ends, \\r\\n, stay as
    the csv module wrote them)."""
    atomic_write(path, render_csv(rows).encode("utf-8"))
