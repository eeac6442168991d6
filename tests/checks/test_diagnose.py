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


# ---------------------------------------------------------------- notebook 6: what the learner's net computed

NEURON_OUT = "return sum((wi * xi for wi, xi in zip(self.w, x)), self.b).tanh()"
LAYER_PARAMS = "return [p for n in self.neurons for p in n.parameters()]"
MSE = "return sum((model(x) - y) ** 2 for x, y in zip(xs, ys)) / len(xs)"
UPDATE = "p.data -= lr * p.grad"


@pytest.mark.parametrize(("old", "new", "check", "shows"), [
    (NEURON_OUT, "return sum((wi * xi for wi, xi in zip(self.w, x)), Value(0.0)).tanh() + self.b", "neuron_forward",
     "your Neuron(x) is `tanh(dot(w, x)) + b`"),
    (NEURON_OUT, "return sum((wi * wi for wi, xi in zip(self.w, x)), self.b).tanh()", "neuron_forward",
     "your Neuron(x) is `tanh(dot(w, w) + b)`"),
    (MSE, "return sum(model(x) - y ** 2 for x, y in zip(xs, ys)) / len(xs)", "mse_loss_backward",
     "your mse_loss is `sum(p - y**2) / n`"),
    (UPDATE, "p.data = -lr * p.grad", "train_descends", "your update of each p.data is `-(lr * g)`"),
    (UPDATE, "p.data -= lr * loss.data * p.grad", "train_descends", "your update of each p.data is `p - lr * g * L`"),
], ids=["bias_outside_tanh", "weights_squared", "square_binds_to_y", "update_assigns", "update_scaled_by_loss"])
def test_a_slip_in_the_net_shows_the_formula_the_learner_wrote(old, new, check, shows):
    result = failed((old, new))[check]
    assert result.recovered and shows in result.message, result.message
    assert "it should be" not in result.message  # the default level keeps the solution out


def test_parameters_in_another_order_are_named_from_where_the_model_holds_each_value():
    bad = failed((LAYER_PARAMS, "return [w for n in self.neurons for w in n.w] + [n.b for n in self.neurons]"))
    result = bad["layer_forward"]
    assert result.misconception == "net.parameters_order", result.message
    assert "lists weight 0 of neuron 1 at position 3, where the spec has the bias of neuron 0" in result.message


def test_one_value_listed_as_every_weight_is_named():
    bad = failed(("self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]",
                  "self.w = [Value(random.uniform(-1, 1))] * nin"))
    assert bad["neuron_forward"].misconception == "neuron.shared_weight", bad["neuron_forward"].message


# ---------------------------------------------------------------- single-notebook exercises: formulas, not coincidences

def exercise(source: str, name: str) -> CheckResult:
    """One exercise check on the reference engine plus the learner's definitions in `source`."""
    from autograder.checks import get, run_checks
    from autograder.loader import load

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "engine.py"
        path.write_text(REFERENCE + "\n\n" + source)
        return run_checks([get(name)], load(path).namespace)[0]


def test_a_derivative_formula_is_told_apart_from_one_that_agrees_only_at_a_tiny_step():
    two_h = exercise("def numerical_derivative(f, x, h=1e-5):\n    return (f(x + 2 * h) - f(x - 2 * h)) / (2 * h)\n",
                     "numerical_derivative")
    assert "your numerical_derivative is `(f(x + 2 * h) - f(x - 2 * h)) / (2 * h)`" in two_h.message, two_h.message
    over_h = exercise("def numerical_derivative(f, x, h=1e-5):\n    return (f(x + h) - f(x - h)) / h\n",
                      "numerical_derivative")
    assert "your numerical_derivative is `(f(x + h) - f(x - h)) / h`" in over_h.message, over_h.message
    relative = exercise("def numerical_derivative(f, x, h=1e-5):\n"
                        "    return (f(x * (1 + h)) - f(x * (1 - h))) / (2 * h)\n", "numerical_derivative")
    assert not relative.recovered, relative.message  # no slip of the central difference is what it computes


MANUAL = ("a, b, c, f = Value(2.0), Value(-3.0), Value(10.0), Value(-2.0)\ne = a * b\nd = e + c\nL = d * f\n"
          "L.grad = 1.0\nf.grad = d.data * L.grad\nd.grad = f.data * L.grad\nc.grad = d.grad\ne.grad = d.grad\n"
          "b.grad = a.data * e.grad\na.grad = b.data * e.grad\n")


def test_a_hand_filled_grad_shows_the_learners_formula_and_a_zero_claims_no_right_formula():
    wrong = exercise(MANUAL.replace("a.grad = b.data * e.grad", "a.grad = b.grad * e.grad"), "manual_backprop")
    assert "your a.grad is `b.grad * e.grad`" in wrong.message, wrong.message
    added = exercise(MANUAL.replace("f.grad = d.data * L.grad", "f.grad = d.data + L.grad"), "manual_backprop")
    assert "f.grad" in added.message and "your f.grad is `d.data + L.grad`" in added.message, added.message
    early = exercise(MANUAL.replace("c.grad = d.grad", "c.grad = e.grad"), "manual_backprop")
    assert early.misconception == "manual.fill_order" and "formula is right" not in early.message
