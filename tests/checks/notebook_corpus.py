"""Notebook-level corpus: mistakes and correct alternatives injected into the real workbook, keyed by nbgrader cell id.

Each mistake is a list of exact text substitutions in one solution cell (every one must apply once), the
misconception the check right under that exercise must name, and the method it must name. Each alternative is a
correct solution written another way. tests/checks/test_notebook_corpus.py runs the notebooks in-process.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import io
import linecache
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from nbgrader_mode import nbgrader_execution

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "solutions" / "workbook"
MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION", "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")


@dataclass(frozen=True)
class Variant:
    """A notebook with one solution cell edited."""

    notebook: str
    cell: str  # the nbgrader grade_id of the solution cell
    subs: tuple[tuple[str, str], ...]
    misconception: str | None = None  # None: a correct alternative
    method: str = ""  # the method (or exercise) the diagnosis must name


def bug(notebook: str, cell: str, misconception: str, method: str, *subs: tuple[str, str]) -> Variant:
    return Variant(notebook, cell, tuple(subs), misconception, method)


def alt(notebook: str, cell: str, *subs: tuple[str, str]) -> Variant:
    return Variant(notebook, cell, tuple(subs))


N1, N2, N3, N4, N5, N6 = ("01_derivatives", "02_values", "03_backward", "04_bricks", "05_pytorch", "06_neural_net")
REL = "    scale = max(abs(a), abs(b))\n    return 0.0 if scale == 0 else abs(a - b) / scale\n"
BUILD = "    def build(v):\n        if v not in visited:\n            visited.add(v)\n            for child in v._prev:\n" \
        "                build(child)\n            topo.append(v)\n"
NEURON_OUT = "return sum((wi * xi for wi, xi in zip(self.w, x)), self.b).tanh()"
TRAIN_LOOP = ("        losses.append(loss.data)\n        for p in model.parameters():\n            p.grad = 0.0\n"
              "        loss.backward()\n        for p in model.parameters():\n            p.data -= lr * p.grad\n")

MISTAKES: dict[str, Variant] = {
    # 01: numerical derivative and relative error
    "forward_difference": bug(N1, "ex_01_numerical_derivative", "derivative.forward_difference", "numerical_derivative",
                              ("(f(x + h) - f(x - h)) / (2 * h)", "(f(x + h) - f(x)) / h")),
    "central_without_half": bug(N1, "ex_01_numerical_derivative", "derivative.no_half", "numerical_derivative",
                                ("/ (2 * h)", "/ h")),
    "relerr_max_without_abs": bug(N1, "ex_01_relative_error", "relerr.max_without_abs", "relative_error",
                                  ("max(abs(a), abs(b))", "max(a, b)")),
    "relerr_divides_by_b": bug(N1, "ex_01_relative_error", "relerr.divides_by_b", "relative_error",
                               ("abs(a - b) / scale", "abs(a - b) / abs(b)")),
    "relerr_min": bug(N1, "ex_01_relative_error", "relerr.min", "relative_error",
                      ("max(abs(a), abs(b))", "min(abs(a), abs(b))")),
    "relerr_no_abs": bug(N1, "ex_01_relative_error", "relerr.no_abs", "relative_error", ("abs(a - b)", "(a - b)")),
    "relerr_zero_over_zero": bug(N1, "ex_01_relative_error", "relerr.zero_over_zero", "relative_error",
                                 ("0.0 if scale == 0 else abs(a - b) / scale", "abs(a - b) / scale")),
    # 02: Value, + and *, hand-filled gradients
    "repr_hides_data": bug(N2, "ex_02_value_class", "repr.hides_data", "Value.__repr__",
                           ('return f"Value(data={self.data})"', 'return f"Value(grad={self.grad})"')),
    "repr_default": bug(N2, "ex_02_value_class", "repr.default", "Value.__repr__",
                        ('return f"Value(data={self.data})"', "return object.__repr__(self)")),
    "add_no_children": bug(N2, "ex_02_add", "add.no_children", "Value.__add__",
                           ('Value(self.data + other.data, (self, other), "+")', "Value(self.data + other.data)")),
    "add_records_star": bug(N2, "ex_02_add", "add.wrong_op", "Value.__add__", ('(self, other), "+")', '(self, other), "*")')),
    "add_one_child": bug(N2, "ex_02_add", "node.wrong_children", "Value.__add__", ('(self, other), "+")', '(self,), "+")')),
    "add_subtracts": bug(N2, "ex_02_add", "add.wrong_forward", "Value.__add__", ("self.data + other.data", "self.data - other.data")),
    "mul_records_plus": bug(N2, "ex_02_mul", "mul.wrong_op", "Value.__mul__", ('(self, other), "*")', '(self, other), "+")')),
    "mul_no_children": bug(N2, "ex_02_mul", "mul.no_children", "Value.__mul__",
                           ('Value(self.data * other.data, (self, other), "*")', "Value(self.data * other.data)")),
    "mul_adds": bug(N2, "ex_02_mul", "mul.wrong_forward", "Value.__mul__", ("self.data * other.data", "self.data + other.data")),
    "manual_mul_unswapped": bug(N2, "ex_02_manual_grads", "manual.mul_swaps", "a.grad",
                                ("a.grad = b.data * e.grad", "a.grad = a.data * e.grad")),
    "manual_add_not_routed": bug(N2, "ex_02_manual_grads", "manual.add_routes", "c.grad", ("c.grad = d.grad", "c.grad = 1.0")),
    # 03: local rules and backward()
    "add_assigns": bug(N3, "ex_03_add", "add.assigns_instead_of_accumulating", "Value.__add__",
                       ("self.grad += out.grad", "self.grad = out.grad")),
    "add_forgets_other": bug(N3, "ex_03_add", "add.forgets_an_operand", "Value.__add__", ("        other.grad += out.grad\n", "")),
    "add_uses_out_data": bug(N3, "ex_03_add", "node.uses_out_data", "Value.__add__",
                             ("self.grad += out.grad", "self.grad += out.data"), ("other.grad += out.grad", "other.grad += out.data")),
    "add_not_attached": bug(N3, "ex_03_add", "node.backward_not_attached", "Value.__add__", ("    out._backward = _backward\n", "")),
    "add_missing_upstream": bug(N3, "ex_03_add", "node.missing_upstream", "Value.__add__",
                                ("self.grad += out.grad", "self.grad += 1.0"), ("other.grad += out.grad", "other.grad += 1.0")),
    "add_leftover_raise": bug(N3, "ex_03_add", "common.leftover_raise", "__add__",
                              ("    out._backward = _backward\n", "    out._backward = _backward\n    raise NotImplementedError()\n")),
    "mul_unswapped": bug(N3, "ex_03_mul", "mul.unswapped", "Value.__mul__",
                         ("self.grad += other.data * out.grad", "self.grad += self.data * out.grad"),
                         ("other.grad += self.data * out.grad", "other.grad += other.data * out.grad")),
    "mul_assigns": bug(N3, "ex_03_mul", "mul.assigns_instead_of_accumulating", "Value.__mul__",
                       ("other.grad += self.data", "other.grad = self.data")),
    "mul_missing_upstream": bug(N3, "ex_03_mul", "node.missing_upstream", "Value.__mul__",
                                ("other.data * out.grad", "other.data"), ("self.data * out.grad", "self.data")),
    "mul_uses_out_data": bug(N3, "ex_03_mul", "node.uses_out_data", "Value.__mul__",
                             ("other.data * out.grad", "other.data * out.data"), ("self.data * out.grad", "self.data * out.data")),
    "backward_forward_order": bug(N3, "ex_03_backward", "backward.forward_order", "Value.backward",
                                  ("for node in reversed(topo):", "for node in topo:")),
    "backward_not_seeded": bug(N3, "ex_03_backward", "backward.root_not_seeded", "Value.backward", ("    self.grad = 1.0\n", "")),
    "backward_no_visited_set": bug(N3, "ex_03_backward", "backward.runs_a_node_twice", "Value.backward",
                                   ("if v not in visited:", "if True:")),
    "backward_breadth_first": bug(N3, "ex_03_backward", "backward.breadth_first", "Value.backward",
                                  ("    topo, visited = [], set()\n\n" + BUILD + "\n    build(self)\n    self.grad = 1.0\n"
                                   "    for node in reversed(topo):\n        node._backward()\n",
                                   "    self.grad = 1.0\n    queue, seen = [self], {id(self)}\n    while queue:\n"
                                   "        node = queue.pop(0)\n        node._backward()\n        for child in node._prev:\n"
                                   "            if id(child) not in seen:\n                seen.add(id(child))\n"
                                   "                queue.append(child)\n")),
    # 04: the bricks
    "tanh_uses_input": bug(N4, "ex_04_tanh", "tanh.uses_input", "Value.tanh", ("(1 - t**2)", "(1 - self.data**2)")),
    "tanh_one_minus_t": bug(N4, "ex_04_tanh", "tanh.one_minus_t", "Value.tanh", ("(1 - t**2)", "(1 - t)")),
    "tanh_without_child": bug(N4, "ex_04_tanh", "tanh.graph_cut", "Value.tanh", ("Value(t, (self,), ", "Value(t, (), ")),
    "tanh_uses_out_data": bug(N4, "ex_04_tanh", "node.uses_out_data", "Value.tanh", ("* out.grad", "* out.data")),
    # relu: slope 1 everywhere, slope 1 at the kink, the output used as the slope, the graph cut
    "relu_slope_one": bug(N4, "ex_04_relu", "relu.slope_one", "Value.relu", ("(out.data > 0) * out.grad", "out.grad")),
    "relu_slope_at_kink": bug(N4, "ex_04_relu", "relu.slope_at_kink", "Value.relu",
                              ("(out.data > 0) * out.grad", "(self.data >= 0) * out.grad")),
    "relu_uses_out_data": bug(N4, "ex_04_relu", "relu.uses_out_data", "Value.relu",
                              ("(out.data > 0) * out.grad", "out.data * out.grad")),
    "relu_without_child": bug(N4, "ex_04_relu", "relu.graph_cut", "Value.relu", ("(self,), \"relu\")", "(), \"relu\")")),
    "exp_derivative_is_input": bug(N4, "ex_04_exp", "exp.derivative_is_input", "Value.exp",
                                   ("out.data * out.grad", "self.data * out.grad")),
    "pow_keeps_power": bug(N4, "ex_04_pow", "pow.derivative_keeps_power", "Value.__pow__",
                           ("k * self.data ** (k - 1)", "k * self.data**k")),
    "neg_is_identity": bug(N4, "ex_04_neg_sub", "sub.sign_flipped", "__neg__", ("return self * -1", "return self * 1")),
    "div_inverted": bug(N4, "ex_04_div", "div.operands_inverted", "__truediv__", ("self * other**-1", "other * self**-1")),
    "rsub_reversed": bug(N4, "ex_04_neg_sub", "sub.sign_flipped", "__rsub__", ("return other + (-self)", "return self + (-other)")),
    "tanh_bricks_wrong_formula": bug(N4, "ex_04_tanh_from_bricks", "tanh_bricks.wrong_formula", "tanh_from_bricks",
                                     ("(e - 1) / (e + 1)", "(e + 1) / (e - 1)")),
    "tanh_bricks_uses_tanh": bug(N4, "ex_04_tanh_from_bricks", "tanh_bricks.uses_tanh", "tanh_from_bricks",
                                 ("return (e - 1) / (e + 1)", "return x.tanh()")),
    # 05
    "grads_of_returns_data": bug(N5, "ex_05_grads_of", "grads_of.returns_data", "grads_of",
                                 ("[leaf.grad for leaf in leaves]", "[leaf.data for leaf in leaves]")),
    # 06: the net
    "neuron_zero_init": bug(N6, "ex_06_neuron", "neuron.zero_init", "Neuron",
                            ("Value(random.uniform(-1, 1)) for _ in range(nin)", "Value(0.0) for _ in range(nin)"),
                            ("self.b = Value(random.uniform(-1, 1))", "self.b = Value(0.0)")),
    "neuron_same_weights": bug(N6, "ex_06_neuron", "neuron.same_weights_each_time", "Neuron",
                               ("Value(random.uniform(-1, 1)) for _ in range(nin)", "Value(0.1 * (i + 1)) for i in range(nin)")),
    "neuron_graph_cut": bug(N6, "ex_06_neuron", "neuron.graph_cut", "Neuron",
                            (NEURON_OUT, "act = sum((wi * xi for wi, xi in zip(self.w, x)), self.b)\n"
                                         "        return Value(math.tanh(act.data))")),
    "neuron_bias_first": bug(N6, "ex_06_neuron", "neuron.bias_first", "Neuron", ("return self.w + [self.b]", "return [self.b] + self.w")),
    "neuron_without_tanh": bug(N6, "ex_06_neuron", "neuron.missing_tanh", "Neuron", (NEURON_OUT, NEURON_OUT[:-len(".tanh()")])),
    "layer_list_for_one": bug(N6, "ex_06_layer", "layer.returns_list_for_one", "Layer",
                              ("return outs[0] if len(outs) == 1 else outs", "return outs")),
    "mlp_layers_all_nin": bug(N6, "ex_06_mlp", "mlp.layers_all_take_nin", "MLP",
                              ("Layer(sizes[i], sizes[i + 1])", "Layer(nin, sizes[i + 1])")),
    "mse_is_sum": bug(N6, "ex_06_mse_loss", "mse.is_sum", "mse_loss", (" / len(xs)", "")),
    "train_no_zero_grad": bug(N6, "ex_06_train", "train.no_zero_grad", "train", ("            p.grad = 0.0\n", "            pass\n")),
    "train_ascends": bug(N6, "ex_06_train", "train.ascends", "train", ("p.data -= lr * p.grad", "p.data += lr * p.grad")),
    "train_ignores_lr": bug(N6, "ex_06_train", "train.ignores_lr", "train", ("p.data -= lr * p.grad", "p.data -= 0.1 * p.grad")),
    "train_records_after": bug(N6, "ex_06_train", "train.records_after_update", "train",
                               (TRAIN_LOOP, TRAIN_LOOP.replace("        losses.append(loss.data)\n", "")
                                + "        losses.append(mse_loss(model, xs, ys).data)\n")),
}

ALTERNATIVES: dict[str, Variant] = {
    "derivative_half_steps": alt(N1, "ex_01_numerical_derivative",
                                 ("(f(x + h) - f(x - h)) / (2 * h)", "(f(x + h / 2) - f(x - h / 2)) / h")),
    "relerr_equal_first": alt(N1, "ex_01_relative_error",
                              (REL, "    if a == b:\n        return 0.0\n    return abs(a - b) / max(abs(a), abs(b))\n")),
    "repr_rounded": alt(N2, "ex_02_value_class", ('return f"Value(data={self.data})"', 'return f"Value({self.data:.3f})"')),
    "add_list_children": alt(N2, "ex_02_add", ("(self, other), \"+\")", "[self, other], \"+\")")),
    "mul_keywords": alt(N2, "ex_02_mul", ('return Value(self.data * other.data, (self, other), "*")',
                                          'out = Value(self.data * other.data, _children=(self, other), _op="*")\n    return out')),
    "manual_other_order": alt(N2, "ex_02_manual_grads", ("L.grad = 1.0\nf.grad = d.data * L.grad\nd.grad = f.data * L.grad\n",
                                                         "L.grad = 1\nd.grad = L.grad * f.data\nf.grad = L.grad * d.data\n")),
    "add_sum_assign": alt(N3, "ex_03_add", ("self.grad += out.grad", "self.grad = self.grad + out.grad")),
    "mul_factor_order": alt(N3, "ex_03_mul", ("self.grad += other.data * out.grad", "self.grad += out.grad * other.data")),
    "backward_iterative": alt(N3, "ex_03_backward",
                              ("    topo, visited = [], set()\n\n" + BUILD + "\n    build(self)\n",
                               "    topo, seen, stack = [], set(), [(self, False)]\n    while stack:\n"
                               "        v, done = stack.pop()\n        if done:\n            topo.append(v)\n"
                               "        elif id(v) not in seen:\n            seen.add(id(v))\n"
                               "            stack.append((v, True))\n            stack.extend((c, False) for c in v._prev)\n")),
    "backward_id_keys": alt(N3, "ex_03_backward", ("if v not in visited:", "if id(v) not in visited:"),
                            ("visited.add(v)", "visited.add(id(v))")),
    "tanh_exp_formula": alt(N4, "ex_04_tanh", ("t = math.tanh(self.data)",
                                               "e2 = math.exp(2 * self.data)\n    t = (e2 - 1) / (e2 + 1)")),
    "relu_as_micrograd": alt(N4, "ex_04_relu", ("max(self.data, 0.0), (self,), \"relu\"",
                                                "0 if self.data < 0 else self.data, (self,), 'ReLU'")),
    "relu_from_the_input": alt(N4, "ex_04_relu", ("(out.data > 0) * out.grad", "(self.data > 0) * out.grad")),
    "neg_sub_by_mul": alt(N4, "ex_04_neg_sub", ("return self + (-other)", "return self + other * -1")),
    # natural answers that use an earlier exercise: -1 * self needs __rmul__, -other + self (other a number) __radd__
    "neg_rmul": alt(N4, "ex_04_neg_sub", ("return self * -1", "return -1 * self")),
    "neg_value_sub_negated_first": alt(N4, "ex_04_neg_sub", ("return self * -1", "return self * Value(-1.0)"),
                                       ("return self + (-other)", "return -other + self")),
    "div_power_first": alt(N4, "ex_04_div", ("return self * other**-1", "return other**-1 * self")),
    "rtruediv_number_first": alt(N4, "ex_04_rtruediv", ("return self**-1 * other", "return other * self**-1")),
    "tanh_bricks_sinh_cosh": alt(N4, "ex_04_tanh_from_bricks",
                                 ("e = (2 * x).exp()\n    return (e - 1) / (e + 1)",
                                  "return (x.exp() - (-x).exp()) / (x.exp() + (-x).exp())")),
    "grads_of_named": alt(N5, "ex_05_grads_of", ("f(*leaves).backward()", "out = f(*leaves)\n    out.backward()")),
    "neuron_gauss": alt(N6, "ex_06_neuron", ("Value(random.uniform(-1, 1)) for _ in range(nin)",
                                             "Value(random.gauss(0, 0.5)) for _ in range(nin)"),
                        ("self.b = Value(random.uniform(-1, 1))", "self.b = Value(0.0)")),
    "mlp_loop": alt(N6, "ex_06_mlp", ("sizes = [nin] + nouts\n"
                                      "        self.layers = [Layer(sizes[i], sizes[i + 1]) for i in range(len(nouts))]",
                                      "self.layers = []\n        for nout in nouts:\n            self.layers.append(Layer(nin, nout))\n"
                                      "            nin = nout")),
    "mse_loop": alt(N6, "ex_06_mse_loss", ("return sum((model(x) - y) ** 2 for x, y in zip(xs, ys)) / len(xs)",
                                           "total = Value(0.0)\n    for x, y in zip(xs, ys):\n        diff = model(x) - y\n"
                                           "        total = total + diff * diff\n    return total * (1.0 / len(xs))")),
    "train_zero_after_update": alt(N6, "ex_06_train",
                                   (TRAIN_LOOP, "        losses.append(loss.data)\n        loss.backward()\n"
                                    "        for p in model.parameters():\n            p.data -= lr * p.grad\n"
                                    "            p.grad = 0\n")),
}


# Held out by audit 10 and fixed since (plus one more of each class): each now fails first under its own exercise,
# naming its method and misconception.
TRAIN_ZERO = "        for p in model.parameters():\n            p.grad = 0.0\n"
HELD_OUT_MISTAKES: dict[str, Variant] = {
    # a brick's _backward that sets grad = ... instead of += (the check has a leaf used by the brick and by the root)
    "tanh_assigns": bug(N4, "ex_04_tanh", "node.assigns_instead_of_accumulating", "Value.tanh",
                        ("self.grad += (1", "self.grad = (1")),
    "exp_assigns": bug(N4, "ex_04_exp", "node.assigns_instead_of_accumulating", "Value.exp",
                       ("self.grad += out.data", "self.grad = out.data")),
    "pow_assigns": bug(N4, "ex_04_pow", "node.assigns_instead_of_accumulating", "Value.__pow__",
                       ("self.grad += k", "self.grad = k")),
    "neg_own_node_assigns": bug(N4, "ex_04_neg_sub", "node.assigns_instead_of_accumulating", "Value.__neg__",
                                ("return self * -1", 'out = Value(-self.data, (self,), "neg")\n\n    def _backward():\n'
                                 "        self.grad = -out.grad\n\n    out._backward = _backward\n    return out")),
    "div_own_node_assigns": bug(N4, "ex_04_div", "node.assigns_instead_of_accumulating", "Value.__truediv__",
                                ("return self * other**-1",
                                 "other = other if isinstance(other, Value) else Value(other)\n"
                                 '    out = Value(self.data / other.data, (self, other), "/")\n\n    def _backward():\n'
                                 "        self.grad += out.grad / other.data\n"
                                 "        other.grad = -self.data / other.data**2 * out.grad\n\n"
                                 "    out._backward = _backward\n    return out")),
    # train's arguments vary from case to case
    "train_fixed_5_steps": bug(N6, "ex_06_train", "train.ignores_steps", "train", ("range(steps)", "range(5)")),
    "train_fixed_10_steps": bug(N6, "ex_06_train", "train.ignores_steps", "train", ("range(steps)", "range(10)")),
    "train_steps_minus_one": bug(N6, "ex_06_train", "train.steps_off_by_one", "train", ("range(steps)", "range(steps - 1)")),
    "mse_fixed_count": bug(N6, "ex_06_mse_loss", "mse.fixed_count", "mse_loss", (" / len(xs)", " / 4")),
    # a brick's graph cut, or a brick without a _backward, named with its method
    "neg_graph_cut": bug(N4, "ex_04_neg_sub", "neg.graph_cut", "Value.__neg__", ("return self * -1", "return Value(-self.data)")),
    "div_no_backward": bug(N4, "ex_04_div", "div.no_backward", "Value.__truediv__",
                           ("return self * other**-1", 'return Value(self.data / other.data, (self, other), "/")')),
    "sub_graph_cut": bug(N4, "ex_04_neg_sub", "sub.graph_cut", "__sub__",
                         ("return self + (-other)", "return Value(self.data - (other.data if isinstance(other, Value) "
                          "else other))")),
    "rtruediv_no_backward": bug(N4, "ex_04_rtruediv", "rtruediv.no_backward", "Value.__rtruediv__",
                                ("return self**-1 * other", 'return Value(other / self.data, (self,), "r/")')),
    # tanh from bricks whose composition cuts the graph
    "bricks_graph_cut": bug(N4, "ex_04_tanh_from_bricks", "tanh_bricks.graph_cut", "tanh_from_bricks",
                            ("e = (2 * x).exp()", "e = Value(math.exp(2 * x.data))")),
    "bricks_cut_at_the_end": bug(N4, "ex_04_tanh_from_bricks", "tanh_bricks.graph_cut", "tanh_from_bricks",
                                 ("return (e - 1) / (e + 1)", "return Value(((e - 1) / (e + 1)).data)")),
    # hand-filled grads: the upstream factor forgotten, not the factors swapped
    "manual_no_upstream_a": bug(N2, "ex_02_manual_grads", "manual.missing_upstream", "a.grad",
                                ("a.grad = b.data * e.grad", "a.grad = b.data")),
    "manual_no_upstream_b": bug(N2, "ex_02_manual_grads", "manual.missing_upstream", "b.grad",
                                ("b.grad = a.data * e.grad", "b.grad = a.data")),
    # ids for mistakes that had none
    "d_abs": bug(N1, "ex_01_numerical_derivative", "derivative.abs", "numerical_derivative",
                 ("return (f(x + h) - f(x - h)) / (2 * h)", "return abs(f(x + h) - f(x - h)) / (2 * h)")),
    "d_backward_diff": bug(N1, "ex_01_numerical_derivative", "derivative.backward_difference", "numerical_derivative",
                           ("(f(x + h) - f(x - h)) / (2 * h)", "(f(x) - f(x - h)) / h")),
    "d_ignores_h": bug(N1, "ex_01_numerical_derivative", "derivative.step_too_large", "numerical_derivative",
                       ("(f(x + h) - f(x - h)) / (2 * h)", "(f(x + 0.01) - f(x - 0.01)) / 0.02")),
    "d_sign_swapped": bug(N1, "ex_01_numerical_derivative", "derivative.sign_flipped", "numerical_derivative",
                          ("(f(x + h) - f(x - h)) / (2 * h)", "(f(x - h) - f(x + h)) / (2 * h)")),
    "re_sum_denominator": bug(N1, "ex_01_relative_error", "relerr.sum_scale", "relative_error",
                              ("abs(a - b) / scale", "abs(a - b) / (abs(a) + abs(b))")),
    "re_percent": bug(N1, "ex_01_relative_error", "relerr.percent", "relative_error",
                      ("abs(a - b) / scale", "100 * abs(a - b) / scale")),
    "re_floor_one": bug(N1, "ex_01_relative_error", "relerr.floor_one", "relative_error",
                        ("max(abs(a), abs(b))", "max(abs(a), abs(b), 1.0)")),
    "re_clipped_at_1": bug(N1, "ex_01_relative_error", "relerr.clipped", "relative_error",
                           ("abs(a - b) / scale", "min(1.0, abs(a - b) / scale)")),
    "re_mean_scale": bug(N1, "ex_01_relative_error", "relerr.mean_scale", "relative_error",
                         ("max(abs(a), abs(b))", "(abs(a) + abs(b)) / 2")),
    "repr_prints": bug(N2, "ex_02_value_class", "repr.prints_instead_of_returning", "Value.__repr__",
                       ('return f"Value(data={self.data})"', 'print(f"Value(data={self.data})")')),
    "add_children_floats": bug(N2, "ex_02_add", "node.wrong_children", "Value.__add__",
                               ('(self, other), "+")', '(self.data, other.data), "+")')),
    "mul_returns_float": bug(N2, "ex_02_mul", "node.returns_float", "Value.__mul__",
                             ('return Value(self.data * other.data, (self, other), "*")', "return self.data * other.data")),
    "add_minus_other": bug(N3, "ex_03_add", "add.sign_flipped", "Value.__add__", ("other.grad += out.grad", "other.grad -= out.grad")),
    "add_uses_other_grad": bug(N3, "ex_03_add", "add.uses_operand_grad", "Value.__add__",
                               ("self.grad += out.grad", "self.grad += other.grad")),
    "mul_uses_self_grad": bug(N3, "ex_03_mul", "mul.uses_grad_for_data", "Value.__mul__",
                              ("other.grad += self.data * out.grad", "other.grad += self.grad * out.grad")),
    "mul_forgets_other": bug(N3, "ex_03_mul", "mul.forgets_an_operand", "Value.__mul__",
                             ("        other.grad += self.data * out.grad\n", "")),
    "mul_other_grad_sign": bug(N3, "ex_03_mul", "mul.sign_flipped", "Value.__mul__",
                               ("other.grad += self.data * out.grad", "other.grad -= self.data * out.grad")),
    "tanh_plus": bug(N4, "ex_04_tanh", "tanh.one_plus_t_squared", "Value.tanh", ("(1 - t**2)", "(1 + t**2)")),
    "pow_k_plus_1": bug(N4, "ex_04_pow", "pow.exponent_off_by_one", "Value.__pow__",
                        ("k * self.data ** (k - 1)", "k * self.data ** (k + 1)")),
    "rtruediv_inverted": bug(N4, "ex_04_rtruediv", "rtruediv.operands_inverted", "__rtruediv__",
                             ("return self**-1 * other", "return self * other**-1")),
    "radd_recurses": bug(N4, "ex_04_reflected", "reflected.calls_itself", "__radd__",
                         ("    return self + other\n", "    return other + self\n")),
    "grads_no_backward": bug(N5, "ex_05_grads_of", "grads_of.no_backward", "grads_of",
                             ("    f(*leaves).backward()\n", "    f(*leaves)\n")),
    "grads_raw_inputs": bug(N5, "ex_05_grads_of", "grads_of.no_backward", "grads_of",
                            ("    f(*leaves).backward()\n", "    f(*[Value(x) for x in inputs]).backward()\n")),
    "neuron_no_bias": bug(N6, "ex_06_neuron", "neuron.missing_bias", "Neuron",
                          (NEURON_OUT, "return sum(wi * xi for wi, xi in zip(self.w, x)).tanh()")),
    "layer_first_only": bug(N6, "ex_06_layer", "layer.returns_one_output", "Layer",
                            ("return outs[0] if len(outs) == 1 else outs", "return outs[0]")),
    "layer_same_neuron": bug(N6, "ex_06_layer", "layer.shared_neuron", "Layer",
                             ("[Neuron(nin) for _ in range(nout)]", "[Neuron(nin)] * nout")),
    "mlp_feeds_x_each_layer": bug(N6, "ex_06_mlp", "mlp.layers_not_chained", "MLP",
                                  ("        for layer in self.layers:\n            x = layer(x)\n        return x\n",
                                   "        for layer in self.layers:\n            out = layer(x)\n        return out\n")),
    "mse_not_squared": bug(N6, "ex_06_mse_loss", "mse.not_squared", "mse_loss", ("sum((model(x) - y) ** 2", "sum((model(x) - y)")),
    "mse_square_of_sum": bug(N6, "ex_06_mse_loss", "mse.square_of_sum", "mse_loss",
                             ("sum((model(x) - y) ** 2 for x, y in zip(xs, ys))", "sum((model(x) - y) for x, y in zip(xs, ys)) ** 2")),
    "train_zero_first_layer": bug(N6, "ex_06_train", "train.partial_zero_grad", "train",
                                  (TRAIN_ZERO, TRAIN_ZERO.replace("model.parameters()", "model.layers[0].parameters()"))),
    "train_lr_divided": bug(N6, "ex_06_train", "train_descends.wrong_result", "train",
                            ("p.data -= lr * p.grad", "p.data -= lr / len(xs) * p.grad")),
}
TOPO = "    topo, visited = [], set()\n\n" + BUILD + "\n    build(self)\n"
HELD_OUT_ALTERNATIVES: dict[str, Variant] = {
    "A_d_half_factor": alt(N1, "ex_01_numerical_derivative", ("(f(x + h) - f(x - h)) / (2 * h)", "(f(x + h) - f(x - h)) * (0.5 / h)")),
    "A_re_tiny_floor": alt(N1, "ex_01_relative_error", (REL, "    return abs(a - b) / max(abs(a), abs(b), 1e-300)\n")),
    "A_value_slots": alt(N2, "ex_02_value_class",
                         ('    """A number that remembers the values and the operation that produced it."""\n',
                          '    """A number that remembers the values and the operation that produced it."""\n\n'
                          '    __slots__ = ("data", "grad", "_backward", "_prev", "_op", "label")\n'),
                         ("self._prev = set(_children)", "self._prev = tuple(_children)")),
    "A_add_loop": alt(N3, "ex_03_add", ("        self.grad += out.grad\n        other.grad += out.grad\n",
                                        "        for v in (self, other):\n            v.grad = v.grad + 1 * out.grad\n")),
    "A_bw_kahn": alt(N3, "ex_03_backward", (TOPO + "    self.grad = 1.0\n    for node in reversed(topo):\n        node._backward()\n",
                     "    users, seen, todo = {}, {id(self)}, [self]\n    while todo:\n        v = todo.pop()\n"
                     "        for c in v._prev:\n            users[id(c)] = users.get(id(c), 0) + 1\n"
                     "            if id(c) not in seen:\n                seen.add(id(c))\n                todo.append(c)\n"
                     "    self.grad = 1\n    ready = [self]\n    while ready:\n        v = ready.pop()\n        v._backward()\n"
                     "        for c in v._prev:\n            users[id(c)] -= 1\n            if users[id(c)] == 0:\n"
                     "                ready.append(c)\n")),
    "A_tanh_out_data": alt(N4, "ex_04_tanh", ("(1 - t**2) * out.grad", "(1 - out.data * out.data) * out.grad")),
    "A_exp_math_e": alt(N4, "ex_04_exp", ('Value(math.exp(self.data), (self,), "exp")', 'Value(math.e ** self.data, (self,), "exp")'),
                        ("out.data * out.grad", "math.exp(self.data) * out.grad")),
    "A_pow_no_assert_float": alt(N4, "ex_04_pow", ('    assert isinstance(k, (int, float)), "only number powers"\n', ""),
                                 ("k * self.data ** (k - 1) * out.grad", "out.grad * k * (self.data ** (k - 1))")),
    "A_div_float_pow": alt(N4, "ex_04_div", ("return self * other**-1", "return self * (other ** -1.0)")),
    "A_rtruediv_value": alt(N4, "ex_04_rtruediv", ("return self**-1 * other", "return Value(other) * self**-1")),
    "A_bricks_sub_neg": alt(N4, "ex_04_tanh_from_bricks", ("e = (2 * x).exp()\n    return (e - 1) / (e + 1)",
                                                           "e = (x * 2).exp()\n    return 1 - 2 / (e + 1)")),
    "A_layer_len_check": alt(N6, "ex_06_layer",
                             ("outs = [n(x) for n in self.neurons]\n        return outs[0] if len(outs) == 1 else outs",
                              "if len(self.neurons) == 1:\n            return self.neurons[0](x)\n"
                              "        return [n(x) for n in self.neurons]")),
    "A_mse_y_minus_pred": alt(N6, "ex_06_mse_loss", ("return sum((model(x) - y) ** 2 for x, y in zip(xs, ys)) / len(xs)",
                                                     "return sum([(y - model(x)) ** 2 for x, y in zip(xs, ys)]) * (1 / len(ys))")),
    "A_train_int_zero_plus_neg": alt(N6, "ex_06_train", ("p.grad = 0.0", "p.grad = 0"),
                                     ("p.data -= lr * p.grad", "p.data += -lr * p.grad")),
}
assert not set(HELD_OUT_MISTAKES) & set(MISTAKES) and not set(HELD_OUT_ALTERNATIVES) & set(ALTERNATIVES)
MISTAKES.update(HELD_OUT_MISTAKES)
ALTERNATIVES.update(HELD_OUT_ALTERNATIVES)

def grade_id(cell: Any) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def notebook(variant: Variant) -> nbformat.NotebookNode:
    """The solution notebook with the variant's substitutions applied to its cell."""
    nb = nbformat.read(SOURCE / f"{variant.notebook}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if grade_id(c) == variant.cell)
    src = cell.source
    for old, new in variant.subs:
        assert src.count(old) == 1, f"{variant}: {old!r} occurs {src.count(old)} times in {variant.cell}"
        src = src.replace(old, new)
    cell.source = src
    return nb


def check_calls(source: str) -> list[tuple[tuple[str, ...], bool]]:
    """The `check(...)` calls of a grade cell: names and whether hidden."""
    calls = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "check":
            names = tuple(a.value for a in node.args if isinstance(a, ast.Constant))
            hidden = any(k.arg == "hidden" and getattr(k.value, "value", False) for k in node.keywords)
            calls.append((names, hidden))
    return calls


def visible_check_names() -> set[str]:
    """Every check a learner meets by name: those the workbook's check cells call."""
    return {n for path in SOURCE.glob("*.ipynb") for cell in nbformat.read(path, as_version=4).cells
            if cell.cell_type == "code" for names, _ in check_calls(
                "\n".join(ln for ln in cell.source.splitlines() if ln.strip() not in MARKERS)) for n in names}


def _sentence_patterns() -> list[re.Pattern[str]]:
    from autograder.checks import MISCONCEPTIONS
    from autograder.checks.messages import RECOVERED, at_level

    # a recovered formula ("your slope is `...`; it should be `...`") is the sentence where one was recovered
    recovered = re.escape(at_level(RECOVERED)).replace(re.escape("{what}"), r".+?").replace(re.escape("{got}"), r".+?")
    recovered = recovered.replace(re.escape("{want}"), r".+?").replace(re.escape("{where}"), r".*")
    return [re.compile(recovered),
            *(re.compile(re.escape(at_level(s)).replace(re.escape("{name}"), r"\S+")) for s in MISCONCEPTIONS.values())]


def summary_problems(summary: str) -> list[str]:
    """What is wrong with a summary's text: a ✗ row with no sentence, text left dangling, a probe's internal name.

    A failing row carries its misconception's sentence, says the check is not done yet, or points to the same
    cause above; no row ends in a colon (a lead cut from what it introduced); no name the learner never meets.
    """
    from autograder.checks import BY_NAME

    internal = set(BY_NAME) - visible_check_names()
    patterns = _sentence_patterns()
    problems = []
    for line in summary.splitlines():
        text = line.strip()
        if "✗ " not in text:
            continue
        if text.endswith(":") or "hint:" in text or "tested alone" in text or "found by testing" in text:
            problems.append(f"dangling or raw: {text}")
        if any(re.search(rf"\b{re.escape(n)}\b", text) for n in internal):
            problems.append(f"names an internal check: {text}")
        if not ("not implemented yet" in text or "same cause as above" in text or any(p.search(text) for p in patterns)):
            problems.append(f"no sentence: {text}")
    return problems


@dataclass
class Run:
    """What running a notebook in-process left: each grade cell's results, summary output, cell errors."""

    grades: list[tuple[str, list[Any], list[Any]]] = field(default_factory=list)  # (grade_id, visible, hidden)
    seconds: dict[str, tuple[float, float]] = field(default_factory=dict)  # grade_id -> (visible, visible + hidden)
    summary: str = ""
    errors: dict[str, str] = field(default_factory=dict)


def run(nb: nbformat.NotebookNode) -> Run:
    """Execute the code cells in one namespace (as a kernel would); grade cells are judged by calling the checks."""
    with nbgrader_execution("autograde"):  # demos run short, as under nbgrader (check cells are called here)
        return _run(nb)


def _run(nb: nbformat.NotebookNode) -> Run:
    from autograder import checks
    from autograder.notebook import record

    os.environ.setdefault("MPLBACKEND", "Agg")  # pictures are drawn off screen (under autograde, plot_* draws none)
    out = Run()
    ns: dict[str, Any] = {"__name__": "__main__"}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        src = "\n".join(ln for ln in cell.source.splitlines() if ln.strip() not in MARKERS)
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution"):
            visible, hidden = [], []
            spent = [0.0, 0.0]
            for names, is_hidden in check_calls(src):
                start = time.perf_counter()
                results = checks.run_checks([checks.get(n) for n in names], ns, hidden=is_hidden)
                spent[is_hidden] += time.perf_counter() - start
                (hidden if is_hidden else visible).extend(results)
            record(ns, visible)  # as `check` does in a kernel: the summary scores what each check gave here
            out.grades.append((meta["grade_id"], visible, hidden))
            out.seconds[meta["grade_id"]] = (spent[0], spent[0] + spent[1])
            continue
        buf = io.StringIO()
        # the summary is what a learner reads in their own kernel; under nbgrader it only says it is skipped
        mode = None if "summary(" in src else "autograde"
        linecache.cache[f"<cell {i}>"] = (len(src), None, src.splitlines(True), f"<cell {i}>")  # as IPython does
        try:
            with nbgrader_execution(mode), contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
                exec(compile(src, f"<cell {i}>", "exec"), ns)
        except BaseException as exc:  # a buggy engine may break a demo cell; the learner would run on
            out.errors[grade_id(cell) or f"cell {i}"] = f"{type(exc).__name__}: {exc}"
        finally:
            _close_figures()
        if "summary(" in src:
            out.summary += buf.getvalue()
    return out


def _close_figures() -> None:
    """Forget the figures a cell drew (a kernel shows and drops them; here they would pile up across runs)."""
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


# Issue 21: mistakes written from the exercise text, of the four classes the catalogue used to get wrong (the generic
# fallback, an error relayed without its cause, a misleading hint, blame on the method that shows the bug). Each
# names the misconception it must get (an id; for a recovered formula, the `.wrong_slope`/`.wrong_formula` id) and
# `shows`: text the first failure's message must contain (the recovered formula, the learner's line). No entry is a
# hand-written catalogue entry; `never` lists sentences that would mislead on it.
@dataclass(frozen=True)
class Diagnosed:
    variant: Variant
    shows: tuple[str, ...] = ()
    never: tuple[str, ...] = ()


RAISED = "your code raised an error"  # never where nothing raised
TRAIN_LOSS = "        loss = mse_loss(model, xs, ys)\n"
MANUAL = ("L.grad = 1.0\nf.grad = d.data * L.grad\nd.grad = f.data * L.grad\nc.grad = d.grad\ne.grad = d.grad\n"
          "b.grad = a.data * e.grad\na.grad = b.data * e.grad\n")


def dx(notebook: str, cell: str, misconception: str, method: str, subs: tuple[tuple[str, str], ...],
       shows: tuple[str, ...] = (), never: tuple[str, ...] = ()) -> Diagnosed:
    return Diagnosed(Variant(notebook, cell, subs, misconception, method), shows, never)


DIAGNOSED: dict[str, Diagnosed] = {
    # 1. wrong formulas nobody listed: recovered from the numbers
    "d_divides_by_2_then_times_h": dx(N1, "ex_01_numerical_derivative", "derivative.wrong_formula", "numerical_derivative",
                                      (("/ (2 * h)", "/ 2 * h"),), ("`(f(x + h) - f(x - h)) / 2 * h`",)),
    "d_forgets_h": dx(N1, "ex_01_numerical_derivative", "derivative.wrong_formula", "numerical_derivative",
                      (("/ (2 * h)", "/ 2"),), ("`(f(x + h) - f(x - h)) / 2`",)),
    "d_adds_the_two_points": dx(N1, "ex_01_numerical_derivative", "derivative.wrong_formula", "numerical_derivative",
                                (("f(x + h) - f(x - h)", "f(x + h) + f(x - h)"),), ("f(x + h) + f(x - h)",)),
    "d_divides_by_h_squared": dx(N1, "ex_01_numerical_derivative", "derivative.wrong_formula", "numerical_derivative",
                                 (("/ (2 * h)", "/ (2 * h * h)"),), ("`(f(x + h) - f(x - h)) / (2 * h) / h`",)),
    "re_without_scale": dx(N1, "ex_01_relative_error", "relerr.wrong_formula", "relative_error",
                           (("abs(a - b) / scale", "abs(a - b)"),), ("your relative_error is `abs(a - b)`",)),
    "re_scale_of_a_alone": dx(N1, "ex_01_relative_error", "relerr.wrong_formula", "relative_error",
                              (("max(abs(a), abs(b))", "abs(a)"),), ("`abs(a - b) / abs(a)`",)),
    "re_abs_of_a_only": dx(N1, "ex_01_relative_error", "relerr.wrong_formula", "relative_error",
                           (("max(abs(a), abs(b))", "max(abs(a), b)"),), ("`abs(a - b) / max(abs(a), b)`",),
                           ("not the smaller",)),
    "tanh_one_more_tanh": dx(N4, "ex_04_tanh", "tanh.wrong_slope", "Value.tanh", (("(1 - t**2)", "(1 - math.tanh(t)**2)"),),
                             ("`(1 - tanh(t)**2) * g`",)),
    "tanh_cube": dx(N4, "ex_04_tanh", "tanh.wrong_slope", "Value.tanh", (("(1 - t**2)", "(1 - t**3)"),), ("`(1 - t**3) * g`",)),
    "tanh_parentheses_left_out": dx(N4, "ex_04_tanh", "tanh.wrong_slope", "Value.tanh",
                                    (("(1 - t**2) * out.grad", "1 - t**2 * out.grad"),), ("`1 - t**2 * g`",)),
    "tanh_halved": dx(N4, "ex_04_tanh", "tanh.wrong_slope", "Value.tanh", (("(1 - t**2) * out.grad", "(1 - t**2) / 2 * out.grad"),),
                      ("`(1 - t**2) * g / 2`",)),
    "tanh_grad_twice": dx(N4, "ex_04_tanh", "tanh.wrong_slope", "Value.tanh",
                          (("(1 - t**2) * out.grad", "(1 - t**2) * out.grad * out.grad"),), ("`(1 - t**2) * g * g`",)),
    "exp_one_more_exp": dx(N4, "ex_04_exp", "exp.wrong_slope", "Value.exp", (("out.data * out.grad", "math.exp(out.data) * out.grad"),),
                           ("`exp(t) * g`",)),
    "exp_times_input": dx(N4, "ex_04_exp", "exp.wrong_slope", "Value.exp",
                          (("out.data * out.grad", "out.data * self.data * out.grad"),), ("`t * g * x`",)),
    "pow_k_minus_1_unbracketed": dx(N4, "ex_04_pow", "pow.wrong_slope", "Value.__pow__",
                                    (("k * self.data ** (k - 1) * out.grad", "k * self.data ** k-1 * out.grad"),),
                                    ("`k * x**k - 1 * g`",)),
    "pow_output_for_input": dx(N4, "ex_04_pow", "pow.wrong_slope", "Value.__pow__",
                               (("k * self.data ** (k - 1)", "k * out.data ** (k - 1)"),), ("`k * t**(k - 1) * g`",)),
    "pow_halved": dx(N4, "ex_04_pow", "pow.wrong_slope", "Value.__pow__",
                     (("k * self.data ** (k - 1) * out.grad", "k / 2 * self.data ** (k - 1) * out.grad"),),
                     ("`0.5 * k * x**(k - 1) * g`",)),
    "bricks_sign_of_numerator": dx(N4, "ex_04_tanh_from_bricks", "tanh_bricks.wrong_formula", "tanh_from_bricks",
                                   (("(e - 1) / (e + 1)", "(1 - e) / (e + 1)"),), ("`(1 - exp(2 * x)) / (exp(2 * x) + 1)`",)),
    "bricks_exp_of_x": dx(N4, "ex_04_tanh_from_bricks", "tanh_bricks.wrong_formula", "tanh_from_bricks",
                          (("e = (2 * x).exp()", "e = x.exp()"),), ("`(exp(x) - 1) / (exp(x) + 1)`",)),
    "rmul_bound_to_radd": dx(N4, "ex_04_reflected", "rmul.calls_add", "Value.__rmul__",
                             (("Value.__rmul__ = __rmul__", "Value.__rmul__ = __radd__"),), ("2 * a computes 2 + a",)),
    "div_multiplies": dx(N4, "ex_04_div", "div.multiplies", "Value.__truediv__", (("self * other**-1", "self * other"),)),
    "grads_of_backward_twice": dx(N5, "ex_05_grads_of", "grads_of.backward_twice", "grads_of",
                                  (("    f(*leaves).backward()\n", "    out = f(*leaves)\n    out.backward()\n    out.backward()\n"),)),
    "mse_graph_cut_by_data": dx(N6, "ex_06_mse_loss", "mse.graph_cut", "mse_loss",
                                (("return sum((model(x) - y) ** 2 for", "return sum(Value((model(x).data - y) ** 2) for"),)),
    "mse_len_minus_one": dx(N6, "ex_06_mse_loss", "mse.fixed_count", "mse_loss", ((" / len(xs)", " / (len(xs) - 1)"),),
                            ("divided by",), ("not a fixed number",)),
    "train_step_by_data": dx(N6, "ex_06_train", "train.steps_by_data", "train", (("p.data -= lr * p.grad", "p.data -= lr * p.data"),)),
    "train_zero_grad_after_backward": dx(N6, "ex_06_train", "train.loss_never_changes", "train",
                                         (("            p.grad = 0.0\n        loss.backward()\n",
                                           "            pass\n        loss.backward()\n        for p in model.parameters():\n"
                                           "            p.grad = 0.0\n"),), ("never moved",)),
    "add_loops_over_prev": dx(N3, "ex_03_add", "add.loses_a_use", "Value.__add__",
                              (("        self.grad += out.grad\n        other.grad += out.grad\n",
                                "        for child in out._prev:\n            child.grad += out.grad\n"),), (),
                              ("must accumulate `grad += ...`",)),
    "backward_seeds_every_node": dx(N3, "ex_03_backward", "backward.sets_every_grad", "Value.backward",
                                    (("    self.grad = 1.0\n    for node in reversed(topo):\n",
                                      "    for node in reversed(topo):\n        node.grad = 1.0\n"),)),
    # 2. errors of learner code, with their cause and the learner's own line
    "add_backward_called": dx(N3, "ex_03_add", "node.backward_is_none", "Value.__add__",
                              (("    out._backward = _backward\n", "    out._backward = _backward()\n"),), (), (RAISED,)),
    "mul_backward_called": dx(N3, "ex_03_mul", "node.backward_is_none", "Value.__mul__",
                              (("    out._backward = _backward\n", "    out._backward = _backward()\n"),), (), (RAISED,)),
    "backward_reverse_in_place": dx(N3, "ex_03_backward", "common.inplace_returns_none", "backward",
                                    (("for node in reversed(topo):", "for node in topo.reverse():"),),
                                    ("`for node in topo.reverse():`",)),
    "backward_reverse_assigned": dx(N3, "ex_03_backward", "common.none_iterated", "backward",
                                    (("    for node in reversed(topo):", "    topo = topo.reverse()\n    for node in reversed(topo):"),),
                                    ("line",)),
    "add_no_return": dx(N2, "ex_02_add", "common.returns_none", "Value.__add__",
                        (('    return Value(self.data + other.data, (self, other), "+")',
                          '    Value(self.data + other.data, (self, other), "+")'),), (), (RAISED,)),
    "tanh_no_return": dx(N4, "ex_04_tanh", "common.returns_none", "Value.tanh", (("    return out\n", ""),), (), (RAISED,)),
    "repr_without_return": dx(N2, "ex_02_value_class", "repr.prints_instead_of_returning", "Value.__repr__",
                              (('return f"Value(data={self.data})"', 'f"Value(data={self.data})"'),), ("returned None",)),
    "grads_of_passes_the_list": dx(N5, "ex_05_grads_of", "grads_of.passes_a_list", "grads_of",
                                   (("f(*leaves).backward()", "f(leaves).backward()"),), ("this passes the list, f(leaves)",)),
    "grads_of_on_floats": dx(N5, "ex_05_grads_of", "common.backward_on_number", "grads_of",
                             (("f(*leaves).backward()", "f(*inputs).backward()"),), ("line",)),
    "sub_number_not_wrapped": dx(N4, "ex_04_neg_sub", "node.number_not_wrapped", "Value.__sub__",
                                 (("return self + (-other)", 'out = Value(self.data - other.data, (self, other), "-")\n\n'
                                   "    def _backward():\n        self.grad += out.grad\n        other.grad -= out.grad\n\n"
                                   "    out._backward = _backward\n    return out"),), ("self.data - other.data",)),
    "neuron_call_no_return": dx(N6, "ex_06_neuron", "common.returns_none", "Neuron",
                                ((NEURON_OUT, NEURON_OUT.replace("return ", "")),), (), (RAISED,)),
    "mse_returns_float": dx(N6, "ex_06_mse_loss", "common.float_for_value", "mse_loss",
                            (("return sum((model(x) - y) ** 2 for x, y in zip(xs, ys)) / len(xs)",
                              "return sum((model(x).data - y) ** 2 for x, y in zip(xs, ys)) / len(xs)"),), (), (RAISED,)),
    "mlp_returns_first_output": dx(N6, "ex_06_mlp", "common.value_for_list", "MLP",
                                   (("            x = layer(x)\n        return x\n", "            x = layer(x)\n        return x[0]\n"),),
                                   ("`return x[0]`",)),
    "grads_of_returns_the_leaves": dx(N5, "ex_05_grads_of", "grads_of.returns_values", "grads_of",
                                      (("[leaf.grad for leaf in leaves]", "leaves"),), (), (RAISED,)),
    # 3. hints that used to mislead
    "backward_preorder": dx(N3, "ex_03_backward", "backward.preorder", "Value.backward",
                            ((BUILD, BUILD.replace("            for child in v._prev:\n                build(child)\n"
                                                   "            topo.append(v)\n",
                                                   "            topo.append(v)\n            for child in v._prev:\n"
                                                   "                build(child)\n")),), (),
                            ("REVERSE topological order (from the root down)",)),
    "train_loss_once": dx(N6, "ex_06_train", "train.loss_not_recomputed", "train",
                          (("    for _ in range(steps):\n" + TRAIN_LOSS,
                            "    loss = mse_loss(model, xs, ys)\n    for _ in range(steps):\n"),),
                          (), ("does each step call",)),
    "manual_a_before_e": dx(N2, "ex_02_manual_grads", "manual.fill_order", "a.grad",
                            ((MANUAL, MANUAL.replace("e.grad = d.grad\n", "").replace("a.grad = b.data * e.grad\n",
                                                                                    "e.grad = d.grad\n")
                              .replace("c.grad = d.grad\n", "c.grad = d.grad\na.grad = b.data * e.grad\n")),),
                            (), ("(e = a * b: a.grad = b.data * e.grad",)),
    "manual_c_before_d": dx(N2, "ex_02_manual_grads", "manual.fill_order", "c.grad",
                            ((MANUAL, MANUAL.replace("c.grad = d.grad\n", "")
                              .replace("L.grad = 1.0\n", "L.grad = 1.0\nc.grad = d.grad\n")),),
                            (), ("routes d's gradient unchanged",)),
    # 4. blame on the method that holds the bug: __init__'s counts before parameters() and the outputs
    "neuron_one_weight_short": dx(N6, "ex_06_neuron", "neuron.weight_count", "Neuron.__init__",
                                  (("for _ in range(nin)]", "for _ in range(nin - 1)]"),), (), ("parameters() must list",)),
    "neuron_one_weight_extra": dx(N6, "ex_06_neuron", "neuron.weight_count", "Neuron.__init__",
                                  (("for _ in range(nin)]", "for _ in range(nin + 1)]"),)),
    "neuron_parameters_without_bias": dx(N6, "ex_06_neuron", "net.parameters_incomplete", "Neuron.parameters",
                                         (("return self.w + [self.b]", "return self.w"),)),
    "layer_one_neuron_short": dx(N6, "ex_06_layer", "layer.neuron_count", "Layer.__init__",
                                 (("for _ in range(nout)]", "for _ in range(nout - 1)]"),)),
    "layer_neurons_take_nout": dx(N6, "ex_06_layer", "layer.neuron_inputs", "Layer.__init__",
                                  (("[Neuron(nin) for _ in range(nout)]", "[Neuron(nout) for _ in range(nout)]"),)),
    "layer_parameters_are_neurons": dx(N6, "ex_06_layer", "net.parameters_not_values", "Layer.parameters",
                                       (("return [p for n in self.neurons for p in n.parameters()]", "return self.neurons"),),
                                       ("Neuron object",), ("2 Values",)),
    "mlp_one_layer_short": dx(N6, "ex_06_mlp", "mlp.layer_count", "MLP.__init__",
                              (("for i in range(len(nouts))]", "for i in range(len(nouts) - 1)]"),), (),
                              (RAISED, "should return the Value itself")),
    "mlp_parameters_are_layers": dx(N6, "ex_06_mlp", "net.parameters_not_values", "MLP.parameters",
                                    (("return [p for layer in self.layers for p in layer.parameters()]", "return self.layers"),),
                                    ("Layer object",)),
    "mlp_sizes_swapped": dx(N6, "ex_06_mlp", "mlp.layer_sizes", "MLP.__init__",
                            (("Layer(sizes[i], sizes[i + 1])", "Layer(sizes[i + 1], sizes[i])"),)),
}


RELEASE = ROOT / "notebooks" / "workbook"


def learner_notebook(name: str, variant: Variant | None = None, unfinished: str | None = None) -> nbformat.NotebookNode:
    """The released notebook `name` as a learner has it: every exercise solved (with `variant`'s edit, if any),
    except the exercise `unfinished`, left as its stub. Hidden tests are absent, as in the release."""
    solved = notebook(variant) if variant else nbformat.read(SOURCE / f"{name}.ipynb", as_version=4)
    answers = {grade_id(c): "\n".join(ln for ln in c.source.splitlines() if ln.strip() not in MARKERS)
               for c in solved.cells if c.get("metadata", {}).get("nbgrader", {}).get("solution")}
    nb = nbformat.read(RELEASE / f"{name}.ipynb", as_version=4)
    for cell in nb.cells:
        gid = grade_id(cell)
        if gid in answers and gid != unfinished:
            cell.source = answers[gid]
    return nb


# ---------------------------------------------------------------- exercises one by one (issue 34's cross test)

@dataclass(frozen=True)
class Exercise:
    """One solution cell of a notebook and the grade cells that judge it: those after it, before the next one."""

    notebook: str
    cell: str
    grade_cells: tuple[str, ...]


@functools.cache
def exercises(name: str) -> tuple[Exercise, ...]:
    """The notebook's exercises in order (solution cells), each with its grade cells."""
    nb = nbformat.read(SOURCE / f"{name}.ipynb", as_version=4)
    found: list[tuple[str, list[str]]] = []
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution"):
            found.append((meta["grade_id"], []))
        elif meta.get("grade") and found:
            found[-1][1].append(meta["grade_id"])
    return tuple(Exercise(name, gid, tuple(cells)) for gid, cells in found)


@functools.cache
def stub(variant_notebook: str, cell: str) -> Variant:
    """The exercise `cell` as the released notebook has it (its stub): a variant replacing the whole solution."""
    solved = nbformat.read(SOURCE / f"{variant_notebook}.ipynb", as_version=4)
    released = nbformat.read(RELEASE / f"{variant_notebook}.ipynb", as_version=4)
    before = next(c.source for c in solved.cells if grade_id(c) == cell)
    after = next(c.source for c in released.cells if grade_id(c) == cell)
    return Variant(variant_notebook, cell, ((before, after),), "stub", "")


def known_mistakes(name: str, cell: str) -> list[Variant]:
    """Every mistake the corpus holds for one exercise: the catalogue's, then the unlisted ones of issue 21."""
    listed = [v for v in MISTAKES.values() if (v.notebook, v.cell) == (name, cell)]
    return listed + [d.variant for d in DIAGNOSED.values() if (d.variant.notebook, d.variant.cell) == (name, cell)]


def with_variants(name: str, variants: list[Variant]) -> nbformat.NotebookNode:
    """The solution notebook `name` with each variant's substitutions applied to its own cell."""
    nb = nbformat.read(SOURCE / f"{name}.ipynb", as_version=4)
    for variant in variants:
        cell = next(c for c in nb.cells if grade_id(c) == variant.cell)
        src = cell.source
        for old, new in variant.subs:
            assert src.count(old) == 1, f"{variant}: {old!r} occurs {src.count(old)} times in {variant.cell}"
            src = src.replace(old, new)
        cell.source = src
    return nb


def graded_cells(nb: nbformat.NotebookNode, hidden: bool = True) -> dict[str, list[Any]]:
    """Each grade cell's results (visible, and hidden unless `hidden` is False), running only the nbgrader cells in
    order in one namespace: what nbgrader scores, without the demos (which no check reads)."""
    from autograder import checks

    ns: dict[str, Any] = {"__name__": "__main__"}
    out: dict[str, list[Any]] = {}
    with nbgrader_execution("autograde"):
        for i, cell in enumerate(nb.cells):
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if cell.cell_type != "code" or not meta:
                continue
            src = "\n".join(ln for ln in cell.source.splitlines() if ln.strip() not in MARKERS)
            if meta.get("grade") and not meta.get("solution"):
                out[meta["grade_id"]] = [r for names, is_hidden in check_calls(src) if hidden or not is_hidden
                                         for r in checks.run_checks([checks.get(n) for n in names], ns, hidden=is_hidden)]
                continue
            linecache.cache[f"<cell {i}>"] = (len(src), None, src.splitlines(True), f"<cell {i}>")
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    exec(compile(src, f"<cell {i}>", "exec"), ns)
            except BaseException:  # an unfinished or broken exercise: nbgrader records the error and goes on
                pass
    return out
