"""Exercises of single notebooks: numerical derivatives and relative error (1), hand-filled grads (2),
tanh from bricks (4), grads_of (5)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from ..settings import Tolerance
from ..truth.numeric import generic_inputs, grad_close, known_gradient, value_close
from ..truth.slips import Space, equal_on, evaluate, recover
from . import messages as msg
from .base import ERROR, NOT_IMPLEMENTED, Case, Check, Failure, Observation
from .common import sample, where
from .graphs import EXPRESSIONS
from .registry import Topic

TOPIC = Topic()
register = TOPIC.add

# ---------------------------------------------------------------- numerical_derivative (notebook 1)

EXACT = {"poly": lambda x: 6 * x - 4, "sin": math.cos, "exp": math.exp}
CURVATURE = {"poly": lambda x: 6.0, "sin": lambda x: -math.sin(x), "exp": math.exp}
SHOWN = {"poly": "3x² - 4x + 5", "sin": "sin", "exp": "exp"}


def derivative_cases(rng: random.Random, hidden: bool) -> list[Case]:
    """Functions and points."""
    pts = [["poly", 3.0], ["sin", round(rng.uniform(-2, 2), 3)], ["exp", round(rng.uniform(-1, 1), 3)]]
    if hidden:
        pts += [["poly", round(rng.uniform(-3, 3), 3)]]
    return [{"probe": "derivative", "points": pts, "wide": WIDE_H}]


def judge_derivative(case: Case, obs: Observation, tol: Tolerance) -> Failure | None:
    """Central differences get within 1e-6 relative of the exact slope."""
    for (k, x), got in zip(case["points"], obs["values"]):
        want = EXACT[k](x)
        close = 1e-6 * max(1.0, abs(want))
        if abs(got - want) > close:
            mis = None
            if abs(got - want) < 0.1 * max(1.0, abs(want)):
                if k == "poly":  # a central difference is exact on a parabola: a one-sided one errs by h * f''(x) / 2
                    one_sided = (got - want) * CURVATURE[k](x)
                    mis = "derivative.forward_difference" if one_sided > 0 else "derivative.backward_difference"
                else:  # the parabola came out right: a central difference, its step too large
                    mis = "derivative.step_too_large"
            elif abs(got + want) <= close:  # the parabola's slope (positive) comes first: abs() shows at a negative one
                mis = "derivative.sign_flipped" if want > 0 else "derivative.abs"
            if abs(got - 2 * want) <= close:
                mis = "derivative.no_half"
            # the formula is recovered only where the wide step was seen: at a tiny step, formulas that differ by
            # O(h**2) (a step of 2h divided by 2h, and one of h divided by h) give the same numbers
            recovered = _recover_derivative(case, obs) if obs.get("wide") and mis in (None, "derivative.no_half") else None
            return Failure(f"numerical_derivative of {SHOWN[k]} at x = {x}: expected {want:.10g} (exact), got {got:.10g}",
                           mis or ("derivative.wrong_formula" if recovered else None), method="numerical_derivative",
                           recovered=recovered)
    return None


# The grader's own copies of the functions the probe differentiates, and the step a learner's default h has.
GRADER_FUNCTIONS = {"poly": lambda x: 3 * x**2 - 4 * x + 5, "sin": math.sin, "exp": math.exp}
DEFAULT_H = 1e-5
DERIVATIVE = Space("(f(x + h) - f(x - h)) / (2 * h)", ("x", "h"), (), (("x", -2.0, 2.0), ("h", 0.1, 0.4)),
                   where="h is the step", fixed=(("f", lambda x: math.exp(0.7 * x) + x**3),), depth=2)


WIDE_H = 0.25  # a step where formulas that agree at a tiny step (to O(h**2)) differ by far more than rounding


def _recover_derivative(case: Case, obs: Observation) -> dict[str, str] | None:
    """The one slip of the central difference that gives every number the learner's function returned, at its own
    step (to 1e-7: rounding at a tiny step) and at the wide step (to 1e-9)."""
    points = [(DERIVATIVE.env(f=GRADER_FUNCTIONS[k], x=x, h=DEFAULT_H), got, 1e-7)
              for (k, x), got in zip(case["points"], obs["values"])]
    points += [(DERIVATIVE.env(f=GRADER_FUNCTIONS[k], x=x, h=case["wide"]), got, 1e-9)
               for (k, x), got in zip(case["points"], obs.get("wide") or []) if got is not None]

    def matches(text: str) -> bool:
        values = [evaluate(text, env) for env, _, _ in points]
        return all(v is not None and abs(v - got) <= tol * max(abs(v), abs(got), 1e-12)
                   for v, (_, got, tol) in zip(values, points))

    found = recover(DERIVATIVE.formula, DERIVATIVE.candidates(), matches, DERIVATIVE.where, equal_on(DERIVATIVE, {}))
    return {"what": "numerical_derivative", "got": found.got, "want": found.want, "where": found.where} if found else None


register(Check("numerical_derivative", ("numerical_derivative",), "central differences give the slope",
               derivative_cases, judge_derivative, group="exercise",
               during=lambda case: "\n  while calling numerical_derivative(f, x)"))

# ---------------------------------------------------------------- relative_error (notebook 1)


def relative_error_cases(rng: random.Random, hidden: bool) -> list[Case]:
    """Pairs that separate the right scale from plausible wrong ones: equal values, a sign change, two negatives,
    swapped arguments, b = 0, tiny values and two zeros."""
    a = round(rng.uniform(1, 5), 3)
    c = round(a + rng.uniform(0.5, 2.0), 3)  # |c| > |a|: dividing by the second argument is right for one order only
    pairs = [[a, a], [a, a * 1.01], [-a, a], [-a, -c], [c, a], [a, c], [a, 0.0], [1e-9, 2e-9], [0.0, 0.0],
             [a * 100, a * 100 + 1], [-c, a]]  # the last: the larger magnitude negative, the other positive
    return [{"probe": "relative_error", "pairs": pairs}]


def _relerr(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b)) if (a or b) else 0.0


RELERR_MISTAKES = {
    "relerr.max_without_abs": lambda a, b: abs(a - b) / max(a, b),
    "relerr.divides_by_b": lambda a, b: abs(a - b) / abs(b),
    "relerr.min": lambda a, b: abs(a - b) / min(abs(a), abs(b)),
    "relerr.no_abs": lambda a, b: (a - b) / max(abs(a), abs(b)),
    "relerr.clipped": lambda a, b: min(1.0, abs(a - b) / max(abs(a), abs(b))),  # before sum_scale: both give 1 at -a, a
    "relerr.percent": lambda a, b: 100 * abs(a - b) / max(abs(a), abs(b)),
    "relerr.sum_scale": lambda a, b: abs(a - b) / (abs(a) + abs(b)),
    "relerr.mean_scale": lambda a, b: abs(a - b) / ((abs(a) + abs(b)) / 2),
    "relerr.floor_one": lambda a, b: abs(a - b) / max(abs(a), abs(b), 1.0),
}


def _relerr_mistake(a: float, b: float, got: float | str) -> str | None:
    if a == b == 0:
        return "relerr.zero_over_zero"
    if got == "ZeroDivisionError":
        return "relerr.divides_by_b" if b == 0 else "relerr.min" if 0 in (a, b) else None
    for mis, wrong in RELERR_MISTAKES.items():
        try:
            w = wrong(a, b)
        except ZeroDivisionError:
            continue
        if abs(got - w) <= 1e-12 + 1e-9 * abs(w):
            return mis
    return None


RELATIVE_ERROR = Space("abs(a - b) / max(abs(a), abs(b))", ("a", "b"), (), (("a", -3.0, 3.0), ("b", -3.0, 3.0)),
                       depth=2)


def _recover_relative_error(case: Case, obs: Observation) -> dict[str, str] | None:
    """The one slip of |a - b| / max(|a|, |b|) that gives every number the learner's returned where it is defined
    (where it divides by zero, the learner's may raise or guard; two zeros may give anything)."""
    pairs = [(a, b, got) for (a, b), got in zip(case["pairs"], obs["values"]) if a or b]

    def matches(text: str) -> bool:
        for a, b, got in pairs:
            v = evaluate(text, {"a": a, "b": b})
            if v is None:
                continue  # undefined there: the learner's raises, or guards it
            if isinstance(got, str) or abs(v - got) > 1e-12 + 1e-9 * abs(v):
                return False
        return True

    found = recover(RELATIVE_ERROR.formula, RELATIVE_ERROR.candidates(), matches, same=equal_on(RELATIVE_ERROR, {}))
    return {"what": "relative_error", "got": found.got, "want": found.want, "where": ""} if found else None


def _everywhere(formula: Callable[[float, float], float], case: Case, obs: Observation) -> bool:
    """Whether a wrong formula gives every number the learner's relative_error returned where it is defined."""
    for (a, b), got in zip(case["pairs"], obs["values"]):
        if not (a or b):
            continue
        try:
            w = formula(a, b)
        except ZeroDivisionError:
            continue  # the learner may raise there too, or guard it (`0.0 if scale == 0 else ...`)
        if isinstance(got, str) or abs(got - w) > 1e-12 + 1e-9 * abs(w):
            return False
    return True


def judge_relative_error(case: Case, obs: Observation, tol: Tolerance) -> Failure | None:
    """|a - b| / max(|a|, |b|), and 0 for two zeros."""
    for (a, b), got in zip(case["pairs"], obs["values"]):
        want = _relerr(a, b)
        wrong = isinstance(got, str) or not abs(got - want) <= 1e-12 + 1e-9 * want
        if not wrong:
            continue
        mis = _relerr_mistake(a, b, got)
        if mis in RELERR_MISTAKES and not _everywhere(RELERR_MISTAKES[mis], case, obs):
            mis = None  # a known wrong formula that gives this number, but not the others: not what was written
        recovered = None if mis else _recover_relative_error(case, obs)
        mis = "relerr.wrong_formula" if recovered else mis
        if isinstance(got, str):
            return Failure(f"relative_error({a!r}, {b!r}) raised {got}; expected {want:.10g}", mis,
                           method="relative_error", recovered=recovered)
        return Failure(f"relative_error({a!r}, {b!r}): expected {want:.10g}, got {got:.10g}", mis,
                       method="relative_error", recovered=recovered)
    return None


register(Check("relative_error", ("relative_error",), "relative error, safe at zero, the same both ways round",
               relative_error_cases, judge_relative_error, group="exercise",
               during=lambda case: "\n  while calling relative_error(a, b)"))

# ---------------------------------------------------------------- hand-filled gradients (notebook 2)

MANUAL_NODES = ("a", "b", "c", "e", "d", "f", "L")
DOWNSTREAM = {
    "L": (lambda L: L, ["L"]),
    "d": (lambda d, f: d * f, ["d", "f"]),
    "f": (lambda d, f: d * f, ["d", "f"]),
    "e": (lambda e, c, f: (e + c) * f, ["e", "c", "f"]),
    "c": (lambda e, c, f: (e + c) * f, ["e", "c", "f"]),
    "a": (lambda a, b, c, f: (a * b + c) * f, ["a", "b", "c", "f"]),
    "b": (lambda a, b, c, f: (a * b + c) * f, ["a", "b", "c", "f"]),
}
MANUAL_HINTS = {"L": "manual.root_is_one", "d": "manual.mul_swaps", "f": "manual.mul_swaps", "c": "manual.add_routes",
                "e": "manual.add_routes", "a": "manual.mul_swaps", "b": "manual.mul_swaps"}


def untouched(grads: list[float]) -> bool:
    """Every grad still the +0.0 that Value(...) starts with: the exercise cell never got past its stub.

    Writing the chain rule but forgetting L.grad = 1 also gives zeros, but some of them -0.0 (f.data and b.data are
    negative): that is a mistake, judged as one.
    """
    return all(g == 0 and math.copysign(1.0, g) > 0 for g in grads)


# Each node's parent and, for a product, the other factor: d parent / d node is that factor's data (1 for a sum)
MANUAL_PARENT = {"d": ("L", "f"), "f": ("L", "d"), "c": ("d", None), "e": ("d", None), "a": ("e", "b"), "b": ("e", "a")}


def judge_manual(case: Case, obs: Observation, tol: Tolerance) -> Failure | None:
    """Each hand-filled grad against the numerical dL/dnode; none filled in is not done yet."""
    if untouched([obs[n][1] for n in MANUAL_NODES]):
        return Failure(msg.MANUAL_NOT_DONE, status=NOT_IMPLEMENTED)
    v = {n: obs[n][0] for n in MANUAL_NODES}
    for n in ("L", "f", "d", "c", "e", "b", "a"):
        fn, names = DOWNSTREAM[n]
        est = known_gradient(fn, [v[k] for k in names])[names.index(n)].value
        got = obs[n][1]
        if not grad_close(got, est, v["L"], tol.rtol, tol.atol):
            what = msg.at_level(msg.MANUAL_RULES[n])
            mis: str | None = MANUAL_HINTS[n] if n not in MANUAL_PARENT else None  # L: dL/dL is 1, nothing else
            if n in MANUAL_PARENT:
                parent, other = MANUAL_PARENT[n]
                local = v[other] if other else 1.0  # d parent / d n: the other factor's data, or 1 for a sum
                upstream = obs[parent][1]  # the learner's own gradient of the parent, flowing in
                if other and not grad_close(local * upstream, local, 1.0, 1e-9, 1e-12) and grad_close(got, local, 1.0,
                                                                                                      1e-9, 1e-12):
                    mis = "manual.missing_upstream"
                elif other and any(grad_close(got, v[n] * up, 1.0, 1e-9, 1e-12) for up in (upstream, est / local if local else 0.0)):
                    mis = "manual.mul_swaps"
                elif not other and not grad_close(upstream, 1.0, 1.0, 1e-9, 1e-12) and grad_close(got, 1.0, 1.0, 1e-9, 1e-12):
                    mis = "manual.add_routes"  # the local derivative of a sum, 1, without the gradient flowing in
                if got == 0 and grad_close(local * upstream, est, v["L"], tol.rtol, tol.atol):
                    # the rule is right for the parent's grad as it is now: it ran before the parent's was filled in
                    return Failure(f"{n}.grad: expected dL/d{n} = {est:.10g} (numerical), got 0, though {parent}.grad "
                                   f"= {upstream:.10g} is right", "manual.fill_order", name=n)
            recovered = None if mis else _recover_manual(n, obs)
            return Failure(f"{n}.grad: expected dL/d{n} = {est:.10g} (numerical), got {got:.10g}\n  ({what})",
                           "manual.wrong_formula" if recovered else mis, recovered=recovered)
    return None


def _manual_space(n: str) -> Space:
    """The rule of node n's grad over every node's data and grad but its own grad (which would explain anything)."""
    parent, other = MANUAL_PARENT[n]
    formula = f"{other}_data * {parent}_grad" if other else f"{parent}_grad"
    names = tuple(f"{k}_{part}" for k in MANUAL_NODES for part in ("data", "grad") if (k, part) != (n, "grad"))
    return Space(formula, names, (), tuple((name, -5.0, 5.0) for name in names))


def _recover_manual(n: str, obs: Observation) -> dict[str, str] | None:
    """The one slip of node n's rule (the other factor's data times the parent's grad, or the parent's grad for a
    sum) that gives the learner's grad, from the values the nodes hold (each grad filled in once)."""
    space = _manual_space(n)
    env = {f"{k}_{part}": obs[k][i] for k in MANUAL_NODES for i, part in enumerate(("data", "grad"))}

    def matches(text: str) -> bool:
        value = evaluate(text, env)
        return value is not None and abs(value - obs[n][1]) <= 1e-9 * max(1.0, abs(value))

    found = recover(space.formula, space.candidates(), matches, same=equal_on(space, {}))

    def shown(text: str) -> str:
        return text.replace("_data", ".data").replace("_grad", ".grad")

    return {"what": f"{n}.grad", "got": shown(found.got), "want": shown(found.want), "where": ""} if found else None


register(Check("manual_backprop", MANUAL_NODES, "every hand-filled grad matches dL/dnode",
               lambda rng, hidden: [{"probe": "manual", "nodes": list(MANUAL_NODES)}], judge_manual, group="exercise"))

# ---------------------------------------------------------------- tanh from bricks (notebook 4)


def tanh_bricks_cases(rng: random.Random, hidden: bool) -> list[Case]:
    """A few inputs of either sign, inside the range where tanh is not flat."""
    xs = generic_inputs(rng, 3, 0.2, 2.0)
    if hidden:
        xs += generic_inputs(rng, 3, 0.2, 2.5)
    xs.append(0.0)  # last: a wrong formula may divide by zero there, and says more elsewhere
    return [{"probe": "tanh_bricks", "inputs": xs}]


TANH_BRICKS = Space("(e - 1) / (e + 1)", ("x",), ("exp",), (("x", -2.0, 2.0),), inner=(("e", "exp(2 * x)"),))


def _recover_bricks(case: Case, obs: Observation) -> dict[str, str] | None:
    """The one slip of (e^2x - 1) / (e^2x + 1) that gives every forward value the learner's composition gave."""
    points = [(x, r["data"]) for x, r in zip(case["inputs"], obs["results"]) if "data" in r]

    def matches(text: str) -> bool:
        values = [evaluate(text, {"x": x}) for x, _ in points]
        return all(v is not None and abs(v - got) <= 1e-9 * max(1.0, abs(got)) for v, (_, got) in zip(values, points))

    found = recover(TANH_BRICKS.full, TANH_BRICKS.candidates(), matches, same=equal_on(TANH_BRICKS, {}))
    return {"what": "tanh_from_bricks(x)", "got": found.got, "want": found.want, "where": ""} if found else None


def judge_tanh_bricks(case: Case, obs: Observation, tol: Tolerance) -> Failure | None:
    """tanh(x) = (e^2x - 1) / (e^2x + 1) built from exp, +, -, / (or **): same value, same gradient."""
    for x, r in zip(case["inputs"], obs["results"]):
        if "error" in r:
            return Failure(f"{msg.probe_error(r)}\n  while calling tanh_from_bricks(Value({x!r})) and out.backward()", status=ERROR)
        if not r["uses_tanh"] and r["nodes"] < 4 and r.get("reaches") is False:
            return Failure(f"tanh_from_bricks(Value({x!r})): expected a graph of bricks that reaches x through _prev, got "
                           f"{r['nodes']} node{'s' * (r['nodes'] != 1)} and no path to x", "tanh_bricks.graph_cut",
                           method="tanh_from_bricks")
        if r["uses_tanh"] or r["nodes"] < 4:
            return Failure(f"tanh_from_bricks(Value({x!r})): expected a graph of bricks (at least 4 nodes, no tanh), got "
                           f"{r['nodes']} nodes" + (" and a tanh node" if r["uses_tanh"] else ""), "tanh_bricks.uses_tanh",
                           method="tanh_from_bricks")
        want = math.tanh(x)
        if not value_close(r["data"], want, tol.forward_rtol):
            recovered = _recover_bricks(case, obs)
            return Failure(f"tanh_from_bricks(Value({x!r})).data: expected tanh(x) = {want:.10g}, got {r['data']:.10g}",
                           "tanh_bricks.wrong_formula", method="tanh_from_bricks", recovered=recovered)
        dwant = 1 - want * want
        if not grad_close(r["grad"], dwant, want, tol.rtol, tol.atol):
            cut = r.get("reaches") is False  # out's graph never reaches x: the composition is built from numbers
            return Failure(f"x.grad after tanh_from_bricks(x).backward() at x = {x!r}: expected 1 - tanh(x)**2 = "
                           f"{dwant:.10g}, got {r['grad']:.10g}" + (" (the output's graph does not reach x through "
                                                                    "_prev)" if cut else ""),
                           "tanh_bricks.graph_cut" if cut else "tanh_bricks.brick_backward", method="tanh_from_bricks")
    return None


# the bricks tanh_from_bricks is made of, and backward(), are the grader's (probes/scaffold.py): only the composition
# is judged
register(Check("tanh_from_bricks", ("tanh_from_bricks",), "tanh rebuilt from exp, +, -, / has tanh's value and gradient",
               tanh_bricks_cases, judge_tanh_bricks, group="exercise",
               during=lambda case: "\n  while calling tanh_from_bricks(Value(x)) and out.backward()"))

# ---------------------------------------------------------------- grads_of (notebook 5)

GRADS_OF_KEYS = ("mul_add", "tanh_mul", "diamond", "a_plus_a", "tied_leaves")  # last: two equal inputs


def grads_of_cases(rng: random.Random, hidden: bool) -> list[Case]:
    """Catalogue expressions at generic inputs, their text carried in the case."""
    out = []
    for k in GRADS_OF_KEYS:
        expr = EXPRESSIONS[k]
        for _ in range(2 if hidden else 1):
            out.append({"probe": "grads_of", "expr": k, "params": list(expr.params), "source": expr.source,
                        "inputs": sample(expr, rng)})
    return out


def _grads_of_call(case: Case) -> str:
    expr = EXPRESSIONS[case["expr"]]
    return f"grads_of(f, {list(case['inputs'])}) with f({', '.join(expr.params)}) = `{expr.source.replace(chr(10), '; ')}`"


def _whole_multiples(got: list[float], want: list[float]) -> bool:
    """Whether every gradient is 2 or more whole times the right one (backward() run again adds once more through
    each path, so nodes deeper down get more)."""
    ratios = [g / w for g, w in zip(got, want) if abs(w) > 1e-9]
    return bool(ratios) and all(round(r) >= 2 and abs(r - round(r)) < 1e-6 for r in ratios)


def _orders(n: int) -> list[tuple[int, ...]]:
    """Every order of n inputs but their own (n is at most 3 here)."""
    import itertools

    return [p for p in itertools.permutations(range(n)) if p != tuple(range(n))]


def judge_grads_of(case: Case, obs: Observation, tol: Tolerance) -> Failure | None:
    """One gradient per input, each the numerical one, the same on a second call."""
    expr = EXPRESSIONS[case["expr"]]
    xs = case["inputs"]
    call = _grads_of_call(case)
    ref = expr.reference(*xs)
    estimates = known_gradient(expr.reference, xs)
    want = [e.value for e in estimates]

    def close(a: float, b: float) -> bool:
        return grad_close(a, b, ref, tol.rtol, tol.atol)

    for n, got in enumerate(obs["calls"]):
        if len(got) != len(xs):
            return Failure(f"{call} returned {len(got)} numbers, expected one gradient per input ({len(xs)})",
                           "grads_of.wrong_count", method="grads_of")
        for p, g, est in zip(expr.params, got, estimates):
            if not grad_close(g, est.value, ref, tol.rtol, tol.atol):
                again = " on the second call (the first was right)" if n else ""
                mis = "grads_of.not_fresh" if n else None
                # equal inputs: each got the sum of the gradients of all inputs equal to it (one leaf for them all)
                merged = [sum(w for w, y in zip(want, xs) if y == x) for x in xs]
                if all(value_close(v, x, 1e-12) for v, x in zip(got, xs)):
                    mis = "grads_of.returns_data"
                elif not n and all(v == 0 for v in got):
                    mis = "grads_of.no_backward"
                elif not n and len(set(xs)) < len(xs) and all(close(v, w) for v, w in zip(got, merged)):
                    mis = "grads_of.leaves_by_value"
                elif not n and _whole_multiples(got, want):
                    mis = "grads_of.backward_twice"  # every gradient a whole multiple: backward() ran again
                elif not n and any(all(close(v, want[i]) for v, i in zip(got, order)) for order in _orders(len(xs))):
                    mis = "grads_of.wrong_order"  # the right gradients, in another order than the inputs'
                return Failure(f"{call}: gradient of {p} expected {est.value:.10g} (numerical), got {g:.10g}{again}",
                               mis, method="grads_of")
    return None


# the functions grads_of is given are catalogue graphs of the grader's + * and tanh, and the backward() it calls is
# the grader's too (probes/scaffold.py): only grads_of is judged
register(Check("grads_of", ("grads_of",), "grads_of(f, inputs) returns df/dinput for each input, fresh "
               "every call", grads_of_cases, judge_grads_of, group="exercise",
               during=lambda case: f"\n  while calling {_grads_of_call(case)}"))

__all__ = ["where"]
