"""Every correct engine, whatever its style, earns full marks on visible and hidden inputs."""

import pytest
from engine_corpus import STYLES

from autograder import checks as catalog
from autograder.checks import run_checks
from autograder.cli import check_file
from autograder.loader import load


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


def _defines(ns, target: str) -> bool:
    from autograder.probes import is_defined

    return is_defined(ns, target)


@pytest.mark.parametrize("hidden", [False, True])
def test_micrograd_passes_every_check_of_the_methods_it_has(engine_path, hidden):
    """Karpathy's micrograd 0.1.0 engine (no tanh, no exp, no net): every check whose targets it defines passes,
    and every other one names only methods it really lacks."""
    ns = load(engine_path("micrograd_010")).namespace
    results = run_checks(catalog.notebook_checks(), ns, hidden=hidden)
    for r in results:
        lacks = [t for t in catalog.get(r.name).needs if not _defines(ns, t)]
        if lacks:
            assert r.status == "not_implemented" and all(t in r.message for t in lacks), (r.name, r.message)
            assert not any(t in r.message for t in r.targets if t not in lacks), (r.name, r.message)
        else:
            assert r.passed, (r.name, r.message)
    assert sum(r.passed for r in results) >= 19


NUMBER_CHECKS = {"neg_sub_backward": "a - 1.5", "div_backward": "/ 2.0"}  # a number on the right is what they test


@pytest.mark.parametrize("hidden", [False, True])
def test_an_engine_without_number_coercion_passes_every_check_of_value_operands(engine_path, hidden):
    ns = load(engine_path("no_coercion")).namespace
    results = {r.name: r for r in run_checks(catalog.notebook_checks(), ns, hidden=hidden)}
    for name, r in results.items():
        if name in NUMBER_CHECKS:  # fails, saying it is the number on the right
            assert not r.passed and NUMBER_CHECKS[name] in r.message and r.misconception == "node.number_not_wrapped"
        elif any(not _defines(ns, t) for t in catalog.get(name).needs):
            assert r.status == "not_implemented", (name, r.message)
        else:
            assert r.passed, (name, r.message)


def test_each_check_needs_exactly_what_the_probes_ask_for():
    """A check's declared targets (less object's identity defaults) are what the probe side requires defined."""
    from autograder.probes import NEEDS

    assert {c.name: c.needs for c in catalog.CHECKS} == {k: tuple(v) for k, v in NEEDS.items()}


OWN_NODES = {  # __sub__ and __truediv__ as nodes of their own, their operands kept in a set
    "    def __sub__(self, other):\n        return self + (-other)": """    def __sub__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data - other.data, (self, other), "-")

        def _backward():
            self.grad += out.grad
            other.grad -= out.grad

        out._backward = _backward
        return out""",
    "    def __truediv__(self, other):\n        return self * other**-1": """    def __truediv__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data / other.data, (self, other), "/")

        def _backward():
            self.grad += out.grad / other.data
            other.grad -= self.data / other.data**2 * out.grad

        out._backward = _backward
        return out""",
}


def test_a_check_whose_graph_the_engine_merged_says_so_instead_of_passing(engine_path, tmp_path):
    """Issue 34: with __eq__/__hash__ by data, a `-` or `/` node of its own keeps `a * b` and `b * a` (equal data) as
    one child in its set: the check of `-` and `/` says the graph lost a node the grader built, and why."""
    source = engine_path("third_party_eq_by_value").read_text()
    for old, new in OWN_NODES.items():
        assert source.count(old) == 1
        source = source.replace(old, new)
    path = tmp_path / "own_nodes.py"
    path.write_text(source)
    results = {r.name: r for r in check_file(str(path))}
    for name in ("neg_sub_backward", "div_backward"):
        r = results[name]
        assert not r.passed and r.misconception == "eq.by_value", (name, r.message)
        assert "lost a node" in r.message and "your __eq__ calls it equal" in r.message and "`m = a * b; n = b * a" in r.message


def test_an_engine_that_merges_equal_nodes_in_backward_is_told_so_by_backward_s_checks(engine_path):
    """The same engine with -, / made of + and *: its bricks are right (the grader's walk keeps every node apart),
    its backward() loses nodes of equal data, which the checks of backward() pin on __eq__ as observed."""
    results = {r.name: r for r in check_file(str(engine_path("third_party_eq_by_value")))}
    assert results["neg_sub_backward"].passed and results["div_backward"].passed
    walk = results["backward_once_per_node"]
    assert not walk.passed and walk.culprit == "Value.__eq__" and "expected a set of 2 distinct nodes, got 1" in walk.message
