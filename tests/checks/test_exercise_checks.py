"""The checks of single notebooks' exercises pass the right answer and catch the classic slips."""

import pytest

from autograder import checks as catalog
from autograder.checks import run_check


def outcome(name: str, ns: dict):
    return run_check(catalog.get(name), ns)


def central(f, x, h=1e-5):
    return (f(x + h) - f(x - h)) / (2 * h)


def forward(f, x, h=1e-5):
    return (f(x + h) - f(x)) / h


def test_numerical_derivative_passes_central_differences_and_names_a_forward_difference():
    assert outcome("numerical_derivative", {"numerical_derivative": central}).passed
    result = outcome("numerical_derivative", {"numerical_derivative": forward})
    assert not result.passed
    assert "numerical_derivative of 3x² - 4x + 5 at x = 3.0: expected 14" in result.message
    assert "forward difference" in result.message


def safe_relative_error(a, b):
    scale = max(abs(a), abs(b))
    return 0.0 if scale == 0 else abs(a - b) / scale


@pytest.mark.parametrize("wrong", [
    lambda a, b: abs(a - b) / min(abs(a), abs(b)) if min(abs(a), abs(b)) else 0.0,  # the smaller scale
    lambda a, b: abs(a - b) / max(abs(a), abs(b)),  # 0 / 0 for two zeros
    lambda a, b: abs(a - b),  # absolute, not relative
])
def test_relative_error_passes_the_safe_formula_and_fails_common_slips(wrong):
    assert outcome("relative_error", {"relative_error": safe_relative_error}).passed
    result = outcome("relative_error", {"relative_error": wrong})
    assert not result.passed and "relative_error(" in result.message


class Node:
    """Just enough of a Value for hand-filled gradients."""

    def __init__(self, data, grad=0.0):
        self.data, self.grad = data, grad


def manual_graph(swap_mul: bool = False) -> dict:
    a, b, c, f = 2.0, -3.0, 10.0, -2.0
    e, d = a * b, a * b + c
    grads = {"L": 1.0, "d": f, "f": d, "e": f, "c": f, "a": b * f, "b": a * f}
    if swap_mul:  # `*` passes a node its own data instead of the other operand's
        grads["a"], grads["b"] = a * f, b * f
    values = {"a": a, "b": b, "c": c, "e": e, "d": d, "f": f, "L": d * f}
    return {k: Node(v, grads[k]) for k, v in values.items()}


def test_manual_backprop_passes_correct_hand_gradients_and_explains_an_unswapped_product():
    assert outcome("manual_backprop", manual_graph()).passed
    result = outcome("manual_backprop", manual_graph(swap_mul=True))
    assert not result.passed
    assert result.message.startswith("b.grad: expected dL/db = -4") and "`*` swaps" in result.message


def test_manual_backprop_says_which_node_is_missing():
    ns = manual_graph()
    del ns["e"]
    assert "not implemented yet: define e" in outcome("manual_backprop", ns).message



def test_a_wrong_answer_no_known_mistake_explains_gets_its_check_s_fallback_id_and_a_sentence():
    from autograder.checks import MISCONCEPTIONS

    result = outcome("numerical_derivative", {"numerical_derivative": lambda f, x, h=1e-5: 7.0})
    assert not result.passed and result.misconception == "numerical_derivative.wrong_result"
    assert MISCONCEPTIONS["numerical_derivative.wrong_result"] in result.message
    assert all(f"{c.name}.wrong_result" in MISCONCEPTIONS for c in catalog.CHECKS)


def test_an_error_of_learner_code_carries_an_id_and_a_stub_none():
    def printing(a, b):
        raise TypeError("boom")

    result = outcome("relative_error", {"relative_error": printing})
    assert result.status == catalog.ERROR and result.misconception == "common.raised"


def test_train_s_steps_lr_and_data_size_differ_from_case_to_case_and_avoid_the_usual_constants():
    check = catalog.get("train_descends")
    cases = check.make_cases() + check.make_cases(hidden=True) + check.make_cases(hidden=True, secret="course")
    assert all(c["steps"] not in (5, 10) and c["lr"] not in (0.1, 0.05) for c in cases)
    hidden = check.make_cases(hidden=True)
    assert len({c["steps"] for c in hidden}) == len(hidden) and len({len(c["xs"]) for c in hidden}) == len(hidden)
    assert all(len(c["xs"]) != 4 for c in cases + catalog.get("mse_loss_backward").make_cases(hidden=True))
