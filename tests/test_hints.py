"""Failure messages carry the hint for the likely misconception and lines that reproduce the wrong numbers."""

import contextlib
import io
import re
import textwrap

import pytest
from mistakes import BY_NAME, graded, learner_namespace

from autograder.loader import load

NUMBER = re.compile(r"-?(?:\d+\.\d*|\.\d+|\d+)(?:e[-+]?\d+)?|-?inf|nan")

HINTS = [
    # got 0
    ("root_not_seeded", "backward() must seed the root"),
    ("forward_order", "REVERSE topological order"),
    ("mul_backward_never_assigned", "out._backward = _backward"),
    # got half, or one use overwritten
    ("add_assigns_self", "must accumulate `grad += ...`"),
    ("add_assigns_other", "must accumulate `grad += ...`"),
    ("mul_assigns_self", "must accumulate `grad += ...`"),
    # sign flipped
    ("neg_is_identity", "the sign is flipped"),
    ("sub_reversed", "the sign is flipped"),
    ("rsub_reversed", "the sign is flipped"),
    # off by the upstream factor
    ("add_missing_upstream", "missing `* out.grad`"),
    ("mul_missing_upstream", "missing `* out.grad`"),
    # grows with the number of paths
    ("no_visited_set", "needs a visited set"),
    ("recursion_without_topo", "needs a visited set"),
    ("breadth_first_order", "breadth-first walk"),
    # local derivatives
    ("tanh_uses_input", "1 - t**2 with t = tanh(x), the OUTPUT"),
    ("mul_unswapped", "the operands look unswapped"),
    ("exp_derivative_is_input", "exp(x) is exp(x), the output itself"),
    ("pow_derivative_keeps_power", "n * x**(n-1)"),
    ("div_other_sign", "-a / b**2"),
    ("eq_hash_by_value", "__eq__/__hash__ by value"),
    # the net
    ("neuron_without_tanh", "the tanh is missing"),
    ("parameters_bias_first", "bias before its weights"),
    ("mse_is_sum", "sum of squared errors"),
    ("train_without_zero_grad", "never zeroed"),
    ("train_ascends", "move up the gradient"),
    ("train_records_after_update", "record loss.data before updating"),
    ("train_never_backward", "the loss never changes"),
    # the slips of issue 10
    ("add_records_no_children", "must remember its operands"),
    ("mul_records_plus", "must record the operation"),
    ("add_uses_out_data", "multiplies by out.data"),
    ("tanh_one_minus_t", "this looks like 1 - t"),
    ("tanh_without_child", "the graph is cut there"),
    ("div_inverted", "the operands are inverted"),
    ("add_leftover_raise", "delete that line"),
    ("neuron_zero_init", "draw each weight at random"),
    ("neuron_graph_cut", "the graph is cut there"),
    ("mlp_layers_all_nin", "sizes = [nin] + nouts"),
    ("train_ignores_lr", "use the lr argument"),
]


@pytest.mark.parametrize(("name", "hint"), HINTS, ids=[n for n, _ in HINTS])
def test_hint_names_the_misconception_of_the_mistake(name, hint):
    target = BY_NAME[name].target
    messages = [r.message for r in graded(name) if not r.passed and (target in r.targets or r.culprit == target)]
    assert any(f"hint: {hint}" in m or ("hint: " in m and hint in m) for m in messages), messages[:2]


def test_hints_do_not_misfire_on_another_mistake():
    # the sign hint belongs to `-`, not to an unswapped `*`
    assert not any("sign is flipped" in r.message for r in graded("mul_unswapped"))
    assert not any("visited set" in r.message for r in graded("tanh_uses_input"))


def repro_of(message: str) -> str:
    """The indented lines after `reproduce:`."""
    block = message.split("\n  reproduce:\n", 1)[1]
    return textwrap.dedent(block)


def run_printing(code: str, ns: dict) -> list[float]:
    """Numbers printed by code run in (a copy of) ns."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code, dict(ns))
    return [float(x) for x in NUMBER.findall(out.getvalue())]


def close_to_any(x: float, printed: list[float]) -> bool:
    # messages print 6 to 10 significant digits
    return any(abs(x - p) <= 1e-5 * max(1.0, abs(x)) for p in printed)


def got_numbers(message: str) -> list[float]:
    first = message.splitlines()[0]
    got = first.rsplit("got ", 1)[1].split(";")[0]
    return [float(x) for x in NUMBER.findall(got)]


# the wrong numbers of these depend on set iteration order (it follows id()), so a rebuild may differ
ORDER_DEPENDENT = {"add_assigns_self", "add_assigns_other", "mul_assigns_self", "mul_assigns_other", "no_visited_set",
                   "recursion_without_topo", "breadth_first_order", "eq_hash_by_value", "topo_preorder"}
ERROR = re.compile(r"^(\w+(?:Error|Exception))\b")


def runs(code: str, ns: dict, n: int) -> list[list[float]]:
    """Numbers printed by n runs; objects kept alive in between shift id() and so set order."""
    keep, out = [], []
    for i in range(n):
        keep.append([object() for _ in range(i * 7 + 1)])
        out.append(run_printing(code, ns))
    return out


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_repro_lines_reproduce_the_failure_on_the_buggy_engine(name, engine_path):
    failed = [r for r in graded(name) if not r.passed and (BY_NAME[name].target in r.targets or r.culprit == BY_NAME[name].target)]
    with_repro = [r for r in failed if "\n  reproduce:\n" in r.message]
    assert with_repro, f"{name}: no failure message carries reproduce lines"
    buggy = learner_namespace(name)
    reference = load(engine_path("reference")).namespace
    for r in with_repro:
        code = repro_of(r.message)
        error = ERROR.match(r.message)
        if error:
            with pytest.raises(Exception) as info:
                run_printing(code, buggy)
            assert type(info.value).__name__ == error.group(1)
            continue
        if " got " in r.message.splitlines()[0]:
            printed = runs(code, buggy, 12 if name in ORDER_DEPENDENT else 1)
            for g in got_numbers(r.message):
                assert any(close_to_any(g, p) for p in printed), (r.name, g, printed, code)
        # on a correct engine the same lines print what the comment says is expected
        expected = [float(x) for x in NUMBER.findall(code.rsplit("# expected", 1)[-1])] if "# expected" in code else []
        good = run_printing(code, reference)
        for e in expected:
            assert close_to_any(e, good), (r.name, e, good, code)
