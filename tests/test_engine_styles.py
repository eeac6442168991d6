"""Every correct engine, whatever its style, earns full marks on visible and hidden inputs."""

import pytest

from autograder import checks as catalog
from autograder.checks import run_checks
from autograder.cli import check_file
from autograder.loader import load

STYLES = {
    "reference": "the guide's recursive build_topo, set children, math.tanh",
    "iterative_stack": "explicit-stack DFS, list children, int grads, tanh by the exp formula on floats",
    "kahn_slots": "Kahn's in-degree sort, __slots__, tuple children, a _backward per op (neg, sub, div)",
    "composed_tanh": "tanh composed from Value ops, grads zeroed after the update",
    "identity_fancy": "__eq__/__hash__ written as identity, fancy __repr__, a node factory",
    "depth_schedule": "longest-path depth schedule, dict-view children, grads built with `=` of a sum",
    "module_zero_grad": "micrograd Module.zero_grad, repr rounded to 2 decimals, int seed 1",
}


@pytest.mark.parametrize("name", sorted(STYLES))
def test_correct_engine_style_earns_full_marks(name, engine_path):
    results = check_file(str(engine_path(name)))
    failed = {r.name: r.message for r in results if not r.passed}
    assert failed == {}
    assert {r.name for r in results} >= {c.name for c in catalog.spec_checks()}
    assert sum(r.points for r in results) == sum(r.max_points for r in results) > 0


@pytest.mark.parametrize("name", sorted(STYLES))
def test_correct_engine_style_passes_hidden_inputs(name, engine_path):
    ns = load(engine_path(name)).namespace
    results = run_checks(catalog.spec_checks(), ns, hidden=True)
    assert {r.name: r.message for r in results if not r.passed} == {}


def test_styles_are_distinct_files(engine_path):
    texts = {engine_path(n).read_text() for n in STYLES}
    assert len(texts) == len(STYLES) >= 6
