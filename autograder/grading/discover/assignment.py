"""What the instructor wrote: the assignment's cells as `nbgrader generate_assignment` stored them in the gradebook."""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field

from nbgrader.api import Gradebook, MissingEntry

from ... import checks as catalog


def without_password(db_url: str, text: str | None = None) -> str:
    """`text` (by default the gradebook's URL itself) as an error message may show it: the URL's password as ***."""
    try:
        from sqlalchemy.engine import make_url

        url = make_url(db_url)
    except Exception:  # not a URL SQLAlchemy can parse: show no credentials part at all
        return (db_url.split("@", 1)[-1] if "@" in db_url else db_url) if text is None else text
    if text is None:
        return url.render_as_string(hide_password=True)
    return text.replace(url.password, "***") if url.password else text


class GradingError(Exception):
    """A problem that stops the whole batch (bad assignment, missing gradebook); the message is one line."""


@dataclass(frozen=True)
class CheckCall:
    """One `check("a", "b", hidden=True)` statement of a grade cell."""

    names: tuple[str, ...]
    hidden: bool


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


def parse_check_calls(source: str) -> tuple[CheckCall, ...] | None:
    """The check calls of a grade cell, or None unless the cell is only `check("name", ..., hidden=bool)` calls."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    calls: list[CheckCall] = []
    for stmt in tree.body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "check"):
            return None
        if not call.args or not all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args):
            return None
        names = tuple(a.value for a in call.args)  # type: ignore[attr-defined]
        if any(n not in catalog.BY_NAME for n in names):
            return None  # run as code: the kernel's KeyError is what plain nbgrader would record
        hidden = False
        for kw in call.keywords:
            if kw.arg != "hidden" or not (isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, bool)):
                return None
            hidden = kw.value.value
        calls.append(CheckCall(names, hidden))
    return tuple(calls) or None


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
                    calls = parse_check_calls(sc.source) if grade and sc.cell_type == "code" else None
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
