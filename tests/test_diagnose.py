"""Issue 34, points 7 and 8: classes of mistakes the checks used to pass or diagnose wrongly, each caught and named
from the evidence of its own case, with a correct variant beside it that is never failed."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import pytest
from mistakes import REFERENCE, substituted

from autograder.checks import CheckResult
from autograder.cli import check_file

BACKWARD_HEAD = "    def backward(self):\n        topo, visited = [], set()\n"
VISIT = "            if v not in visited:\n                visited.add(v)\n"
MUL_SELF = "self.grad += other.data * out.grad"
POW_SLOPE = "k * self.data ** (k - 1) * out.grad"


@functools.cache
def graded(*subs: tuple[str, str]) -> tuple[CheckResult, ...]:
    """Every spec check on the reference engine with the substitutions applied."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "engine.py"
        path.write_text(substituted(REFERENCE, subs))
        return tuple(check_file(str(path)))


def failed(*subs: tuple[str, str]) -> dict[str, CheckResult]:
    return {r.name: r for r in graded(*subs) if not r.passed}


# ---------------------------------------------------------------- state kept between backward() calls

KEPT_STATE = {
    "default_arguments": ((BACKWARD_HEAD, "    def backward(self, topo=[], visited=set()):\n"),),
    "visited_set_on_the_class": ((BACKWARD_HEAD, "    _visited = set()\n\n    def backward(self):\n"
                                                 "        topo, visited = [], Value._visited\n"),),
    "topo_list_on_the_class": ((BACKWARD_HEAD, "    _topo = []\n\n    def backward(self):\n"
                                               "        topo, visited = Value._topo, set()\n"),),
    "a_mark_left_on_the_nodes": ((VISIT, '            if not getattr(v, "_seen", False):\n'
                                         "                v._seen = True\n"),),
}


@pytest.mark.parametrize("name", sorted(KEPT_STATE))
def test_a_backward_that_keeps_state_between_calls_fails_and_says_so(name):
    bad = failed(*KEPT_STATE[name])
    assert "backward_once_per_node" in bad, sorted(bad)
    result = bad["backward_once_per_node"]
    assert result.misconception == "backward.keeps_state" and result.culprit == "Value.backward", result.message
    assert "second graph" in result.message


def test_a_backward_that_empties_its_kept_lists_each_call_passes():
    assert failed((BACKWARD_HEAD, "    _topo, _visited = [], set()\n\n    def backward(self):\n"
                                  "        topo, visited = Value._topo, Value._visited\n"
                                  "        topo.clear()\n        visited.clear()\n")) == {}


# ---------------------------------------------------------------- a slope that divides by the data, at an input of 0

DIVIDES = {
    "mul": ((MUL_SELF, "self.grad += out.data / self.data * out.grad"),),
    "pow": ((POW_SLOPE, "k * out.data / self.data * out.grad"),),
}


@pytest.mark.parametrize("name", sorted(DIVIDES))
def test_a_slope_that_divides_by_the_data_fails_at_zero_and_says_so(name):
    bad = failed(*DIVIDES[name])
    assert bad, "passed every check"
    first = next(iter(bad.values()))
    assert first.misconception == "node.divides_by_data", first.message
    assert f"`{DIVIDES[name][0][1].split('+= ')[-1]}" in first.message or "/ self.data" in first.message


def test_a_slope_through_the_output_guarded_at_zero_passes():
    assert failed((POW_SLOPE, "(k * out.data / self.data if self.data else k * 0.0 ** (k - 1)) * out.grad")) == {}


# ---------------------------------------------------------------- equal inputs (leaves keyed by their number)

GRADS_OF = "    leaves = [Value(x) for x in inputs]\n    f(*leaves).backward()\n    return [leaf.grad for leaf in leaves]\n"


def exercise_results(source: str, name: str) -> CheckResult:
    """One exercise check run on the reference engine plus `source` (the exercise written as a learner does)."""
    from autograder.checks import get, run_checks
    from autograder.loader import load

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "engine.py"
        path.write_text(REFERENCE + "\n\ndef grads_of(f, inputs):\n" + source)
        return run_checks([get(name)], load(path).namespace)[0]


def test_grads_of_with_leaves_keyed_by_their_number_fails_on_equal_inputs_and_says_so():
    keyed = ("    leaves = {x: Value(x) for x in inputs}\n    f(*[leaves[x] for x in inputs]).backward()\n"
             "    return [leaves[x].grad for x in inputs]\n")
    result = exercise_results(keyed, "grads_of")
    assert not result.passed and result.misconception == "grads_of.leaves_by_value", result.message
    assert exercise_results(GRADS_OF, "grads_of").passed


def test_grads_of_in_another_order_or_count_is_named():
    reversed_ = exercise_results(GRADS_OF.replace("for leaf in leaves]", "for leaf in reversed(leaves)]"), "grads_of")
    assert reversed_.misconception == "grads_of.wrong_order", reversed_.message
    first = exercise_results(GRADS_OF.replace("[leaf.grad for leaf in leaves]", "[leaves[0].grad]"), "grads_of")
    assert first.misconception == "grads_of.wrong_count", first.message


# ---------------------------------------------------------------- endless recursion: the cycle, and advice only where it holds

RSUB = "    def __rsub__(self, other):\n        return other + (-self)"
RADD = "    def __radd__(self, other):\n        return self + other"


def test_a_cycle_of_methods_is_named_from_the_traceback_with_no_advice_to_turn_the_operation_round():
    bad = failed(("    def __neg__(self):\n        return self * -1", "    def __neg__(self):\n        return 0 - self"))
    result = next(iter(bad.values()))
    assert result.misconception == "common.endless_recursion", result.message
    assert "__neg__ calls __rsub__, which calls __neg__ again" in result.message
    assert "other way round" not in result.message and "self + other" not in result.message


def test_a_reflected_method_calling_itself_is_told_apart_by_whether_its_operation_may_be_turned_round():
    from autograder.checks import messages as msg

    radd = next(iter(failed((RADD, "    def __radd__(self, other):\n        return other + self")).values()))
    assert radd.misconception == "reflected.calls_itself", radd.message
    rsub = next(iter(failed((RSUB, "    def __rsub__(self, other):\n        return other - self")).values()))
    assert rsub.misconception == "reflected.calls_itself_ordered", rsub.message
    assert "give the same result either way round" not in rsub.message
    assert msg.hint("reflected.calls_itself") not in rsub.message
