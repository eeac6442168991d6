"""A hint fires only when its evidence is present: each hint held against a correct method that differs from the
mistake it names only in the respect the hint claims (the surface the hint could key on is there, the bug is not),
which must earn full marks with no hint at all; and a hint the grader's other observations contradict is replaced."""

import tempfile
from pathlib import Path

import pytest
from mistakes import REFERENCE

from autograder.checks import messages as msg
from autograder.cli import check_file

# hint ids -> (what the correct twin does, substitutions on tests/engines/reference.py)
TWINS: dict[str, tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = {
    "grad_assigned_as_a_sum": (("add.assigns_instead_of_accumulating", "node.assigns_instead_of_accumulating"),
                               (("self.grad += out.grad\n", "self.grad = self.grad + out.grad\n"),
                                ("other.grad += self.data * out.grad", "other.grad = other.grad + self.data * out.grad"))),
    "backward_called_inside_a_lambda": (("node.backward_is_none", "common.none_called"),
                                        (("        out._backward = _backward\n        return out\n\n    def __pow__",
                                          "        out._backward = lambda: _backward()\n        return out\n\n    def __pow__"),)),
    "reverse_in_place_on_its_own_line": (("common.inplace_returns_none", "common.none_iterated", "backward.forward_order",
                                          "backward.preorder", "backward.leaves_first"),
                                         (("        for node in reversed(topo):", "        topo.reverse()\n        for node in topo:"),)),
    "add_loops_over_both_operands": (("add.loses_a_use", "add.assigns_instead_of_accumulating"),
                                     (("            self.grad += out.grad\n            other.grad += out.grad\n",
                                       "            for v in (self, other):\n                v.grad += out.grad\n"),)),
    "backward_zeroes_every_grad_first": (("backward.sets_every_grad", "backward.root_not_seeded"),
                                         (("        self.grad = 1.0\n        for node in reversed(topo):",
                                           "        for node in topo:\n            node.grad = 0.0\n        self.grad = 1.0\n"
                                           "        for node in reversed(topo):"),)),
    "mlp_indexes_a_list_it_made": (("common.value_for_list",),
                                   (("            x = layer(x)\n        return x\n",
                                     "            x = layer(x)\n            x = x if isinstance(x, list) else [x]\n"
                                     "        return x[0] if len(x) == 1 else x\n"),)),
    "mul_factor_order": (("mul.unswapped", "mul.uses_grad_for_data"),
                         (("self.grad += other.data * out.grad", "self.grad += out.grad * other.data"),)),
    "tanh_from_the_input_correctly": (("tanh.uses_input", "tanh.wrong_slope"),
                                      (("(1 - t**2) * out.grad", "(1 - math.tanh(self.data) ** 2) * out.grad"),)),
    "exp_from_the_input_correctly": (("exp.derivative_is_input", "exp.wrong_slope"),
                                     (("self.grad += out.data * out.grad", "self.grad += math.exp(self.data) * out.grad"),)),
    "pow_through_the_output": (("pow.derivative_keeps_power", "pow.exponent_off_by_one", "pow.wrong_slope"),
                               (("k * self.data ** (k - 1) * out.grad", "k * out.data / self.data * out.grad"),)),
    "numbers_wrapped_by_a_helper": (("node.number_not_wrapped",),
                                    (("        other = other if isinstance(other, Value) else Value(other)\n"
                                      "        out = Value(self.data * other.data",
                                      "        other = _value(other)\n        out = Value(self.data * other.data"),
                                     ("class Neuron:", "def _value(x):\n    return x if isinstance(x, Value) else Value(x)\n\n\n"
                                                       "class Neuron:"))),
    "neuron_weights_in_a_tuple": (("neuron.weight_count", "net.parameters_incomplete", "net.parameters_not_values"),
                                  (("self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]",
                                    "self.w = tuple(Value(random.uniform(-1, 1)) for _ in range(nin))"),
                                   ("return self.w + [self.b]", "return [*self.w, self.b]"))),
    "neuron_parameters_in_a_dict": (("neuron.weight_count", "net.parameters_incomplete"),
                                    (("        self.b = Value(random.uniform(-1, 1))\n",
                                      "        self.b = Value(random.uniform(-1, 1))\n        self.named = {'b': self.b}\n"),)),
    "layer_neurons_in_a_tuple": (("layer.neuron_count", "layer.neuron_inputs"),
                                 (("self.neurons = [Neuron(nin) for _ in range(nout)]",
                                   "self.neurons = tuple(Neuron(nin) for _ in range(nout))"),)),
    "mlp_built_in_a_loop": (("mlp.layer_count", "mlp.layer_sizes", "mlp.layers_all_take_nin"),
                            (("        sizes = [nin] + nouts\n"
                              "        self.layers = [Layer(sizes[i], sizes[i + 1]) for i in range(len(nouts))]",
                              "        self.layers = []\n        for nout in nouts:\n            self.layers.append(Layer(nin, nout))\n"
                              "            nin = nout"),)),
    "train_loss_recomputed_at_the_end": (("train.loss_not_recomputed", "train.loss_never_changes"),
                                         (("    for _ in range(steps):\n        loss = mse_loss(model, xs, ys)\n",
                                           "    loss = mse_loss(model, xs, ys)\n    for _ in range(steps):\n"),
                                          ("            p.data -= lr * p.grad\n",
                                           "            p.data -= lr * p.grad\n        loss = mse_loss(model, xs, ys)\n"))),
    "train_update_written_out": (("train.steps_by_data", "train.step_doubled", "train.ignores_lr"),
                                 (("p.data -= lr * p.grad", "p.data = p.data - p.grad * lr"),)),
    "mse_by_a_loop_of_values": (("mse.graph_cut", "mse.fixed_count", "common.float_for_value"),
                                (("    return sum((model(x) - y) ** 2 for x, y in zip(xs, ys)) / len(xs)",
                                  "    total = 0\n    for x, y in zip(xs, ys):\n        total = total + (model(x) - y) ** 2\n"
                                  "    return total * (1 / len(xs))"),)),
    "method_returns_through_a_name": (("common.returns_none",),
                                      (("        out._backward = _backward\n        return out\n\n    def exp",
                                        "        out._backward = _backward\n        result = out\n        return result\n\n    def exp"),)),
    "rtruediv_never_needed": (("rtruediv.number_on_the_left", "node.number_on_the_left", "rsub.number_on_the_left"),
                              (("    def __rsub__(self, other):\n        return other + (-self)",
                                "    def __rsub__(self, other):\n        return self * -1 + other"),)),
}


def source(subs: tuple[tuple[str, str], ...]) -> str:
    src = REFERENCE
    for old, new in subs:
        assert src.count(old) == 1, old
        src = src.replace(old, new)
    assert src != REFERENCE
    return src


@pytest.mark.parametrize("name", sorted(TWINS))
def test_a_correct_twin_of_the_mistake_a_hint_names_hears_no_hint(name):
    ids, subs = TWINS[name]
    assert all(i in msg.MISCONCEPTIONS for i in ids)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.py"
        path.write_text(source(subs))
        results = check_file(str(path))
    assert [(r.name, r.misconception, r.message[:200]) for r in results if not r.passed] == []
    assert not any(msg.hint(i, "a") in r.message for r in results for i in ids)


NEW_HINTS = {"api.missing_attribute", "node.backward_is_none", "common.inplace_returns_none", "common.none_called",
             "node.number_not_wrapped", "common.returns_none", "rtruediv.number_on_the_left", "rsub.number_on_the_left",
             "neuron.weight_count", "layer.neuron_count", "layer.neuron_inputs", "mlp.layer_count", "mlp.layer_sizes",
             "net.parameters_not_values", "net.parameters_incomplete", "backward.preorder", "backward.leaves_first",
             "train.loss_not_recomputed", "train.steps_by_data", "train.step_doubled", "mse.graph_cut", "mse.fixed_count",
             "common.float_for_value", "common.none_iterated", "tanh.wrong_slope", "exp.wrong_slope", "pow.wrong_slope",
             "add.loses_a_use", "backward.sets_every_grad", "common.value_for_list"}


def test_every_hint_this_issue_added_has_a_correct_twin():
    covered = {i for ids, _ in TWINS.values() for i in ids}
    missing = NEW_HINTS - covered - {"api.missing_attribute"}  # a Value without the API has no correct twin
    assert missing == set(), missing


def test_a_contradicted_accumulation_hint_is_replaced_by_what_is_known():
    """`grad = ...` where `+=` belongs is never said when the checks of + and * alone show they accumulate."""
    from autograder.checks import get
    from autograder.checks.base import CheckResult
    from autograder.checks.run import Blame
    from autograder.settings import Tolerance

    check = get("backward_accumulates")
    wrong = CheckResult(check.name, check.targets, 0.0, 1.0,
                        "gradient of a ...\n  hint: " + msg.hint("node.assigns_instead_of_accumulating") + "\n  reproduce:\n    x",
                        "failed", "node.assigns_instead_of_accumulating")
    blame = Blame(get, False, Tolerance(), None, None)  # type: ignore[arg-type]
    fixed = blame._uncontradicted(check, wrong, ["add_local_backward", "mul_local_backward", "backward_alone"])
    assert fixed.misconception == msg.ACCUMULATES_ALONE
    assert msg.hint("node.assigns_instead_of_accumulating") not in fixed.message
    assert msg.hint(msg.ACCUMULATES_ALONE) in fixed.message and "reproduce:" in fixed.message
    kept = blame._uncontradicted(check, wrong, ["backward_alone"])  # + and * never tested alone: the claim may hold
    assert kept.misconception == "node.assigns_instead_of_accumulating"


def test_a_missing_rtruediv_is_named_not_rmul_or_radd():
    from autograder.checks.messages import error_misconception

    mis = error_misconception("TypeError: unsupported operand type(s) for /: 'int' and 'Value'")
    assert mis == "rtruediv.number_on_the_left" and "__rtruediv__" in msg.hint(mis)
    assert "__rmul__" not in msg.hint(mis) and "__radd__" not in msg.hint(mis)
    assert error_misconception("TypeError: unsupported operand type(s) for -: 'float' and 'Value'") == "rsub.number_on_the_left"
