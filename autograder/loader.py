"""Import a learner's definitions from a .py file or from a notebook's definition cells."""

from __future__ import annotations

import ast
import os
import sys
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from .checks.messages import probe_error
from .probes.safe import LearnerError, captured_output, describe, time_limit

SKIP_TAGS = frozenset({"demo", "plot", "test", "skip-import"})
NOT_DONE = "raises NotImplementedError (not done yet)"  # a stub cell's problem while loading


class UnreadableFile(Exception):
    """The path is missing, not a .py file or notebook, or cannot be parsed; the message is one line."""


@dataclass
class Loaded:
    """A learner namespace and what went wrong while building it."""

    namespace: dict[str, Any]
    problems: list[str] = field(default_factory=list)


def calls_check(source: str) -> bool:
    """True when the code calls `check(...)`: a test cell, not a definition."""
    return bool(check_calls(source))


@dataclass(frozen=True)
class CheckCell:
    """A notebook's check cell: its `check(...)` calls in order (names, hidden) and its nbgrader points."""

    label: str
    grade_id: str | None
    points: float | None
    calls: tuple[CheckCall, ...]


class CheckCall(NamedTuple):
    """One `check("a", "b", hidden=True)` call of a cell: its check names, and whether its inputs are hidden."""

    names: tuple[str, ...]
    hidden: bool


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def _is_check(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "check"


def check_calls(source: str) -> list[CheckCall]:
    """Every `check(...)` call of a cell, in source order: the names it gives as string constants, and whether it
    says `hidden=True` (the one parser of check calls: `only_check_calls` is its strict reading)."""
    tree = _parse(source)
    if tree is None:
        return []
    calls = sorted((node for node in ast.walk(tree) if _is_check(node)), key=lambda c: (c.lineno, c.col_offset))
    return [CheckCall(tuple(a.value for a in c.args if isinstance(a, ast.Constant) and isinstance(a.value, str)),
                      any(k.arg == "hidden" and isinstance(k.value, ast.Constant) and k.value.value is True
                          for k in c.keywords))
            for c in calls]


def only_check_calls(source: str, known: Container[str]) -> tuple[CheckCall, ...] | None:
    """A grade cell's check calls when the cell is nothing but `check("name", ..., hidden=bool)` statements naming
    `known` checks; None otherwise (the batch grader then runs the cell as code, as plain nbgrader does: an unknown
    name fails there with the kernel's KeyError)."""
    tree = _parse(source)
    if tree is None or not tree.body:
        return None
    for stmt in tree.body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if not (call is not None and _is_check(call) and call.args):
            return None
        assert isinstance(call, ast.Call)
        if not all(isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value in known for a in call.args):
            return None
        if not all(k.arg == "hidden" and isinstance(k.value, ast.Constant) and isinstance(k.value.value, bool)
                   for k in call.keywords):
            return None
    return tuple(check_calls(source))


def strip_magics(source: str) -> str:
    """Drop IPython magics and shell escapes, which plain Python cannot run."""
    return "\n".join(ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!")))


def is_definition_cell(cell: Any) -> bool:
    """Solution and set-up cells count; grade cells, check cells, demos and plots do not."""
    if cell.get("cell_type") != "code":
        return False
    meta = cell.get("metadata", {})
    nb = meta.get("nbgrader", {})
    if nb.get("grade") and not nb.get("solution"):
        return False
    if SKIP_TAGS & set(meta.get("tags", [])):
        return False
    return not calls_check(cell.get("source", ""))


def parts(path: Path) -> list[tuple[str, str] | CheckCell]:
    """Each part of the file in order: (label, code) to execute, or a notebook's check cell."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise UnreadableFile(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UnreadableFile(f"{path}: is a directory, expected a .py file or a notebook") from None
    except UnicodeDecodeError as exc:
        raise UnreadableFile(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise UnreadableFile(f"{path}: cannot read ({exc.strerror})") from None
    if path.suffix == ".py":
        return [(str(path), text)]
    if path.suffix != ".ipynb":
        raise UnreadableFile(f"{path}: expected a .py file or an .ipynb notebook")
    import nbformat  # only notebooks need it, and it takes most of a second to import

    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception as exc:
        raise UnreadableFile(f"{path}: not a readable notebook ({type(exc).__name__})") from None
    cells = nb.get("cells")
    if not isinstance(cells, list):
        raise UnreadableFile(f"{path}: not a notebook (no cells)")
    found: list[tuple[str, str] | CheckCell] = []
    for i, cell in enumerate(cells):
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        if is_definition_cell(cell):
            found.append((f"cell {i + 1}", strip_magics(source)))
        elif cell.get("cell_type") == "code" and calls_check(source):
            meta = cell.get("metadata", {}).get("nbgrader", {})
            points = meta.get("points") if meta.get("grade") else None
            found.append(CheckCell(f"cell {i + 1}", meta.get("grade_id"),
                                   float(points) if isinstance(points, (int, float)) else None,
                                   tuple(check_calls(source))))
    return found


def load(path: str | os.PathLike[str], cell_timeout: float = 60.0,
         at_check: Callable[[CheckCell, Loaded], None] | None = None) -> Loaded:
    """Execute the definitions of PATH in a fresh namespace; a failing part is recorded, not fatal.

    `at_check` is called at each check cell of a notebook with what is loaded so far (namespace and problems).
    """
    p = Path(path)
    loaded = Loaded({"__name__": "__learner__", "__file__": str(p)})
    old_limit = sys.getrecursionlimit()
    try:
        _execute(p, parts(p), loaded, cell_timeout, at_check)
    finally:
        sys.setrecursionlimit(old_limit)  # a learner cell may have changed it
    return loaded


def _execute(p: Path, sources: list[tuple[str, str] | CheckCell], loaded: Loaded, cell_timeout: float,
             at_check: Callable[[CheckCell, Loaded], None] | None = None) -> None:
    """Run each part in the shared namespace, recording failures instead of raising."""
    for part in sources:
        if isinstance(part, CheckCell):
            if at_check is not None:
                at_check(part, loaded)
            continue
        label, code = part
        try:
            compiled = compile(code, str(p) if label == str(p) else f"{p} ({label})", "exec")
        except SyntaxError as exc:
            loaded.problems.append(f"{label}: SyntaxError at line {exc.lineno}: {exc.msg}")
            continue
        try:
            with captured_output(), time_limit(cell_timeout):
                exec(compiled, loaded.namespace)
        except NotImplementedError:
            loaded.problems.append(f"{label}: {NOT_DONE}")
        except KeyboardInterrupt:
            raise
        except LearnerError as exc:  # the grader's own limit (a time limit): its sentence, not its key
            loaded.problems.append(f"{label}: {probe_error(exc.as_data())}")
        except BaseException as exc:  # SystemExit, GeneratorExit, ...: a broken cell, not a broken grader
            loaded.problems.append(f"{label}: {describe(exc)}")
