"""The engine corpus (tests/engines/): where each engine is, the reference engine every mistake and twin is written
on, the correct engines of other styles, the third-party ones; each loaded as the CLI loads a file or as a module."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

from autograder.loader import load

ENGINES = Path(__file__).resolve().parents[1] / "engines"
REFERENCE = (ENGINES / "reference.py").read_text()

# correct engines in other styles: each must earn full marks (tests/checks/test_engine_styles.py)
STYLES = {
    "reference": "the guide's recursive build_topo, set children, math.tanh",
    "iterative_stack": "explicit-stack DFS, list children, int grads, tanh by the exp formula on floats",
    "kahn_slots": "Kahn's in-degree sort, __slots__, tuple children, a _backward per op (neg, sub, div)",
    "composed_tanh": "tanh composed from Value ops, grads zeroed after the update",
    "identity_fancy": "__eq__/__hash__ written as identity, fancy __repr__, a node factory",
    "depth_schedule": "longest-path depth schedule, dict-view children, grads built with `=` of a sum",
    "module_zero_grad": "micrograd Module.zero_grad, repr rounded to 2 decimals, int seed 1",
    "times_label": "a constructor that takes a label second, _op '×' and '＋', capital op names, keyword children",
    "value_eq_correct": "__eq__/__hash__ compare data, but tuple children and a visited set of id(node)",
}
# engines written elsewhere, each with what the grader must say of it (tests/checks/test_determinism.py)
THIRD_PARTY = ["third_party_pow_assigns", "third_party_eq_by_value", "value_eq_correct", "micrograd_010"]


def path(name: str) -> Path:
    """The file of engine `name`."""
    return ENGINES / f"{name}.py"


def namespace(name: str) -> dict[str, Any]:
    """Engine `name`'s definitions, loaded as `python -m autograder check` loads a file."""
    return load(path(name)).namespace


def module(name: str, as_name: str) -> ModuleType:
    """Engine `name` imported afresh as a module called `as_name` (its classes look each other up in it)."""
    spec = importlib.util.spec_from_file_location(as_name, path(name))
    assert spec is not None and spec.loader is not None
    made = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(made)
    return made
