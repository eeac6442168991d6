"""What the instructor wrote: the assignment's cells as `nbgrader generate_assignment` stored them in the gradebook."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from nbgrader.api import Gradebook, MissingEntry

from ... import __version__
from ... import checks as catalog
from ...loader import CheckCall, check_calls, only_check_calls
from ..types import GradingError
from .course import without_password


@dataclass(frozen=True)
class SourceCell:
    """A cell with nbgrader metadata, as the gradebook stores it (hidden tests included)."""

    name: str
    cell_type: str
    source: str
    checksum: str
    locked: bool
    grade: bool
    solution: bool
    points: float | None
    calls: tuple[CheckCall, ...] | None  # None: a grade cell that is not only check calls (run as code)


@dataclass
class NotebookSpec:
    """One notebook of the assignment."""

    name: str
    cells: dict[str, SourceCell] = field(default_factory=dict)

    @property
    def grade_cells(self) -> list[SourceCell]:
        """The grade cells, in source order."""
        return [c for c in self.cells.values() if c.grade]

    @property
    def max_score(self) -> float:
        """Points possible in this notebook."""
        return sum(c.points or 0.0 for c in self.grade_cells)


@dataclass
class AssignmentSpec:
    """An assignment: its notebooks and a fingerprint that changes whenever a source cell does."""

    name: str
    notebooks: dict[str, NotebookSpec]
    fingerprint: str


def refuse_unknown_checks(notebook: str, cell: str, source: str) -> None:
    """A grade cell that names a check this grader lacks is refused before anything is graded: inside the sandbox
    `check(...)` only says the grader runs it, so the cell would pass for everyone, a blank notebook included."""
    unknown = [n for call in check_calls(source) for n in call.names if n not in catalog.BY_NAME]
    if unknown:
        raise GradingError(f"{notebook}: grade cell {cell!r} calls check {unknown[0][:80]!r}, which this grader "
                           f"(autograd-workbook {__version__}) does not have: correct the name in the source notebook "
                           f"and run `nbgrader generate_assignment` again, or install the version the course was "
                           f"written for")


def load_assignment(db_url: str, assignment: str) -> AssignmentSpec:
    """Read the assignment's source cells from the gradebook that `nbgrader generate_assignment` filled."""
    digest = hashlib.sha256()
    notebooks: dict[str, NotebookSpec] = {}
    try:
        with Gradebook(db_url) as gb:
            try:
                record = gb.find_assignment(assignment)
            except MissingEntry:
                raise GradingError(f"assignment {assignment!r} is not in the gradebook ({without_password(db_url)}): "
                                   f"run `nbgrader generate_assignment {assignment}` first") from None
            for nb in sorted(record.notebooks, key=lambda n: n.name):
                points = {g.name: float(g.max_score) for g in nb.grade_cells}
                solutions = {s.name for s in nb.solution_cells}
                spec = NotebookSpec(nb.name)
                for sc in nb.source_cells:  # in source order
                    grade = sc.name in points
                    calls = only_check_calls(sc.source, catalog.BY_NAME) if grade and sc.cell_type == "code" else None
                    if grade and sc.cell_type == "code":
                        refuse_unknown_checks(nb.name, sc.name, sc.source)
                    spec.cells[sc.name] = SourceCell(sc.name, sc.cell_type, sc.source, sc.checksum or "", bool(sc.locked),
                                                     grade, sc.name in solutions, points.get(sc.name), calls)
                    digest.update(f"{nb.name}\0{sc.name}\0{sc.checksum}\0{points.get(sc.name)}\0{sc.source}\0".encode())
                notebooks[nb.name] = spec
    except GradingError:
        raise
    except Exception as exc:
        said = without_password(db_url, str(exc).splitlines()[0][:200] if str(exc) else "")
        raise GradingError(f"cannot read the gradebook {without_password(db_url)}: {type(exc).__name__}: {said}") from None
    if not notebooks:
        raise GradingError(f"assignment {assignment!r} has no notebooks in the gradebook: "
                           f"run `nbgrader generate_assignment {assignment}` first")
    return AssignmentSpec(assignment, notebooks, digest.hexdigest())
