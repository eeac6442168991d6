"""A hint fires only when its evidence is present: each hint held against a correct method that differs from the
mistake it names only in the respect the hint claims (the surface the hint could key on is there, the bug is not),
which must earn full marks with no hint at all; and a hint the grader's other observations contradict is replaced."""

import pytest
from twins import BASE, EXEMPT, FALLBACK, TWINS, graded

from autograder.checks import BY_NAME, MISCONCEPTIONS
from autograder.checks import messages as msg


def test_the_base_of_every_twin_earns_full_marks():
    assert [(r.name, r.message[:200]) for r in graded(BASE) if not r.passed] == []


@pytest.mark.parametrize("name", sorted(TWINS))
def test_a_correct_twin_of_the_mistake_a_hint_names_hears_no_hint(name):
    twin = TWINS[name]
    assert all(i in msg.MISCONCEPTIONS for i in twin.ids), [i for i in twin.ids if i not in msg.MISCONCEPTIONS]
    results = graded(twin.source(name))
    assert [(r.name, r.misconception, r.message[:300]) for r in results if not r.passed] == []
    assert not any(msg.hint(i, "a") in r.message for r in results for i in twin.ids)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TWINS))
def test_a_correct_twin_earns_full_marks_on_the_hidden_cases_too(name):
    assert [(r.name, r.message[:300]) for r in graded(TWINS[name].source(name), hidden=True) if not r.passed] == []


def hint_ids() -> list[str]:
    """Every misconception id of the catalogue but the checks' fallbacks."""
    fallbacks = {msg.fallback_id(name) for name in BY_NAME}
    return [i for i in msg.MISCONCEPTIONS if i not in fallbacks]


def test_every_hint_id_has_a_correct_twin_or_a_reasoned_exemption():
    covered = {i for t in TWINS.values() for i in t.ids}
    bare = [i for i in hint_ids() if i not in covered and i not in EXEMPT]
    assert bare == [], f"hint ids with neither a twin in tests/checks/twins.py nor an exemption: {bare}"
    assert not covered & set(EXEMPT), "an id with a twin needs no exemption"
    assert set(EXEMPT) <= set(msg.MISCONCEPTIONS) and all(len(reason) > 40 for reason in EXEMPT.values())


def test_every_misconception_id_the_checks_name_is_in_the_catalogue():
    """The ids enumerated above are all there are: every id literal in the checks' code has its sentence."""
    import ast
    import re
    from pathlib import Path

    import autograder.checks

    named = {node.value for path in Path(autograder.checks.__file__).parent.glob("*.py")
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Constant) and isinstance(node.value, str)
             and re.fullmatch(r"[a-z_]+\.[a-z_]+", node.value) and not node.value.endswith(".py")}
    assert len(named) > 100
    assert sorted(named - set(msg.MISCONCEPTIONS)) == []


def test_a_fallback_sentence_claims_nothing_about_the_code():
    """The exemption of the fallback ids (FALLBACK) holds: the sentence is the check's description and a request to
    compare the numbers, whatever the check."""
    for name, check in BY_NAME.items():
        assert MISCONCEPTIONS[msg.fallback_id(name)] == msg.fallback_sentence(check.description), FALLBACK
        assert msg.hint(msg.fallback_id(name), "a") == msg.fallback_sentence(check.description)


# (misconception, an error (and the learner's line) it names, a near miss: the same kind of error from another cause)
ERROR_SAMPLES = [
    ("common.timeout", "your code did not finish within 5 s", "", "TimeoutError: the socket read timed out", ""),
    ("node.divides_by_data", "ZeroDivisionError: float division by zero",
     "self.grad += out.data / self.data * out.grad", "ZeroDivisionError: float division by zero",
     "return abs(a - b) / scale"),
    ("reflected.calls_itself", "RecursionError in Value.__radd__: __radd__ calls itself, without end",
     "return other + self", "RecursionError in Value.__radd__: __radd__ calls itself, without end",
     "return Value(other) + self.tanh()"),
    ("reflected.calls_itself_ordered", "RecursionError in __rsub__: __rsub__ calls itself, without end",
     "return other - self", "RecursionError in __rsub__: __neg__ calls __rsub__, which calls __neg__ again, without end",
     "return other - self"),
    ("common.endless_recursion", "RecursionError in __radd__: the graph is only a few hundred nodes deep", "",
     "ValueError: maximum depth of 3 exceeded", ""),
    ("repr.prints_instead_of_returning", "TypeError: __repr__ returned non-string (type NoneType)", "",
     "TypeError: __repr__ returned non-string (type int)", ""),
    ("api.missing_attribute", "AttributeError: 'Value' object has no attribute '_prev'", "",
     "AttributeError: 'Value' object has no attribute 'label'", ""),
    ("node.backward_is_none", "TypeError: 'NoneType' object is not callable", "node._backward()",
     "TypeError: 'NoneType' object is not callable", "out = f(x)"),
    ("common.inplace_returns_none", "TypeError: 'NoneType' object is not iterable", "for node in topo.reverse():",
     "TypeError: 'NoneType' object is not iterable", "for node in children:"),
    ("common.none_called", "TypeError: 'NoneType' object is not callable", "out = f(x)",
     "TypeError: 'int' object is not callable", "out = f(x)"),
    ("grads_of.passes_a_list", "TypeError: _f() missing 1 required positional argument: 'b'", "",
     "TypeError: _f() got an unexpected keyword argument 'b'", ""),
    ("common.argument_count", "TypeError: Neuron.__call__() takes 2 positional arguments but 3 were given", "",
     "TypeError: Neuron.__call__() got multiple values for argument 'x'", ""),
    ("common.backward_on_number", "AttributeError: 'float' object has no attribute 'backward'", "",
     "AttributeError: 'list' object has no attribute 'backward'", ""),
    ("node.number_not_wrapped", "AttributeError: 'float' object has no attribute 'data'", "",
     "AttributeError: 'float' object has no attribute 'append'", ""),
    ("common.returns_none", "Value.__add__ returned a NoneType (None)", "",
     "Value.__add__ returned a float (2.5), expected a Value", ""),
    ("node.children_not_a_collection", "TypeError: 'Value' object is not iterable in Value.__init__",
     "self._prev = set(_children)", "TypeError: 'Value' object is not iterable in Value.__init__", "for x in xs:"),
    ("common.value_iterated", "TypeError: 'Value' object is not subscriptable in tanh_from_bricks", "",
     "TypeError: 'float' object is not subscriptable in tanh_from_bricks", ""),
    ("node.data_and_value_mixed", "TypeError: unsupported operand type(s) for +: 'float' and 'Value' in __add__",
     "return Value(self.data + other, (self, other))",
     "TypeError: unsupported operand type(s) for +: 'float' and 'Value' in __add__",
     "return Value(self.data + other.data, (self, other))"),
    ("node.value_added_to_grad", "TypeError: unsupported operand type(s) for +=: 'float' and 'Value' in _backward",
     "self.grad += out * out.grad", "TypeError: unsupported operand type(s) for +=: 'float' and 'str' in _backward",
     "self.grad += out * out.grad"),
    ("node.data_is_a_value", "out.data is a Value (<Value object>), expected a number", "",
     "out.data is a str ('2.5'), expected a number", ""),
    ("node.grad_is_a_value", "a.grad is a Value (<Value object>), expected a number", "",
     "a.grad is a str ('2.5'), expected a number", ""),
    ("train.records_values", "a recorded loss is a Value (Value(data=0.5)), expected a number", "",
     "a recorded loss is a str ('0.5'), expected a number", ""),
    ("common.value_for_list", "TypeError: 'Value' object is not subscriptable in MLP.__call__", "",
     "TypeError: 'float' object is not subscriptable", ""),
    ("grads_of.returns_values", "grads_of(...)[0] is a Value, not a number", "",
     "grads_of(...)[0] is a str, not a number", ""),
    ("common.none_iterated", "TypeError: 'NoneType' object is not iterable", "for node in order:",
     "TypeError: 'int' object is not iterable", "for node in order:"),
    ("common.float_for_value", "mse_loss returned a float (0.5), expected a Value", "",
     "mse_loss returned a list ([0.5]), expected a Value", ""),
    ("node.returns_float", "`out = a + b` gave a float (2.5), not a Value: does every operator return a new Value?", "",
     "`out = a + b` gave a list ([2.5]), not a Value", ""),
    ("node.wrong_children", "a child in some node's _prev is a float (2.5), not a Value", "",
     "a child in some node's _prev is a Value whose _prev is not iterable", ""),
    ("layer.returns_one_output", "Layer(3, 2)(x) returned <Value(data=0.5)>, expected a list of 2 Values", "",
     "Layer(3, 2)(x) raised an error", ""),
    ("rtruediv.number_on_the_left", "TypeError: unsupported operand type(s) for /: 'int' and 'Value'", "",
     "TypeError: unsupported operand type(s) for /: 'Value' and 'str'", ""),
    ("rsub.number_on_the_left", "TypeError: unsupported operand type(s) for -: 'float' and 'Value'", "",
     "TypeError: unsupported operand type(s) for -: 'Value' and 'str'", ""),
    ("node.number_on_the_left", "TypeError: unsupported operand type(s) for *: 'int' and 'Value'", "",
     "TypeError: unsupported operand type(s) for *: 'Value' and 'str'", ""),
]


@pytest.mark.parametrize("mis, error, line, near, near_line", ERROR_SAMPLES, ids=[s[0] for s in ERROR_SAMPLES])
def test_an_error_sentence_fires_on_its_error_and_not_on_a_near_miss(mis, error, line, near, near_line):
    assert msg.error_misconception(error, line) == mis
    assert msg.error_misconception(near, near_line) != mis


def test_every_error_sentence_has_a_sample_and_a_near_miss():
    assert {m for _, _, m in msg.ERROR_MISCONCEPTIONS} == {s[0] for s in ERROR_SAMPLES}


def test_a_contradicted_accumulation_hint_is_replaced_by_what_is_known():
    """`grad = ...` where `+=` belongs is never said when the checks of the operations alone show they accumulate, or
    when the check runs none of the learner's operations (backward()'s checks run the grader's + and *)."""
    from autograder.checks import get
    from autograder.checks.base import CheckResult
    from autograder.checks.run import Blame
    from autograder.settings import Tolerance

    def wrong(check):
        return CheckResult(check.name, check.targets, 0.0, 1.0,
                           "gradient of a ...\n  hint: " + msg.hint("node.assigns_instead_of_accumulating")
                           + "\n  reproduce:\n    x", "failed", "node.assigns_instead_of_accumulating")

    blame = Blame(get, False, Tolerance(), None, None)  # type: ignore[arg-type]
    tanh = get("tanh_backward")
    fixed = blame._uncontradicted(tanh, wrong(tanh), ["tanh_local"])
    assert fixed.misconception == msg.ACCUMULATES_ALONE
    assert msg.hint("node.assigns_instead_of_accumulating") not in fixed.message
    assert msg.hint(msg.ACCUMULATES_ALONE) in fixed.message and "reproduce:" in fixed.message
    kept = blame._uncontradicted(tanh, wrong(tanh), [])  # tanh never tested alone: the claim may hold
    assert kept.misconception == "node.assigns_instead_of_accumulating"
    walk = get("backward_accumulates")  # no operation of the learner's runs: the claim cannot hold
    assert blame._uncontradicted(walk, wrong(walk), []).misconception == msg.ACCUMULATES_ALONE


def test_a_missing_rtruediv_is_named_not_rmul_or_radd():
    from autograder.checks.messages import error_misconception

    mis = error_misconception("TypeError: unsupported operand type(s) for /: 'int' and 'Value'")
    assert mis == "rtruediv.number_on_the_left" and "__rtruediv__" in msg.hint(mis)
    assert "__rmul__" not in msg.hint(mis) and "__radd__" not in msg.hint(mis)
    assert error_misconception("TypeError: unsupported operand type(s) for -: 'float' and 'Value'") == "rsub.number_on_the_left"
