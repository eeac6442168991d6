"""What a notebook's grade depends on that is known before it runs: the submitted file, the assignment's source cells,
the grader's version and the settings (`store.dependencies.Depends`; the checks that ran are added once it ran)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ...settings import Limits
from ..types import Depends, Item, Task, grader_version, short_digest
from .assignment import AssignmentSpec
from .course import Course
from .submission import Refused, Submission


def submission_digest(path: Path) -> str:
    """The submitted file's SHA-256 (read through `Submission`: never a link, FIFO or device; those are refused)."""
    h = hashlib.sha256()
    try:
        with Submission.scan(path.parent).open(path.name) as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except Refused as exc:
        h.update(f"<refused: {exc}>".encode("utf-8", "surrogatepass"))
    except OSError:
        h.update(b"<missing>")
    return short_digest(h)


def settings_values(limits: Limits, unsafe_no_sandbox: bool = False, hints: str = "misconception") -> dict[str, Any]:
    """Every setting a notebook's grade (or its feedback) depends on but the tolerance (a check's own): each trait of
    `Limits` by name, so a new trait counts with no other edit; whether it was graded outside the sandbox; the hint
    level when it is not the default."""
    values: dict[str, Any] = {f"Limits.{name}": getattr(limits, name)
                              for name in sorted(limits.trait_names(config=True))}
    if unsafe_no_sandbox:  # a grade earned outside the sandbox is regraded once the sandbox is back
        values["unsafe_no_sandbox"] = True
    if hints != "misconception":
        values["Hints.level"] = hints
    return values


def cell_digests(spec: AssignmentSpec, notebook: str) -> dict[str, str]:
    """A digest of each source cell of the notebook (its source, checksum and points); under "" one of the names of
    the other notebooks' cells (a cell moved between notebooks is named so)."""
    cells = {c.name: short_digest(json.dumps([c.cell_type, c.source, c.checksum, c.locked, c.grade, c.solution,
                                              c.points]).encode("utf-8", "surrogatepass"))
             for c in spec.notebooks[notebook].cells.values()}
    others = sorted(f"{nb}/{name}" for nb, s in spec.notebooks.items() if nb != notebook for name in s.cells)
    cells[""] = short_digest(json.dumps(others).encode("utf-8", "surrogatepass"))
    return cells


def tasks(course: Course, spec: AssignmentSpec, students: list[str], settings: dict[str, object]) -> list[Task]:
    """Every notebook of the students' submissions, with what its grade depends on: what there is to grade."""
    found = []
    grader = grader_version()
    cells = {name: cell_digests(spec, name) for name in spec.notebooks}
    for student in students:
        folder = course.submitted(student, spec.name)
        for name in spec.notebooks:
            item = Item(student, name, folder / f"{name}.ipynb")
            depends = Depends(grader, submission_digest(item.path), cells[name], settings)
            fingerprint = hashlib.sha256(json.dumps(depends.to_json(), sort_keys=True, default=repr).encode()).hexdigest()
            found.append(Task(item, fingerprint, depends))
    return found
