"""The numerical differentiator agrees with exact derivatives on random graphs, and knows when it cannot."""

import math
import random

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from autograder.settings import Tolerance
from autograder.truth.numeric import Estimate, generic_inputs, grad_close, gradient, partial_derivative

TOL = Tolerance()


class Dual:
    """Forward-mode dual number a + b*eps: exact derivatives, written independently of the grader."""

    def __init__(self, v: float, d: float = 0.0) -> None:
        self.v, self.d = v, d

    def __add__(self, o: "Dual") -> "Dual":
        return Dual(self.v + o.v, self.d + o.d)

    def __mul__(self, o: "Dual") -> "Dual":
        return Dual(self.v * o.v, self.d * o.v + self.v * o.d)

    def tanh(self) -> "Dual":
        t = math.tanh(self.v)
        return Dual(t, (1 - t * t) * self.d)

    def exp(self) -> "Dual":
        e = math.exp(self.v)
        return Dual(e, e * self.d)

    def pow(self, k: int) -> "Dual":
        return Dual(self.v**k, k * self.v ** (k - 1) * self.d)


def evaluate(tree, xs, lift, ops):
    """Evaluate an expression tree with leaves lifted by `lift` and operations from `ops`."""
    kind = tree[0]
    if kind == "var":
        return xs[tree[1]]
    if kind == "const":
        return lift(tree[1])
    args = [evaluate(t, xs, lift, ops) for t in tree[1:] if isinstance(t, tuple)]
    if kind == "pow":
        return ops["pow"](args[0], tree[2])
    return ops[kind](*args)


FLOAT_OPS = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "tanh": math.tanh, "exp": math.exp,
             "pow": lambda a, k: a**k}
DUAL_OPS = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "tanh": Dual.tanh, "exp": Dual.exp, "pow": Dual.pow}

NVARS = 3
leaves = st.one_of(
    st.tuples(st.just("var"), st.integers(0, NVARS - 1)),
    st.tuples(st.just("const"), st.sampled_from([0.5, -1.5, 2.0, 3.0])),
)
trees = st.recursive(
    leaves,
    lambda sub: st.one_of(
        st.tuples(st.sampled_from(["add", "mul"]), sub, sub),
        st.tuples(st.sampled_from(["tanh", "exp"]), sub),
        st.tuples(st.just("pow"), sub, st.sampled_from([2, 3])),
    ),
    max_leaves=8,
)


def exact_gradient(tree, xs):
    out = []
    for i in range(len(xs)):
        duals = [Dual(x, 1.0 if j == i else 0.0) for j, x in enumerate(xs)]
        out.append(evaluate(tree, duals, Dual, DUAL_OPS).d)
    return out


def float_function(tree):
    """The random tree as a plain-float function of its variables."""

    def f(*v):
        return evaluate(tree, list(v), float, FLOAT_OPS)

    return f


@settings(max_examples=300, deadline=None)
@given(tree=trees, seed=st.integers(0, 2**32 - 1))
def test_gradient_matches_forward_mode_on_random_graphs(tree, seed):
    xs = generic_inputs(random.Random(seed), NVARS)
    f = float_function(tree)
    try:
        fx = f(*xs)
        exact = exact_gradient(tree, xs)
    except OverflowError:
        assume(False)
    assume(math.isfinite(fx) and abs(fx) < 1e6 and all(math.isfinite(g) for g in exact))
    for est, want in zip(gradient(f, xs), exact):
        if not est.reliable:
            continue
        # two orders of magnitude inside the documented tolerance: the grader never blames its own rounding
        bound = 1e-2 * (TOL.atol * max(1.0, abs(fx)) + TOL.rtol * max(abs(est.value), abs(want)))
        assert abs(est.value - want) <= bound, (tree, xs, est, want)


shallow_trees = st.recursive(
    leaves,
    lambda sub: st.one_of(
        st.tuples(st.sampled_from(["add", "mul"]), sub, sub),
        st.tuples(st.sampled_from(["tanh", "exp"]), sub),
        st.tuples(st.just("pow"), sub, st.just(2)),
    ),
    max_leaves=4,
)


@settings(max_examples=200, deadline=None)
@given(tree=shallow_trees, seed=st.integers(0, 2**32 - 1))
def test_gradient_is_reliable_on_shallow_graphs(tree, seed):
    # not too conservative: catalog-sized graphs are trusted (x**27 is not, rightly: its 5th derivative is huge)
    xs = generic_inputs(random.Random(seed), NVARS)
    f = float_function(tree)
    try:
        fx = f(*xs)
    except OverflowError:
        assume(False)
    # moderate values: no overflow, no catastrophic growth, where a smooth function's estimate must be trusted
    assume(math.isfinite(fx) and abs(fx) < 1e3)
    exact = exact_gradient(tree, xs)
    assume(all(abs(g) < 1e3 for g in exact))
    assert all(e.reliable for e in gradient(f, xs)), (tree, xs)


finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6)


@given(a=finite, b=finite, scale=finite)
def test_grad_close_is_symmetric(a, b, scale):
    assert grad_close(a, b, scale, TOL.rtol, TOL.atol) == grad_close(b, a, scale, TOL.rtol, TOL.atol)


@given(a=finite, scale=finite)
def test_grad_close_accepts_equal_numbers(a, scale):
    assert grad_close(a, a, scale, TOL.rtol, TOL.atol)


@given(a=finite, bad=st.sampled_from([math.nan, math.inf, -math.inf]))
def test_grad_close_rejects_nan_and_inf_on_either_side(a, bad):
    assert not grad_close(bad, a, 1.0, TOL.rtol, TOL.atol)
    assert not grad_close(a, bad, 1.0, TOL.rtol, TOL.atol)
    assert not grad_close(bad, bad, 1.0, TOL.rtol, TOL.atol)


@given(g=st.floats(0.3, 2.5))
def test_grad_close_rejects_a_factor_of_two_and_a_flipped_sign(g):
    assert not grad_close(2 * g, g, 1.0, TOL.rtol, TOL.atol)
    assert not grad_close(-g, g, 1.0, TOL.rtol, TOL.atol)


def test_grad_close_tolerance_is_the_documented_formula():
    # |g - n| <= atol * max(1, |f|) + rtol * max(|g|, |n|)
    assert grad_close(1.0 + 1.05e-5, 1.0, 1.0, 1e-5, 1e-6)
    assert not grad_close(1.0 + 1.2e-5, 1.0, 1.0, 1e-5, 1e-6)
    assert grad_close(1e-6, 0.0, 0.5, 1e-5, 1e-6)
    assert grad_close(0.0, 9e-6, 10.0, 1e-5, 1e-6)  # atol scales with |f|


def test_estimate_is_unreliable_exactly_at_a_kink():
    assert not partial_derivative(lambda x: abs(x), [0.0], 0).reliable
    assert not partial_derivative(lambda x, y: abs(x - y) * y, [1.5, 1.5], 0).reliable


def test_estimate_is_unreliable_within_a_step_of_a_kink():
    assert not partial_derivative(abs, [1e-4], 0).reliable


def test_estimate_is_reliable_away_from_a_kink():
    e = partial_derivative(abs, [0.5], 0)
    assert e.reliable and abs(e.value - 1.0) < 1e-9


def test_estimate_is_unreliable_on_overflow():
    assert not partial_derivative(math.exp, [800.0], 0).reliable  # math.exp raises OverflowError
    assert not partial_derivative(lambda x: x * 1e308 * 10, [1.5], 0).reliable  # inf - inf is nan
    assert not Estimate(math.inf, 0.0).reliable


def test_estimate_is_unreliable_across_a_pole():
    assert not partial_derivative(lambda x: 1 / x, [1e-4], 0).reliable


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 6))
def test_generic_inputs_are_distinct_nonzero_and_away_from_one(seed, n):
    xs = generic_inputs(random.Random(seed), n)
    assert len(xs) == n
    assert all(0.3 <= abs(x) <= 2.5 and abs(abs(x) - 1) >= 0.05 for x in xs)
    assert all(abs(abs(a) - abs(b)) >= 0.05 for i, a in enumerate(xs) for b in xs[i + 1:])


def _neuron_by_neuron(weights, nin, nouts, x, bias_first, activation):
    """The grader's MLP as its docstring states it, written plainly: the bias, then each weight times its input."""
    it, act = iter(weights), list(x)
    for nout in nouts:
        nxt = []
        for _ in range(nout):
            b = next(it) if bias_first else None
            w = [next(it) for _ in act]
            b = next(it) if not bias_first else b
            z = b
            for wi, xi in zip(w, act):
                z = z + wi * xi
            nxt.append(math.tanh(z) if activation else z)
        act = nxt
    return act


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 3), st.lists(st.integers(1, 4), min_size=1, max_size=3), st.booleans(), st.booleans(), st.data())
def test_the_graders_mlp_adds_the_bias_then_each_weighted_input_in_order(nin, nouts, bias_first, activation, data):
    from autograder.truth.net import forward, parameter_count

    floats = st.floats(-3, 3, allow_nan=False)
    weights = data.draw(st.lists(floats, min_size=parameter_count(nin, nouts), max_size=parameter_count(nin, nouts)))
    x = data.draw(st.lists(floats, min_size=nin, max_size=nin))
    assert forward(weights, nin, nouts, x, bias_first, activation) == _neuron_by_neuron(weights, nin, nouts, x, bias_first,
                                                                                         activation)
