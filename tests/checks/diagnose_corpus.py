"""Issue 34's evaluation set (points 7 and 8): learner mistakes nobody had listed, across all six notebooks, each with
the diagnoses that are true of it; and correct alternatives that must keep every point.

Written before the grader was changed for them, in the style of tests/checks/notebook_corpus.py (exact substitutions in one
solution cell of the real workbook). Each mistake is judged strictly, as the held-out sets are (`judge`):

- missed: no grade cell of the notebook fails;
- misplaced: the first failing grade cell is not the one right under the mistake's exercise;
- misleading: a failure in that cell names a misconception the mistake does not have (an id outside `accept`), or
  shows a sentence listed in `never`;
- specific: the first failure names an accepted misconception, or shows the learner's formula recovered from the
  numbers (where `accept` holds RECOVERED, and the formula shown contains `formula` when one is given);
- generic: anything else (the fallback "the numbers are not yet right", an error relayed without its cause).

`python tests/checks/diagnose_corpus.py` prints every entry's outcome and the counts; tests/checks/test_diagnose_corpus.py holds
the counts to issue 34's bar.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parent / "workbook")]  # (run as a script: the support modules)

from notebook_corpus import N1, N2, N3, N4, N5, N6, NEURON_OUT, Variant, grade_id, notebook, run  # noqa: E402

RECOVERED = "recovered"  # in `accept`: the learner's own formula, recovered from the numbers, is a specific diagnosis
GENERIC_IDS = ("common.raised", "common.unexpected_result")


@dataclass(frozen=True)
class Entry:
    """A mistake (or, with no `accept`, a correct alternative) and what may truthfully be said of it."""

    variant: Variant
    accept: frozenset[str] = frozenset()
    formula: str = ""  # a recovered formula must contain this text
    never: tuple[str, ...] = ()


def m(notebook_: str, cell: str, accept: str, *subs: tuple[str, str], formula: str = "",
      never: tuple[str, ...] = ()) -> Entry:
    """A mistake: `accept` holds the space-separated ids that are true of it (RECOVERED for a recovered formula)."""
    ids = frozenset(accept.split())
    return Entry(Variant(notebook_, cell, tuple(subs), sorted(ids)[0]), ids, formula, never)


def ok(notebook_: str, cell: str, *subs: tuple[str, str]) -> Entry:
    """A correct alternative."""
    return Entry(Variant(notebook_, cell, tuple(subs)))


CENTRAL = "(f(x + h) - f(x - h)) / (2 * h)"
SCALE = "max(abs(a), abs(b))"
TOPO_LINE = "    topo, visited = [], set()\n"
BUILD_IF = "        if v not in visited:\n            visited.add(v)\n"
LOOP = "    self.grad = 1.0\n    for node in reversed(topo):\n        node._backward()\n"
MUL_SELF = "self.grad += other.data * out.grad"
LEAVES = ("    leaves = [Value(x) for x in inputs]\n    f(*leaves).backward()\n    return [leaf.grad for leaf in leaves]\n")
LAYER_PARAMS = "return [p for n in self.neurons for p in n.parameters()]"
MLP_PARAMS = "return [p for layer in self.layers for p in layer.parameters()]"
MSE = "return sum((model(x) - y) ** 2 for x, y in zip(xs, ys)) / len(xs)"
UPDATE = "p.data -= lr * p.grad"
RECURSION_ADVICE = "call the operation the other way round"

MISTAKES: dict[str, Entry] = {
    # ---- 01: numerical_derivative, relative_error
    "d_steps_of_2h": m(N1, "ex_01_numerical_derivative", RECOVERED,
                       (CENTRAL, "(f(x + 2 * h) - f(x - 2 * h)) / (2 * h)"), formula="f(x + 2 * h)",
                       never=("not by h",)),
    "d_no_division": m(N1, "ex_01_numerical_derivative", RECOVERED, (CENTRAL, "f(x + h) - f(x - h)"),
                       formula="f(x + h) - f(x - h)"),
    "d_division_upside_down": m(N1, "ex_01_numerical_derivative", RECOVERED,
                                (CENTRAL, "(2 * h) / (f(x + h) - f(x - h))"), formula="2 * h / (f(x + h) - f(x - h))"),
    "d_relative_step": m(N1, "ex_01_numerical_derivative", RECOVERED,
                         (CENTRAL, "(f(x * (1 + h)) - f(x * (1 - h))) / (2 * h)"), formula="x * (1 + h)"),
    "re_squared_difference": m(N1, "ex_01_relative_error", RECOVERED, ("abs(a - b) / scale", "(a - b) ** 2 / scale"),
                               formula="(a - b)**2"),
    "re_abs_of_the_max": m(N1, "ex_01_relative_error", RECOVERED, (SCALE, "abs(max(a, b))"), formula="abs(max(a, b))",
                           never=("max(abs(a), abs(b)): max(a, b) of two negative",)),
    # ---- 02: Value, + and *, hand-filled grads
    "add_adds_the_value_itself": m(N2, "ex_02_add", "node.data_and_value_mixed node.data_is_a_value",
                                   ("self.data + other.data", "self.data + other"), never=("__radd__",)),
    "manual_c_reads_e": m(N2, "ex_02_manual_grads", "manual.fill_order", ("c.grad = d.grad", "c.grad = e.grad"),
                          never=("the formula is right",)),
    "manual_a_uses_b_grad": m(N2, "ex_02_manual_grads", RECOVERED,
                              ("a.grad = b.data * e.grad", "a.grad = b.grad * e.grad"), formula="b.grad * e.grad"),
    "manual_f_adds": m(N2, "ex_02_manual_grads", RECOVERED, ("f.grad = d.data * L.grad", "f.grad = d.data + L.grad"),
                       formula="d.data + L.grad"),
    # ---- 03: local rules and backward()
    "bw_state_in_default_arguments": m(N3, "ex_03_backward", "backward.keeps_state",
                                       ("def backward(self):", "def backward(self, topo=[], visited=set()):"),
                                       (TOPO_LINE, "")),
    "bw_visited_set_kept_between_calls": m(N3, "ex_03_backward", "backward.keeps_state",
                                           ("def backward(self):", "_visited = set()\n\n\ndef backward(self):"),
                                           (TOPO_LINE, "    topo, visited = [], _visited\n")),
    "bw_seen_flag_on_the_node": m(N3, "ex_03_backward", "backward.keeps_state",
                                 (BUILD_IF, '        if not getattr(v, "_seen", False):\n            v._seen = True\n')),
    "bw_seeds_after_the_loop": m(N3, "ex_03_backward", "backward.root_not_seeded",
                                 (LOOP, "    for node in reversed(topo):\n        node._backward()\n    self.grad = 1.0\n")),
    "bw_skips_the_root": m(N3, "ex_03_backward", "backward.misses_nodes",
                           ("for node in reversed(topo):", "for node in reversed(topo[:-1]):")),
    "mul_slope_divides_by_data": m(N3, "ex_03_mul", "node.divides_by_data",
                                   (MUL_SELF, "self.grad += out.data / self.data * out.grad")),
    "mul_upstream_squared": m(N3, "ex_03_mul", RECOVERED, (MUL_SELF, MUL_SELF + " * out.grad"), formula="g * g"),
    "add_other_takes_self_grad": m(N3, "ex_03_add", "add.uses_operand_grad",
                                   ("other.grad += out.grad", "other.grad += self.grad")),
    # ---- 04: the bricks
    "tanh_children_without_comma": m(N4, "ex_04_tanh", "node.children_not_a_collection",
                                     ('Value(t, (self,), "tanh")', 'Value(t, (self), "tanh")'), never=("Layer(",)),
    "tanh_square_of_one_minus_t": m(N4, "ex_04_tanh", RECOVERED, ("(1 - t**2)", "(1 - t)**2"), formula="(1 - t)**2"),
    "exp_adds_the_node": m(N4, "ex_04_exp", "node.value_added_to_grad node.grad_is_a_value",
                           ("out.data * out.grad", "out * out.grad"), never=("__radd__",)),
    "pow_slope_divides_by_data": m(N4, "ex_04_pow", "node.divides_by_data",
                                   ("k * self.data ** (k - 1)", "k * out.data / self.data")),
    "pow_factor_k_minus_1": m(N4, "ex_04_pow", RECOVERED, ("k * self.data ** (k - 1)", "(k - 1) * self.data ** (k - 1)"),
                              formula="(k - 1) * x**(k - 1)"),
    "neg_through_rsub": m(N4, "ex_04_neg_sub", "common.endless_recursion",
                          ("return self * -1", "return 0 - self"), never=(RECURSION_ADVICE,)),
    "rsub_calls_itself": m(N4, "ex_04_neg_sub", "reflected.calls_itself_ordered",
                           ("return other + (-self)", "return other - self"), never=(RECURSION_ADVICE,)),
    "rtruediv_calls_itself": m(N4, "ex_04_rtruediv", "reflected.calls_itself_ordered",
                               ("return self**-1 * other", "return other / self"), never=(RECURSION_ADVICE,)),
    "div_own_node_forgets_the_square": m(N4, "ex_04_div", RECOVERED,
                                         ("return self * other**-1",
                                          "other = other if isinstance(other, Value) else Value(other)\n"
                                          '    out = Value(self.data / other.data, (self, other), "/")\n\n'
                                          "    def _backward():\n        self.grad += out.grad / other.data\n"
                                          "        other.grad += -self.data / other.data * out.grad\n\n"
                                          "    out._backward = _backward\n    return out"), formula="-x * g / y"),
    "bricks_precedence": m(N4, "ex_04_tanh_from_bricks", RECOVERED,
                           ("return (e - 1) / (e + 1)", "return (e - 1) / e + 1"), formula="/ exp(2 * x) + 1"),
    # ---- 05: grads_of
    "grads_of_leaves_keyed_by_value": m(N5, "ex_05_grads_of", "grads_of.leaves_by_value",
                                        (LEAVES, "    leaves = {x: Value(x) for x in inputs}\n"
                                                 "    f(*[leaves[x] for x in inputs]).backward()\n"
                                                 "    return [leaves[x].grad for x in inputs]\n")),
    "grads_of_reversed": m(N5, "ex_05_grads_of", "grads_of.wrong_order",
                           ("[leaf.grad for leaf in leaves]", "[leaf.grad for leaf in reversed(leaves)]")),
    "grads_of_first_only": m(N5, "ex_05_grads_of", "grads_of.wrong_count",
                             ("return [leaf.grad for leaf in leaves]", "return [leaves[0].grad]")),
    # ---- 06: the net
    "neuron_bias_outside_tanh": m(N6, "ex_06_neuron", f"{RECOVERED} neuron.bias_outside_tanh",
                                  (NEURON_OUT, "return sum((wi * xi for wi, xi in zip(self.w, x)), Value(0.0)).tanh() "
                                               "+ self.b")),
    "neuron_weights_squared": m(N6, "ex_06_neuron", RECOVERED,
                                (NEURON_OUT, "return sum((wi * wi for wi, xi in zip(self.w, x)), self.b).tanh()"),
                                formula="dot(w, w)"),
    "neuron_one_shared_weight": m(N6, "ex_06_neuron", "neuron.shared_weight",
                                  ("[Value(random.uniform(-1, 1)) for _ in range(nin)]",
                                   "[Value(random.uniform(-1, 1))] * nin"), never=("(zero?)",)),
    "layer_weights_before_biases": m(N6, "ex_06_layer", "net.parameters_order",
                                     (LAYER_PARAMS, "return [w for n in self.neurons for w in n.w] + "
                                                    "[n.b for n in self.neurons]")),
    "mlp_parameters_last_layer_first": m(N6, "ex_06_mlp", "net.parameters_order",
                                         (MLP_PARAMS, "return [p for layer in reversed(self.layers) "
                                                      "for p in layer.parameters()]")),
    "mse_square_binds_to_y": m(N6, "ex_06_mse_loss", RECOVERED,
                               (MSE, "return sum(model(x) - y ** 2 for x, y in zip(xs, ys)) / len(xs)"),
                               formula="y**2"),
    "mse_root_of_the_mean": m(N6, "ex_06_mse_loss", RECOVERED,
                              (MSE, "return (sum((model(x) - y) ** 2 for x, y in zip(xs, ys)) / len(xs)) ** 0.5"),
                              formula="** 0.5"),
    "train_update_assigns": m(N6, "ex_06_train", RECOVERED, (UPDATE, "p.data = -lr * p.grad"), formula="-lr * g"),
    "train_update_scaled_by_loss": m(N6, "ex_06_train", RECOVERED, (UPDATE, "p.data -= lr * loss.data * p.grad"),
                                     formula="L"),
    "train_records_the_loss_value": m(N6, "ex_06_train", "train.records_values",
                                      ("losses.append(loss.data)", "losses.append(loss)")),
}

ALTERNATIVES: dict[str, Entry] = {
    "re_zero_when_equal": ok(N1, "ex_01_relative_error",
                             ("0.0 if scale == 0 else abs(a - b) / scale", "0.0 if a == b else abs(a - b) / scale")),
    "re_scale_or_one": ok(N1, "ex_01_relative_error",
                          ("    scale = max(abs(a), abs(b))\n    return 0.0 if scale == 0 else abs(a - b) / scale\n",
                           "    return abs(a - b) / (max(abs(a), abs(b)) or 1.0)\n")),
    "repr_plain_number": ok(N2, "ex_02_value_class", ('return f"Value(data={self.data})"', "return str(self.data)")),
    "mul_children_other_first": ok(N2, "ex_02_mul", ('(self, other), "*")', '(other, self), "*")')),
    "bw_visited_list": ok(N3, "ex_03_backward", (TOPO_LINE, "    topo, visited = [], []\n"),
                          ("visited.add(v)", "visited.append(v)")),
    "mul_sum_assign_factors_swapped": ok(N3, "ex_03_mul", (MUL_SELF, "self.grad = self.grad + out.grad * other.data")),
    # `/` through `1 / other`: right once `__rtruediv__` (a later exercise of notebook 4) is written, and judged on
    # the grader's `__rtruediv__` until then (issue 34: each exercise judged apart), so it keeps its points
    "div_through_a_reciprocal": ok(N4, "ex_04_div", ("return self * other**-1", "return self * (1 / other)")),
    "tanh_factored": ok(N4, "ex_04_tanh", ("(1 - t**2)", "(1 - t) * (1 + t)")),
    "bricks_exp_squared": ok(N4, "ex_04_tanh_from_bricks", ("e = (2 * x).exp()", "e = x.exp() ** 2")),
    "grads_of_mapped": ok(N5, "ex_05_grads_of", ("leaves = [Value(x) for x in inputs]", "leaves = list(map(Value, inputs))")),
    "neuron_sum_loop": ok(N6, "ex_06_neuron", (NEURON_OUT, "act = self.b\n        for wi, xi in zip(self.w, x):\n"
                                                           "            act = act + wi * xi\n        return act.tanh()")),
    "layer_parameters_by_sum": ok(N6, "ex_06_layer", (LAYER_PARAMS, "return sum((n.parameters() for n in self.neurons), [])")),
    "mse_over_len_ys": ok(N6, "ex_06_mse_loss", (" / len(xs)", " / len(ys)")),
}
assert not set(MISTAKES) & set(ALTERNATIVES)

OUTCOMES = ("specific", "generic", "misleading", "missed", "misplaced")


@dataclass(frozen=True)
class Judged:
    """One entry's outcome and the text it rests on."""

    outcome: str
    check: str = ""
    misconception: str | None = None
    message: str = ""


def _cell_under(nb, cell: str) -> str:
    ids = [grade_id(c) for c in nb.cells]
    return next(grade_id(c) for c in nb.cells[ids.index(cell) + 1:]
                if c.get("metadata", {}).get("nbgrader", {}).get("grade") and not c.metadata.nbgrader.get("solution"))


def _specific_id(misconception: str | None) -> bool:
    return bool(misconception) and not misconception.endswith(".wrong_result") and misconception not in GENERIC_IDS


def judge(entry: Entry) -> Judged:
    """The entry's outcome, judged strictly (see the module docstring); "ok" or "failed" for an alternative."""
    nb = notebook(entry.variant)
    ran = run(nb)
    failing = [(gid, [r for r in visible if not r.passed] or [r for r in hidden if not r.passed])
               for gid, visible, hidden in ran.grades]
    failing = [(gid, rs) for gid, rs in failing if rs]
    if not entry.accept:
        return Judged("ok" if not failing else "failed", *(failing[0][0], failing[0][1][0].misconception,
                                                           failing[0][1][0].message) if failing else ())
    if not failing:
        return Judged("missed")
    gid, failed = failing[0]
    first = failed[0]
    if gid != _cell_under(nb, entry.variant.cell):
        return Judged("misplaced", first.name, first.misconception, first.message)
    for r in failed:
        said = r.misconception if not r.recovered else RECOVERED
        wrong_id = _specific_id(r.misconception) and not r.recovered and r.misconception not in entry.accept
        if wrong_id or any(text in r.message for text in entry.never) or (r.recovered and RECOVERED not in entry.accept):
            return Judged("misleading", r.name, said, r.message)
    if first.recovered:
        def norm(text: str) -> str:  # the same formula, however spaced and bracketed
            return "".join(ch for ch in text if ch not in " ()")

        good = RECOVERED in entry.accept and norm(entry.formula) in norm(first.recovered["got"])
        return Judged("specific" if good else "misleading", first.name, RECOVERED, first.message)
    if first.misconception in entry.accept:
        return Judged("specific", first.name, first.misconception, first.message)
    return Judged("generic", first.name, first.misconception, first.message)


def main() -> None:
    """Print every entry's outcome, then the counts."""
    counts: Counter[str] = Counter()
    for name, entry in {**MISTAKES, **ALTERNATIVES}.items():
        j = judge(entry)
        counts[j.outcome] += 1
        detail = j.message.splitlines()[0][:150] if j.message else ""
        hint = next((ln.strip()[:200] for ln in j.message.splitlines() if ln.strip().startswith("hint:")), "")
        print(f"{j.outcome:10} {name:36} {j.check:24} {j.misconception or '':36} {detail}\n{'':12}{hint}")
    print(f"\nmistakes: {len(MISTAKES)}; " + ", ".join(f"{o} {counts[o]}" for o in OUTCOMES))
    print(f"alternatives: {len(ALTERNATIVES)}; failed {counts['failed']}")


if __name__ == "__main__":
    main()
