"""One name per concept: no two classes of `autograder` share a name, so a name in a traceback, a doc page or a
search finds one thing (nested classes included)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "autograder"
# The sandbox's stand-in for `autograder` (staged as `autograder/__init__.py` inside it) mirrors the real package's
# public names on purpose: a notebook's `from autograder import CheckFailed` must work in both places.
STANDIN = PACKAGE / "grading" / "grade" / "standin"


def classes(root: Path, skip: Path | None = None) -> dict[str, list[str]]:
    """Every class defined below `root`, by name: where each is (path:line)."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        if skip is not None and skip in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                found[node.name].append(f"{path.relative_to(root.parent)}:{node.lineno}")
    return found


def test_no_two_classes_of_the_package_share_a_name() -> None:
    shared = {name: places for name, places in classes(PACKAGE, skip=STANDIN).items() if len(places) > 1}
    assert shared == {}


def test_the_check_finds_two_classes_of_one_name_nested_ones_too(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("class Writer:\n    pass\n")
    (tmp_path / "pkg" / "b.py").write_text("def f():\n    class Writer:\n        pass\n")
    assert sorted(classes(tmp_path / "pkg")["Writer"]) == ["pkg/a.py:1", "pkg/b.py:2"]
