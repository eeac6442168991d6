"""Read a submitted notebook without trusting it, then sanitize it the way `nbgrader autograde` does."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import nbformat
from nbformat import NotebookNode

from ...settings import NOTEBOOK_DEPTH, NOTEBOOK_TEXT_CHARS, NOTEBOOK_VALUES
from ..discover.submission import Refused, Submission, Unreadable
from ..pages.hidden_tests import replace_hidden

if TYPE_CHECKING:  # (the helper process that parses notebooks never loads nbgrader.api and SQLAlchemy)
    from ..discover.assignment import NotebookSpec



@dataclass
class Sanitized:
    """A submission ready to run: cells restored from the source, and what was found on the way."""

    nb: NotebookNode
    flags: list[str] = field(default_factory=list)  # suspected cheating (edited locked cells)
    notes: list[str] = field(default_factory=list)  # repairs and oddities (missing, moved, retyped cells)


def notebook_bytes(submission: Submission, name: str, max_bytes: int) -> bytes:
    """The bytes of the submitted notebook `name`, within the size limit; Unreadable (Refused: flagged) with why."""
    rel = f"{name}.ipynb"
    why = submission.why_refused(rel)
    if why:
        raise Refused(f"{why}; scored 0")
    st = submission.files.get(rel)
    if st is None:
        raise Unreadable("no submitted notebook")
    if st.st_size == 0:
        raise Unreadable("the notebook file is empty")
    if st.st_size > max_bytes:
        raise Unreadable(f"the notebook file is {st.st_size / 2**20:.0f} MB (more than the limit of {max_bytes / 2**20:g} MB)")
    try:
        return submission.read(rel, max_bytes)
    except FileNotFoundError:
        raise Unreadable("no submitted notebook") from None
    except OSError as exc:
        raise Unreadable(f"cannot read the notebook ({exc.strerror})") from None


def shape_problem(data: dict[str, Any], max_cells: int, max_depth: int = NOTEBOOK_DEPTH,
                  max_text: int = NOTEBOOK_TEXT_CHARS, max_values: int = NOTEBOOK_VALUES) -> str | None:
    """What makes a parsed notebook too big to read on (too many cells or values, too deep, a text too long), or None.

    One pass over the parsed JSON, before nbformat validates it (its cost grows with every cell and value)."""
    cells = data["cells"]
    if len(cells) > max_cells:
        return f"it has {len(cells)} cells, more than the limit of {max_cells}"
    stack: list[tuple[Any, int]] = [(data, 1)]
    values = 1
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            if len(value) > max_text:
                return f"it holds a text of {len(value)} characters, more than the limit of {max_text}"
            continue
        if not isinstance(value, (dict, list)):
            continue
        if depth > max_depth:
            return f"it is nested more than {max_depth} levels deep"
        values += len(value) * (2 if isinstance(value, dict) else 1)  # (counted before they are walked)
        if values > max_values:
            return f"it holds more than {max_values} JSON values"
        if isinstance(value, dict):
            stack.extend((k, depth) for k in value)
            value = value.values()
        stack.extend((v, depth + 1) for v in value)
    for cell in cells:
        source = cell.get("source") if isinstance(cell, dict) else None
        if isinstance(source, list) and sum(len(s) for s in source if isinstance(s, str)) > max_text:
            return f"a cell's source is more than the limit of {max_text} characters"
    return None


def parse_submission(raw: bytes, max_cells: int) -> NotebookNode:
    """The notebook in a submitted file's bytes (read by `notebook_bytes`, or sent to a cluster worker), or Unreadable;
    Refused (flagged) when its shape is past a bound (`shape_problem`). Run in a bounded process (`bounded.read`)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"the notebook is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise Unreadable(f"the notebook is not valid JSON ({str(exc).splitlines()[0][:120]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list) or not isinstance(data.get("nbformat"), int):
        raise Unreadable("the file is JSON but not a notebook (no cells or nbformat version)")
    problem = shape_problem(data, max_cells)
    if problem:
        raise Refused(f"the notebook is not read: {problem}; scored 0")
    del data
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


def release_text(src: Any) -> str:
    """What the learner's copy of a locked cell holds: the source without its hidden tests."""
    return replace_hidden(src.source, "").strip()


def sanitize(nb: NotebookNode, spec: NotebookSpec, other_ids: dict[str, str] | None = None) -> Sanitized:
    """ClearOutput, DeduplicateIds and OverwriteCells as nbgrader does them, matching cells by grade_id.

    Beyond nbgrader: locked cells whose nbgrader metadata was stripped (some editors do) are found again by
    their source; a notebook with none of the spec's test cells is Unreadable (another notebook or assignment,
    named through `other_ids`: grade_id -> notebook); retyped, missing and reordered cells are noted.
    """
    out = Sanitized(nbformat.v4.new_notebook(metadata=nb.get("metadata", {})))
    seen: set[str] = set()
    foreign: list[str] = []
    bare: list[NotebookNode] = []  # cells without (valid) nbgrader metadata
    for raw in nb.get("cells", []):
        cell = _clean_cell(raw)
        if cell is None:
            continue
        nbg = _nbgrader_meta(cell)
        grade_id = nbg.get("grade_id") if nbg else None
        if nbg is not None and (not isinstance(grade_id, str) or grade_id in seen):
            del cell.metadata["nbgrader"]  # DeduplicateIds keeps the first cell of an id
            if grade_id in seen:
                out.notes.append(f"duplicate of cell {grade_id}: the copy ran as an ordinary cell")
            grade_id = None
        if grade_id is not None:
            src = spec.cells.get(grade_id)
            if src is None:
                foreign.append(grade_id)
                del cell.metadata["nbgrader"]  # an id the source lacks: an ordinary cell, as in nbgrader
            else:
                seen.add(grade_id)
                _overwrite(cell, src, out)
        if "nbgrader" not in cell.metadata:
            bare.append(cell)
        out.nb.cells.append(cell)
    recovered = _recover_by_source(bare, spec, seen, out)
    if recovered:
        out.notes.append(f"nbgrader metadata missing: {recovered} locked cell(s) found again by their source")
    grade_cells = spec.grade_cells
    if grade_cells and not any(c.name in seen for c in grade_cells):
        owners = sorted({other_ids[g] for g in foreign if other_ids and g in other_ids})
        what = f"it looks like {', '.join(owners)}" if owners else "another assignment's notebook, or every test cell deleted"
        raise Unreadable(f"none of the {len(grade_cells)} test cells of {spec.name} is in the submitted notebook ({what})")
    missing = [c.name for c in grade_cells if c.name not in seen]
    if missing:
        out.notes.append(f"test cell(s) deleted, scored 0: {', '.join(missing)}")
    order = {name: k for k, name in enumerate(spec.cells)}
    ids = [c.metadata["nbgrader"]["grade_id"] for c in out.nb.cells if "nbgrader" in c.metadata]
    late = [f"{b} after {a}" for a, b in itertools.pairwise(ids) if order[b] < order[a]]
    if late:
        out.notes.append(f"cells reordered, run in the submitted order: {', '.join(late[:5])}")
    if "kernelspec" in out.nb.metadata:  # OverwriteKernelspec: the grader's Python, whatever was saved
        out.nb.metadata.pop("kernelspec")
    return out


def _recover_by_source(bare: list[NotebookNode], spec: NotebookSpec, seen: set[str], out: Sanitized) -> int:
    """Give locked spec cells not found by id their metadata back, on the first bare cell with the same source."""
    found = 0
    for src in spec.cells.values():
        if src.name in seen or not src.locked:
            continue
        texts = {release_text(src), src.source.strip()}
        for cell in bare:
            if "nbgrader" not in cell.metadata and cell.source.strip() in texts:
                cell.metadata["nbgrader"] = {"grade_id": src.name}
                seen.add(src.name)
                _overwrite(cell, src, out)
                found += 1
                break
    return found


def _overwrite(cell: NotebookNode, src: Any, out: Sanitized) -> None:
    """OverwriteCells: type, locked, points and checksum from the source; a locked cell's source too."""
    if cell.cell_type != src.cell_type:
        out.notes.append(f"cell {src.name} was turned into {cell.cell_type}; restored to {src.cell_type}")
        cell.cell_type = src.cell_type
        if src.cell_type == "code":
            cell["outputs"], cell["execution_count"] = [], None
        else:
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
    # exactly the source's keys: a learner's own (`task`, `comment`...) would change how nbgrader's templates show it
    nbg = cell.metadata["nbgrader"] = NotebookNode({"grade": src.grade, "solution": src.solution, "locked": src.locked,
                                                    "grade_id": src.name, "checksum": src.checksum, "schema_version": 3})
    if src.grade:
        nbg["points"] = src.points
    from nbgrader.utils import compute_checksum  # (here: the helpers, which parse notebooks, never load it and tornado)

    if src.locked and compute_checksum(cell) != src.checksum:
        if cell.source.strip() != release_text(src):  # the release lacks the hidden tests
            out.flags.append(f"locked cell {src.name} edited (restored from the source before grading)")
        cell.source = src.source


