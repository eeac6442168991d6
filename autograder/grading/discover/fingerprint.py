"""A notebook's fingerprint: what its grade depends on (the submitted file, the assignment's source, the grader's
version and every setting that can change a grade), as one digest the resume journal keeps with its record."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from traitlets import TraitType
from traitlets.config import Configurable

from ...settings import Hints, Limits, Tolerance
from ..types import GRADER_VERSION, Item, Task
from .assignment import AssignmentSpec
from .course import Course
from .submission import Refused, Submission


def trait_values(settings: Configurable) -> list[object]:
    """The value of every configurable trait of a settings object, in the order its classes declare them (a trait
    added later, or by a subclass, comes last: the text of the settings declared before it stays as it was)."""
    declared: list[str] = []
    for klass in reversed(type(settings).__mro__):
        declared += [name for name, trait in vars(klass).items()
                     if isinstance(trait, TraitType) and trait.metadata.get("config") and name not in declared]
    return [getattr(settings, name) for name in declared]


def settings_text(limits: Limits, tolerance: Tolerance, unsafe_no_sandbox: bool = False,
                  hints: str = Hints.level.default_value) -> str:
    """The grading settings that can change a grade (or, the hint level, its feedback), as stable text for the
    fingerprint: every configurable trait of `Limits` and `Tolerance`, so a new one counts with no other edit."""
    values: dict[str, list[object]] = {"limits": trait_values(limits), "tolerance": trait_values(tolerance)}
    if unsafe_no_sandbox:  # a grade earned outside the sandbox is regraded once the sandbox is back
        values["unsafe_no_sandbox"] = [True]
    if hints != Hints.level.default_value:  # feedback written at another level is written again (the default's
        values["hints"] = [hints]  # fingerprint is the one it always was)
    return json.dumps(values, sort_keys=True)


def fingerprint(path: Path, spec: AssignmentSpec, settings: str) -> str:
    """Changes whenever the submitted file, the assignment's source, the grader or its settings change."""
    h = hashlib.sha256()
    try:
        with Submission.scan(path.parent).open(path.name) as f:  # never a link, FIFO or device: it is refused
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except Refused as exc:
        h.update(f"<refused: {exc}>".encode("utf-8", "surrogatepass"))
    except OSError:
        h.update(b"<missing>")
    h.update(f"\0{spec.fingerprint}\0{GRADER_VERSION}\0{settings}".encode())
    return h.hexdigest()


def tasks(course: Course, spec: AssignmentSpec, students: list[str], settings: str) -> list[Task]:
    """Every notebook of the students' submissions, with its fingerprint: what there is to grade."""
    found = []
    for student in students:
        folder = course.submitted(student, spec.name)
        for name in spec.notebooks:
            item = Item(student, name, folder / f"{name}.ipynb")
            found.append(Task(item, fingerprint(item.path, spec, settings)))
    return found
