"""What every learner was given or may copy without copying a classmate: the assignment's exercises and its boilerplate.

The exercises are the assignment's nbgrader solution code cells (by `grade_id`, from the source notebooks, else the
released ones). Boilerplate is every code cell of the released notebooks (stubs, demos, check cells), the reference
solution (the source notebooks, `### BEGIN/END SOLUTION` lines dropped) and the code blocks of their markdown.
Instructor files, but read with the same bounds as a submission.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

MARKER = re.compile(r"^\s*### (BEGIN|END) (SOLUTION|HIDDEN TESTS)\s*$")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
HANDOUT_BYTES = 20 << 20  # an instructor's notebook larger than this is refused (the workbook's are ~25 kB)


class SimilarityError(Exception):
    """A problem that stops the whole run (no handout, too many notebooks, a missing public source); one line."""


@dataclass(frozen=True, order=True)
class Exercise:
    """One solution cell of the assignment: its notebook (file stem) and nbgrader grade_id."""

    notebook: str
    grade_id: str

    def __str__(self) -> str:
        return f"{self.notebook}/{self.grade_id}"


@dataclass
class Handout:
    """The exercises in notebook and cell order, and every text that is boilerplate for all of them."""

    exercises: list[Exercise]
    boilerplate: list[str] = field(default_factory=list)

    @property
    def notebooks(self) -> list[str]:
        """The notebooks that hold an exercise, in order."""
        return list(dict.fromkeys(e.notebook for e in self.exercises))


def cell_text(cell: dict) -> str:
    """A cell's source as one string (nbformat stores a string or a list of lines)."""
    src = cell.get("source", "")
    return "".join(s for s in src if isinstance(s, str)) if isinstance(src, list) else src if isinstance(src, str) else ""


def nbgrader_meta(cell: dict) -> dict:
    """The cell's `metadata.nbgrader` dict, or {} when absent or not a dict."""
    meta = cell.get("metadata")
    meta = meta.get("nbgrader") if isinstance(meta, dict) else None
    return meta if isinstance(meta, dict) else {}


def without_markers(text: str) -> str:
    """The text without nbgrader's BEGIN/END SOLUTION and HIDDEN TESTS lines."""
    return "".join(ln for ln in text.splitlines(keepends=True) if not MARKER.match(ln))


def _cells(path: Path) -> list[dict]:
    try:
        if path.stat().st_size > HANDOUT_BYTES:
            raise SimilarityError(f"{path} is larger than {HANDOUT_BYTES >> 20} MiB")
        nb = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        raise SimilarityError(f"cannot read {path}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise SimilarityError(f"{path} is not a notebook (no list of cells)")
    return [c for c in cells if isinstance(c, dict)]


def load_handout(source: Path, release: Path) -> Handout:
    """The exercises (from `source`, else `release`) and the boilerplate of both folders."""
    folders = [f for f in (source, release) if f.is_dir() and any(f.glob("*.ipynb"))]
    if not folders:
        raise SimilarityError(f"no notebooks in the assignment's source ({source}) or release ({release}) folder")
    exercises: list[Exercise] = []
    boilerplate: list[str] = []
    for folder in folders:
        for path in sorted(folder.glob("*.ipynb")):
            for cell in _cells(path):
                text = cell_text(cell)
                if cell.get("cell_type") == "markdown":
                    boilerplate += FENCE.findall(text)
                    continue
                if cell.get("cell_type") != "code":
                    continue
                boilerplate.append(without_markers(text))
                meta = nbgrader_meta(cell)
                gid = meta.get("grade_id")
                if folder == folders[0] and meta.get("solution") and isinstance(gid, str) and gid:
                    exercises.append(Exercise(path.stem, gid))
    if not exercises:
        raise SimilarityError(f"the assignment's notebooks in {folders[0]} have no nbgrader solution code cell")
    return Handout(list(dict.fromkeys(exercises)), boilerplate)
