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


def rooms(edges: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """The import graph among the direct children of `package` (its modules, and each subpackage as one room): who
    imports whom, from any module below each (function-level imports included)."""

    def room(module: str) -> str | None:
        if not module.startswith(package + "."):
            return None
        return f"{package}.{module[len(package) + 1:].split('.')[0]}"

    out: dict[str, set[str]] = {}
    for source, targets in edges.items():
        here = room(source)
        if here is None:
            continue
        out.setdefault(here, set())
        out[here] |= {there for t in targets if (there := room(t)) is not None and there != here}
    return out


def packages(root: Path = PACKAGE) -> list[str]:
    """`autograder.grading` and every package below it."""
    return sorted(module_name(p.parent / "__init__.py") for p in root.rglob("__init__.py"))


def test_no_folder_of_the_grading_package_imports_one_that_imports_it_back() -> None:
    edges = graph()
    circles = {package: cycle(rooms(edges, package)) for package in packages()}
    assert "autograder.grading.grade.sandbox" in circles and "autograder.grading.grade" in circles
    assert {p: " -> ".join(c) for p, c in circles.items() if c} == {}


def test_the_folder_check_sees_a_circle_the_module_check_misses() -> None:
    # as sandbox/ and worker/ once were: client imports worker.main inside a function, worker.confine imports
    # sandbox.linux; no module imports itself back, yet the two folders do
    edges = {"p.sandbox.client": {"p.worker.main"}, "p.worker.main": {"p.worker.confine"},
             "p.worker.confine": {"p.sandbox.linux"}, "p.sandbox.linux": set()}
    assert cycle(edges) is None
    assert cycle(rooms(edges, "p")) == ["p.sandbox", "p.worker", "p.sandbox"]
