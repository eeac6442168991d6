"""Each student's solution cells, read as hostile data: bounded before parsing, never executed.

A notebook is read through `Submission` (no link, FIFO or device is ever opened), at most `Limits.notebook_mb`; only
its first `Similarity.cells_per_notebook` cells are looked at, and only code cells whose grade_id is one of the
assignment's exercises (the first such cell each); each is cut at `Similarity.cell_bytes`. A student whose folder
name is not printable text is left out with a note, as `grade` leaves them ungraded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..grading.discover.submission import Submission, Unreadable
from ..grading.outputs.text import valid_text
from .handout import Exercise, Handout, SimilarityError, cell_text, nbgrader_meta


@dataclass
class Answers:
    """One student's answers: exercise -> the cell's code as submitted."""

    student: str
    cells: dict[Exercise, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Bounds:
    """How much of a class is read."""

    notebook_bytes: int
    cells_per_notebook: int
    cell_bytes: int
    max_notebooks: int


def printable(text: str) -> str:
    """`text` as one printable line (a learner's string where it is printed)."""
    return valid_text(text).replace("\n", "\ufffd").replace("\t", " ")


def read_notebook(data: bytes, wanted: dict[str, Exercise], bounds: Bounds) -> tuple[dict[Exercise, str], str]:
    """The wanted solution cells of one notebook's bytes, and a note ("" when all was well)."""
    try:
        nb = json.loads(data)
    except (ValueError, RecursionError) as exc:
        return {}, f"not a notebook ({type(exc).__name__})"
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        return {}, "not a notebook (no list of cells)"
    note = f"only its first {bounds.cells_per_notebook} cells were read" if len(cells) > bounds.cells_per_notebook else ""
    found: dict[Exercise, str] = {}
    for cell in cells[: bounds.cells_per_notebook]:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        gid = nbgrader_meta(cell).get("grade_id")
        exercise = wanted.get(gid) if isinstance(gid, str) else None
        if exercise is None or exercise in found:
            continue
        text = cell_text(cell)
        if len(text) > bounds.cell_bytes:
            text = text[: bounds.cell_bytes]
            note = note or f"a cell longer than {bounds.cell_bytes} characters was cut"
        found[exercise] = valid_text(text)
    return found, note


def read_class(folders: dict[str, Path], handout: Handout, bounds: Bounds) -> tuple[list[Answers], list[str]]:
    """Every student's answers (student -> their submission folder), and one note per problem met."""
    notes: list[str] = []
    names = [s for s in folders if valid_text(s) == s and "\n" not in s]
    for s in folders:
        if s not in names:
            notes.append(f"{printable(s)}: the folder's name is not printable text: left out")
    total = len(names) * len(handout.notebooks)
    if total > bounds.max_notebooks:
        raise SimilarityError(f"{len(names)} students x {len(handout.notebooks)} notebooks = {total} notebooks, more than "
                         f"Similarity.max_notebooks ({bounds.max_notebooks})")
    by_notebook: dict[str, dict[str, Exercise]] = {}
    for e in handout.exercises:
        by_notebook.setdefault(e.notebook, {})[e.grade_id] = e
    works = []
    for student in names:
        work = Answers(student)
        submission = Submission.scan(folders[student])
        for notebook, wanted in by_notebook.items():
            rel = f"{notebook}.ipynb"
            try:
                data = submission.read(rel, bounds.notebook_bytes)
            except FileNotFoundError:
                continue  # not handed in: nothing to compare
            except (Unreadable, OSError) as exc:
                notes.append(f"{student}/{rel}: {printable(str(exc))}")
                continue
            found, note = read_notebook(data, wanted, bounds)
            work.cells.update(found)
            if note:
                notes.append(f"{student}/{rel}: {note}")
        works.append(work)
    return works, notes
