"""Remembered truth: a looked-up result is always the one that computing again would give, and callers cannot spoil it."""

import random

from hypothesis import given
from hypothesis import strategies as st

from autograder import checks as catalog
from autograder.checks.base import _cases
from autograder.checks.common import EXPRESSIONS
from autograder.truth import net as nref
from autograder.truth.memo import copy_plain, freeze, remembered
from autograder.truth.numeric import gradient, known_gradient

plain = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
                     | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=12)


def test_keys_tell_apart_values_python_calls_equal():
    assert len({freeze(0.0), freeze(-0.0), freeze(0), freeze(False)}) == 4
    assert freeze([1.0, 2.0]) != freeze((1.0, 2.0))
    assert freeze({"a": [1.5]}) == freeze({"a": [1.5]})


@given(plain)
def test_a_remembered_function_returns_what_the_function_returns(value):
    calls = []

    def describe(v):
        calls.append(v)
        return repr(v)

    remembered_describe = remembered(8, str)(describe)
    assert remembered_describe(value) == repr(value)
    assert remembered_describe(value) == repr(value)
    assert len(calls) == 1


def test_a_caller_changing_its_result_does_not_change_the_next_callers():
    twice = remembered(8, list)(lambda xs: [2 * x for x in xs])
    first = twice([1.0, 2.0])
    first.append(99.0)
    assert twice([1.0, 2.0]) == [2.0, 4.0]


def test_unhashable_arguments_are_computed_every_time():
    calls = []
    length = remembered(8, int)(lambda obj: calls.append(1) or len(obj.items))

    class Bag:
        __hash__ = None  # type: ignore[assignment]

        def __init__(self) -> None:
            self.items = [1, 2]

    assert length(Bag()) == length(Bag()) == 2 and len(calls) == 2


def test_the_oldest_result_is_forgotten_beyond_the_size():
    calls = []
    square = remembered(2, float)(lambda x: calls.append(x) or x * x)
    for x in (1.0, 2.0, 3.0, 1.0):
        square(x)
    assert calls == [1.0, 2.0, 3.0, 1.0]


def test_every_checks_cases_are_the_ones_a_fresh_draw_makes():
    for check in [*catalog.spec_checks(), *catalog.notebook_checks()]:
        for hidden, secret in ((False, None), (True, None), (True, b"course secret")):
            fresh = _cases.__wrapped__(check, hidden, secret)
            assert check.make_cases(hidden, secret) == fresh == check.make_cases(hidden, secret)
        # a secret given as text draws what the same secret as bytes draws
        assert check.make_cases(True, "course secret") == check.make_cases(True, b"course secret")


def test_known_gradient_is_gradient():
    expr = next(iter(EXPRESSIONS.values()))
    rng = random.Random(3)
    for _ in range(5):
        xs = [rng.uniform(0.3, 2.5) for _ in expr.params]
        assert known_gradient(expr.reference, xs) == gradient(expr.reference, xs) == known_gradient(expr.reference, xs)


def test_remembered_descent_and_loss_gradient_match_a_fresh_computation():
    args = {"nin": 2, "nouts": (3, 1), "weights": nref.random_weights(random.Random(1), 2, (3, 1)),
            "xs": [[0.5, -1.0], [1.5, 0.2]], "ys": [1.0, -1.0], "steps": 3, "lr": 0.1}
    assert nref.descend(**args) == nref.descend.__wrapped__(**args) == nref.descend(**args)
    est = nref.mse_gradient(args["weights"], 2, (3, 1), args["xs"], args["ys"])
    assert est == gradient(lambda *w: nref.mse(w, 2, (3, 1), args["xs"], args["ys"]), args["weights"])


@given(plain)
def test_copy_plain_is_deepcopy_for_plain_data(value):
    import copy

    copied = copy_plain(value)
    assert copied == copy.deepcopy(value)
    if isinstance(value, (list, dict)) and value:
        assert copied is not value
