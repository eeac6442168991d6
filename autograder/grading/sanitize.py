"""Read a submitted notebook without trusting it, then sanitize it the way `nbgrader autograde` does."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode
from nbgrader import utils as nbutils

from .source import NotebookSpec

MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024  # the workbook's notebooks are ~100 kB; a bigger file is not a real submission
HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[^\n]*\n?", re.S | re.M)
HIDDEN_NOTE = "# (hidden tests: run by the grader, source not shown)\n"


class Unreadable(Exception):
    """The submission cannot be graded at all; the message is the reason recorded for it."""


@dataclass
class Sanitized:
    """A submission ready to run: cells restored from the source, and what was found on the way."""

    nb: NotebookNode
    flags: list[str] = field(default_factory=list)


def read_submission(path: Path) -> NotebookNode:
    """The notebook at `path`, or Unreadable with a short reason."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise Unreadable("no submitted notebook") from None
    except OSError as exc:
        raise Unreadable(f"cannot read the notebook ({exc.strerror})") from None
    if size == 0:
        raise Unreadable("the notebook file is empty")
    if size > MAX_NOTEBOOK_BYTES:
        raise Unreadable(f"the notebook file is {size / 2**20:.0f} MB (more than {MAX_NOTEBOOK_BYTES // 2**20} MB)")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"the notebook is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise Unreadable(f"cannot read the notebook ({exc.strerror})") from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise Unreadable(f"the notebook is not valid JSON ({str(exc).splitlines()[0][:120]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list) or not isinstance(data.get("nbformat"), int):
        raise Unreadable("the file is JSON but not a notebook (no cells or nbformat version)")
    try:
        nb = nbformat.reads(text, as_version=4, capture_validation_error={})
    except Exception as exc:
        raise Unreadable(f"the notebook cannot be read by nbformat ({type(exc).__name__})") from None
    return nb


def _nbgrader_meta(cell: Any) -> dict[str, Any] | None:
    meta = cell.get("metadata")
    nbg = meta.get("nbgrader") if isinstance(meta, dict) else None
    return nbg if isinstance(nbg, dict) else None


def _clean_cell(raw: Any) -> NotebookNode | None:
    """A well-formed code/markdown/raw cell from whatever the submission holds (None: drop it)."""
    if not isinstance(raw, dict) or raw.get("cell_type") not in ("code", "markdown", "raw"):
        return None
    source = raw.get("source", "")
    if isinstance(source, list):
        source = "".join(s for s in source if isinstance(s, str))
    if not isinstance(source, str):
        return None
    meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    cell = NotebookNode({"cell_type": raw["cell_type"], "metadata": NotebookNode(meta), "source": source})
    if isinstance(raw.get("id"), str):
        cell["id"] = raw["id"]
    if cell.cell_type == "code":
        cell["outputs"], cell["execution_count"] = [], None  # ClearOutput
    return cell


def sanitize(nb: NotebookNode, spec: NotebookSpec) -> Sanitized:
    """ClearOutput, DeduplicateIds and OverwriteCells as nbgrader does them, matching cells by grade_id."""
    out = Sanitized(nbformat.v4.new_notebook(metadata=nb.get("metadata", {})))
    seen: set[str] = set()
    for raw in nb.get("cells", []):
        cell = _clean_cell(raw)
        if cell is None:
            continue
        nbg = _nbgrader_meta(cell)
        grade_id = nbg.get("grade_id") if nbg else None
        if nbg is not None and (not isinstance(grade_id, str) or grade_id in seen):
            del cell.metadata["nbgrader"]  # DeduplicateIds keeps the first cell of an id
            grade_id = None
        if grade_id is not None:
            seen.add(grade_id)
            src = spec.cells.get(grade_id)
            if src is None:
                del cell.metadata["nbgrader"]  # an id the source lacks: an ordinary cell, as in nbgrader
            else:
                _overwrite(cell, src, out.flags)
        out.nb.cells.append(cell)
    for src in spec.cells.values():
        if src.grade and src.name not in seen:
            out.flags.append(f"grade cell {src.name} missing")
    if "kernelspec" in out.nb.metadata:  # OverwriteKernelspec: the grader's Python, whatever was saved
        out.nb.metadata.pop("kernelspec")
    return out


def _overwrite(cell: NotebookNode, src: Any, flags: list[str]) -> None:
    """OverwriteCells: type, locked, points and checksum from the source; a locked cell's source too."""
    if cell.cell_type != src.cell_type:
        cell.cell_type = src.cell_type
        if src.cell_type == "code":
            cell["outputs"], cell["execution_count"] = [], None
        else:
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
    nbg = cell.metadata["nbgrader"]
    nbg.update({"grade": src.grade, "solution": src.solution, "locked": src.locked, "grade_id": src.name,
                "checksum": src.checksum, "schema_version": 3})
    if src.grade:
        nbg["points"] = src.points
    else:
        nbg.pop("points", None)
    if src.locked and nbutils.compute_checksum(cell) != src.checksum:
        if cell.source.strip() != HIDDEN.sub("", src.source).strip():  # the release lacks the hidden tests
            flags.append(f"locked cell {src.name} edited (restored from the source)")
        cell.source = src.source


def redact_hidden_tests(source: str) -> str:
    """The grade cell's source without the hidden tests, for the autograded notebook and the feedback."""
    return HIDDEN.sub(HIDDEN_NOTE, source)
