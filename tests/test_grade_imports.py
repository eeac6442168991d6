"""`autograder.grading` has no import circle: every import statement of its modules (those inside functions too)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import imported

PACKAGE = Path(__file__).resolve().parent.parent / "autograder" / "grading"


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent.parent).with_suffix("").parts).removesuffix(".__init__")


def imports(path: Path) -> set[str]:
    """The grading modules `path` imports, by full name (relative imports resolved; `from . import x` is module x)."""
    return {m for m in imported(path, module_name(path)) if m.startswith("autograder.grading")}


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: {m for m in imports(path) if m in modules and m != name} for name, path in modules.items()}


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import circle, as the modules along it, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_grading_package_has_no_import_circle() -> None:
    edges = graph()
    assert {"autograder.grading.batch", "autograder.grading.grade.cluster", "autograder.grading.store.writer"} <= edges.keys()
    # a package imports its own modules (`sandbox/__init__` re-exports them): that is not a circle between modules
    for name in list(edges):
        edges[name] = {m for m in edges[name] if not name.startswith(m + ".")}
    assert cycle(edges) is None, " -> ".join(cycle(edges) or [])


def test_the_circle_finder_finds_a_circle() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("module", ["grade.cluster", "store.writer", "grade.pipeline", "grade.executors"])
def test_no_grading_step_imports_the_command_driver(module: str) -> None:
    assert "autograder.grading.batch" not in graph()[f"autograder.grading.{module}"]
