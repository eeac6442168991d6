"""The check catalog: each check exposes one class of real learner mistakes."""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Callable, Sequence
from typing import Any

from . import net_reference as nref
from .check import Case, Check, Namespace, Observation
from .expressions import Expr
from .numeric import Estimate, generic_inputs, grad_close, gradient, value_close
from .safe import LearnerError, read_number, short_repr
from .settings import Tolerance

# ---------------------------------------------------------------- expressions

TOPO_HINT = ("a node here reaches out through several paths: backward() must call each node's _backward exactly once, "
             "and only after every node that uses it (reverse topological order, built with a visited set); "
             "recursion without a topological sort, or a breadth-first walk, breaks this")
EQ_HINT = ("two distinct nodes have equal data here: if Value defines __eq__/__hash__ by value, the visited set (or a "
           "dict) merges them; leave __eq__ and __hash__ as identity, or key the visited set by id(node)")
ASSIGN_HINT = ("{name} is used twice and one of its two gradients was overwritten: a _backward sets `grad = ...` "
               "where it must accumulate `grad += ...`")
ZERO_HINT = ("{name}.grad stayed 0: is the root seeded (out.grad = 1) inside backward()? is each op's _backward "
             "assigned to its result (out._backward = _backward)? are nodes visited in REVERSE topological order?")
SIGN_HINT = "the sign is flipped: look at `-`, __neg__, __sub__ or __rsub__ (which operand is subtracted from which?)"
UNSWAPPED_HINT = ("in __mul__, self.grad needs other.data * out.grad and other.grad needs self.data * out.grad: "
                  "the operands look unswapped")

EXPRESSIONS: dict[str, Expr] = {
    # forward
    "add": Expr(("a", "b"), "a + b", exact=lambda a, b: (1.0, 1.0)),
    "add3": Expr(("a", "b", "c"), "a + b + c", exact=lambda a, b, c: (1.0, 1.0, 1.0)),
    "mul": Expr(("a", "b"), "a * b", exact=lambda a, b: (b, a)),
    "mul3": Expr(("a", "b", "c"), "a * b * c", exact=lambda a, b, c: (b * c, a * c, a * b)),
    "mul_add": Expr(("a", "b", "c"), "a * b + c", exact=lambda a, b, c: (b, a, 1.0)),
    # upstream gradient not 1
    "add_up": Expr(("a", "b"), "a + b", upstream=3.0, exact=lambda a, b: (3.0, 3.0)),
    "mul_up": Expr(("a", "b"), "a * b", upstream=3.0, exact=lambda a, b: (3 * b, 3 * a)),
    # accumulation
    "a_plus_a": Expr(("a",), "a + a", exact=lambda a: (2.0,)),
    "a_times_a": Expr(("a",), "a * a", exact=lambda a: (2 * a,)),
    "ab_plus_a": Expr(("a", "b"), "a * b + a", exact=lambda a, b: (b + 1, a)),
    "a_plus_a_up": Expr(("a",), "a + a", upstream=3.0, exact=lambda a: (6.0,)),
    "a_plus_b_plus_a": Expr(("a", "b"), "(a + b) + a", exact=lambda a, b: (2.0, 1.0)),
    "a_times_b_times_a": Expr(("a", "b"), "(a * b) * a", exact=lambda a, b: (2 * a * b, a * a)),
    # order
    "chain": Expr(("a", "b", "c"), "(a * b) * c", exact=lambda a, b, c: (b * c, a * c, a * b)),
    "chain_up": Expr(("a", "b", "c"), "(a * b + c) * a", upstream=3.0),
    "shared": Expr(("x",), "y = x * x\nout = y * 2 + y * 3", exact=lambda x: (10 * x,), hint=TOPO_HINT),
    "skip_mul": Expr(("x",), "y = x * x\nout = y + (y * 2.5) * 1.5", exact=lambda x: (2 * x * 4.75,), hint=TOPO_HINT),
    "diamond": Expr(("a", "b"), "c = a * b\nd = c + a\ne = c * d\nout = e + d * b", hint=TOPO_HINT),
    # distinct nodes with equal data
    "twins": Expr(("a", "b", "c"), "m = a * b\nn = b * a\nout = m * c + n", exact=lambda a, b, c: (b * c + b, a * c + a, a * b),
                  hint=EQ_HINT),
    "tied_leaves": Expr(("a", "b"), "a * b + b", tied=True, exact=lambda a, b: (b, a + 1), hint=EQ_HINT),
    # tanh
    "tanh": Expr(("x",), "x.tanh()", upstream=3.0, exact=lambda x: (3 * (1 - math.tanh(x) ** 2),)),
    "tanh_mul": Expr(("a", "b"), "(a * b).tanh()", high=1.5),
    "tanh_twice": Expr(("x",), "t = x.tanh()\nout = t * t + t", hint=TOPO_HINT),
    "skip_tanh": Expr(("x",), "y = x.tanh()\nout = y + (y * 2.5) * 1.5", hint=TOPO_HINT),
    # exp
    "exp": Expr(("x",), "x.exp()", upstream=3.0, exact=lambda x: (3 * math.exp(x),)),
    "exp_mul": Expr(("a", "b"), "(a * b).exp()", high=1.5),
    # pow
    "square": Expr(("a",), "a ** 2", upstream=3.0, exact=lambda a: (6 * a,)),
    "cube": Expr(("a",), "a ** 3", exact=lambda a: (3 * a * a,)),
    "inverse": Expr(("a",), "a ** -1", exact=lambda a: (-1 / (a * a),)),
    "sqrt": Expr(("a",), "(a * a) ** 0.5", exact=lambda a: (math.copysign(1.0, a),)),
    # neg, sub, div
    "neg": Expr(("a",), "-a", upstream=3.0, exact=lambda a: (-3.0,)),
    "sub": Expr(("a", "b"), "a - b", upstream=3.0, exact=lambda a, b: (3.0, -3.0)),
    "sub_self": Expr(("a", "b"), "a * b - a", exact=lambda a, b: (b - 1, a)),
    "div": Expr(("a", "b"), "a / b", upstream=3.0, exact=lambda a, b: (3 / b, -3 * a / (b * b))),
    "div_self": Expr(("a", "b"), "(a + b) / a"),
    # numbers on either side
    "radd": Expr(("a",), "1 + a", upstream=3.0, exact=lambda a: (3.0,)),
    "add_number": Expr(("a",), "a + 1", exact=lambda a: (1.0,)),
    "rmul": Expr(("a",), "2 * a", upstream=3.0, exact=lambda a: (6.0,)),
    "mul_number": Expr(("a",), "a * 2", exact=lambda a: (2.0,)),
    "sum": Expr(("a", "b"), "sum([a, b, a * b])", exact=lambda a, b: (1 + b, 1 + a)),
    "rsub": Expr(("a",), "1 - a", upstream=3.0, exact=lambda a: (-3.0,)),
    "rsub_mul": Expr(("a", "b"), "2.5 - a * b", exact=lambda a, b: (-b, -a)),
    "sub_number": Expr(("a",), "a - 1.5", exact=lambda a: (1.0,)),
    "rdiv": Expr(("a", "b"), "(a * b) / 2.0", exact=lambda a, b: (b / 2, a / 2)),
    "rtruediv": Expr(("a",), "2 / a", upstream=3.0, exact=lambda a: (-6 / (a * a),)),
    "rtruediv_tanh": Expr(("x",), "1 - 2 / ((2 * x).exp() + 1)", exact=lambda x: (1 - math.tanh(x) ** 2,)),
    # a neuron-sized graph with every brick
    "bricks": Expr(("a", "b", "c"), "n = a * b + c\nout = (2 * n).exp() / ((2 * n).exp() + 1) - 0.5 * n ** 2", high=1.2),
}

# Mistakes we can recognise from the numbers alone: (hint, wrong gradient of the expression).
MISTAKES: dict[str, list[tuple[str, Callable[..., Sequence[float]]]]] = {
    "tanh": [(
        "the local derivative of tanh is 1 - t**2 with t = tanh(x), the OUTPUT; this looks like 1 - x**2 with the input",
        lambda x: (3 * (1 - x * x),),
    ), (
        "the local derivative of tanh is 1 - t**2; this looks like t**2 or 1 - t (check the formula)",
        lambda x: (3 * math.tanh(x) ** 2,),
    )],
    "mul_up": [
        (UNSWAPPED_HINT, lambda a, b: (3 * a, 3 * b)),
        # the upstream `* 3.0` is a multiplication too, so an unswapped __mul__ also gets out.grad wrong
        (UNSWAPPED_HINT, lambda a, b: (a * a * b, b * a * b)),
    ],
    "mul": [(UNSWAPPED_HINT, lambda a, b: (a, b))],
    "ab_plus_a": [
        (ASSIGN_HINT.format(name="a"), lambda a, b: (b, a)),
        (ASSIGN_HINT.format(name="a"), lambda a, b: (1.0, a)),
    ],
    "exp": [(
        "the local derivative of exp(x) is exp(x), the output itself; this looks like x or 1",
        lambda x: (3 * x,),
    )],
    "square": [(
        "d/dx x**n is n * x**(n-1); this looks like n * x**n or x**(n-1)",
        lambda a: (3 * 2 * a * a,),
    )],
    "div": [(
        "a / b is a * b**-1: the gradient of b is -a / b**2 times out.grad",
        lambda a, b: (3 / b, 3 * a / (b * b)),
    )],
}


def _sample(expr: Expr, rng: random.Random) -> list[float]:
    """Generic inputs where the grader's own numerical derivative is trustworthy."""
    for _ in range(100):
        xs = generic_inputs(rng, len(expr.params), expr.low, expr.high)
        if expr.tied:
            xs = [xs[0]] * len(xs)
        try:
            f = expr.reference(*xs)
        except (ArithmeticError, ValueError):
            continue
        if math.isfinite(f) and all(e.reliable for e in gradient(expr.reference, xs)):
            return xs
    raise RuntimeError(f"no reliable inputs for {expr.body!r}")  # pragma: no cover - a catalog bug


def _fmt(xs: Sequence[float]) -> str:
    return ", ".join(f"{x:.6g}" for x in xs)


def _where(expr: Expr, xs: Sequence[float]) -> str:
    src = expr.source.replace("\n", "; ")
    args = ", ".join(f"{p}={x!r}" for p, x in zip(expr.params, xs))
    return f"`{src}` at {args}"


def _repro_lines(lines: Sequence[str]) -> str:
    """The indented `reproduce:` block that ends a failure message."""
    return "\n  reproduce:\n" + "\n".join("    " + ln for ln in lines)


def _repro_block(expr: Expr, xs: Sequence[float], expected: Sequence[float] | None = None, backward: bool = True) -> str:
    return _repro_lines(expr.repro(xs, expected, backward).splitlines())


def _ratio_hint(expr: Expr, got: float, want: float, name: str, used_twice: bool) -> str:
    """A hint keyed to the misconception the numbers point at."""
    if want == 0 or not math.isfinite(got):
        return ""
    r = got / want
    if abs(got) < 1e-12:
        return ZERO_HINT.format(name=name)
    if abs(r + 1) < 1e-6:
        return SIGN_HINT
    if expr.upstream != 1.0 and abs(r * expr.upstream - 1) < 1e-6:
        return f"off by the upstream factor {expr.upstream}: a _backward is missing `* out.grad` (the chain rule)"
    if used_twice and abs(r - 0.5) < 1e-6:
        return (f"{name} is used twice and got only half: a _backward sets `grad = ...` where it must "
                "accumulate `grad += ...`")
    if r > 1.5 and abs(r - round(r)) < 1e-6:
        return (f"{name}.grad is {round(r)}x too large: some _backward ran more than once; does backward() "
                "keep a visited set and zero nothing it should not?")
    return ""


def _uses(expr: Expr, param: str) -> int:
    import re

    return len(re.findall(rf"\b{param}\b", expr.source))


def expression_case(key: str, rng: random.Random, backward: bool) -> Case:
    """One case: which expression, at which inputs, and whether to back-propagate."""
    return {"expr": key, "inputs": _sample(EXPRESSIONS[key], rng), "backward": backward}


def probe_expression(ns: Namespace, case: Case) -> Observation:
    """Build the expression from fresh leaves `Value(x)`, run backward, read plain numbers."""
    value = ns["Value"]
    expr = EXPRESSIONS[case["expr"]]
    leaves = [value(x) for x in case["inputs"]]
    out = expr.function(*leaves)
    if not hasattr(out, "data"):
        raise LearnerError(f"`{expr.body}` gave a {type(out).__name__} ({short_repr(out)}), not a Value: "
                           "does every operator return a new Value?")
    obs: Observation = {"data": read_number(out.data, "out.data")}
    if case["backward"]:
        out.backward()
        obs["root_grad"] = read_number(out.grad, "out.grad after backward()")
        obs["grads"] = [read_number(leaf.grad, f"{p}.grad") for p, leaf in zip(expr.params, leaves)]
    return obs


def judge_expression(case: Case, obs: Observation, tol: Tolerance) -> str | None:
    """Forward value first, then the root seed, then each leaf's gradient against the numerical truth."""
    expr = EXPRESSIONS[case["expr"]]
    xs = case["inputs"]
    if "error" in obs:
        return f"{obs['error']}\n  while computing {_where(expr, xs)}" + _repro_block(expr, xs, backward=case["backward"])
    ref = expr.reference(*xs)
    if not value_close(obs["data"], ref, tol.forward_rtol):
        hint = f"\n  hint: {SIGN_HINT}" if value_close(-obs["data"], ref, tol.forward_rtol) else ""
        return (f"forward value of {_where(expr, xs)}: expected {ref:.10g}, got {obs['data']:.10g}{hint}"
                + _repro_block(expr, xs, backward=case["backward"]))
    if not case["backward"]:
        return None
    if not grad_close(obs["root_grad"], 1.0, 1.0, tol.rtol, tol.atol):
        return (f"Value.backward: out.grad after out.backward() on {_where(expr, xs)}: expected 1, "
                f"got {obs['root_grad']:.6g}\n  hint: backward() must seed the root, self.grad = 1, before walking the graph"
                + _repro_block(expr, xs))
    estimates: list[Estimate] = gradient(expr.reference, xs)
    exact = list(expr.exact(*xs)) if expr.exact else None
    got = obs["grads"]
    for i, (p, g, est) in enumerate(zip(expr.params, got, estimates)):
        if grad_close(g, est.value, ref, tol.rtol, tol.atol):
            continue
        bound = tol.atol * max(1.0, abs(ref)) + tol.rtol * max(abs(g), abs(est.value))
        want = f"{est.value:.10g} (numerical"
        want += f"; exact {exact[i]:.10g})" if exact else ")"
        hint = _ratio_hint(expr, g, est.value, p, _uses(expr, p) > 1) or expr.hint
        for text, wrong in MISTAKES.get(case["expr"], []):
            if all(grad_close(x, w, ref, 1e-6, 1e-9) for x, w in zip(got, wrong(*xs))):
                hint = text
        return (f"gradient of {p} in {_where(expr, xs)}: expected {want}, got {g:.10g}; "
                f"error {abs(g - est.value):.3g} > tolerance {bound:.3g}"
                + (f"\n  hint: {hint}" if hint else "")
                + _repro_block(expr, xs, [e.value for e in estimates]))
    return None


def expression_check(
    name: str,
    targets: tuple[str, ...],
    description: str,
    keys: Sequence[str],
    backward: bool = True,
    repeats: int = 2,
    points: float = 1.0,
    required: tuple[str, ...] | None = None,
    group: str = "engine",
) -> Check:
    """A check over catalog expressions, each rebuilt `repeats` times (more when hidden)."""
    for k in keys:
        assert k in EXPRESSIONS, k

    def cases(rng: random.Random, hidden: bool) -> list[Case]:
        n = repeats * 2 if hidden else repeats
        return [expression_case(k, rng, backward) for k in keys for _ in range(n)]

    return Check(name, targets, description, cases, probe_expression, judge_expression, points, group=group, required=required)


# ---------------------------------------------------------------- special engine checks

def _children(node: Any, limit: int) -> list[Any]:
    """A node's `_prev` as a list, refusing one-shot iterators, non-Values and endless collections."""
    try:
        prev = node._prev
    except AttributeError:
        raise LearnerError(f"a child in some node's _prev is a {type(node).__name__} ({short_repr(node)}), not a Value: "
                           "_children must hold the operand Values") from None
    if iter(prev) is prev:
        raise LearnerError(f"_prev is a {type(prev).__name__}, an iterator that can be walked only once: "
                           "store the children in a set, tuple or list")
    kids = list(itertools.islice(prev, limit + 1))  # never list() an endless learner collection
    if len(kids) > limit:
        raise LearnerError(f"a node's _prev holds more than {limit} children: does _prev hold only the operands?")
    return kids


def walk_graph(root: Any, limit: int = 100_000) -> tuple[list[Any], dict[int, list[Any]]]:
    """Every node reachable through `_prev`, by identity (never by the learner's __eq__/__hash__), and its children."""
    seen: dict[int, Any] = {}
    children: dict[int, list[Any]] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        if len(seen) > limit:
            raise LearnerError(f"the graph has more than {limit} nodes: does _prev hold only the operands?")
        kids = _children(node, limit)
        children[id(node)] = kids
        stack.extend(kids)
    return list(seen.values()), children


LADDER_RUNGS = 12


def probe_ladder(ns: Namespace, case: Case) -> Observation:
    """y = y * 0.5 + y * 0.5 repeated; count each node's _backward calls during one backward()."""
    value = ns["Value"]
    x = value(case["x"])
    y = x
    for _ in range(LADDER_RUNGS):
        y = y * 0.5 + y * 0.5
    out = y * 3.0
    nodes, children = walk_graph(out)
    calls: dict[int, int] = {}

    def counting(node: Any) -> Callable[[], Any]:
        inner = node._backward

        def wrapped() -> Any:
            calls[id(node)] = calls.get(id(node), 0) + 1
            return inner()

        return wrapped

    for node in nodes:
        try:
            node._backward = counting(node)
        except (AttributeError, TypeError) as exc:
            raise LearnerError(f"could not wrap a node's _backward to count calls ({exc}): "
                               "_backward should be an assignable attribute") from None
    out.backward()
    inner = [id(n) for n in nodes if children[id(n)]]
    leaves = [id(n) for n in nodes if not children[id(n)]]
    return {
        "inner_calls": [calls.get(i, 0) for i in inner],
        "leaf_calls": [calls.get(i, 0) for i in leaves],
        "grad": read_number(x.grad, "x.grad"),
        "data": read_number(out.data, "out.data"),
    }


def judge_ladder(case: Case, obs: Observation, tol: Tolerance) -> str | None:
    """Each inner node's _backward exactly once, each leaf's at most once, and the right gradient."""
    where = f"a ladder of {LADDER_RUNGS} rungs `y = y * 0.5 + y * 0.5` from x = Value({case['x']!r}), out = y * 3.0"
    if "error" in obs:
        return f"{obs['error']}\n  while back-propagating {where}"
    inner = obs["inner_calls"]
    most = max(inner + obs["leaf_calls"], default=0)
    if most > 1:
        over = sum(1 for c in inner + obs["leaf_calls"] if c > 1)
        return (f"Value.backward called some _backward up to {most} times on {where} ({over} nodes more than once); "
                "expected exactly once per node\n  hint: the topological sort needs a visited set, and backward() "
                "must walk the sorted list once; paths that meet again must not be walked again")
    never = sum(1 for c in inner if c == 0)
    if never:
        return (f"Value.backward never called _backward of {never} of {len(inner)} operation nodes on {where}\n"
                "  hint: build the topological order from the root through _prev and call every node's _backward; "
                "if Value defines __eq__/__hash__ by value, nodes with equal data (y * 0.5 twice) are merged into one")
    if not grad_close(obs["grad"], 3.0, obs["data"], tol.rtol, tol.atol):
        return f"gradient of x on {where}: expected 3 (exact), got {obs['grad']:.10g}"
    return None


def probe_seed(ns: Namespace, case: Case) -> Observation:
    """The root's grad after backward(), on a graph whose gradients start at zero."""
    value = ns["Value"]
    a, b = value(case["inputs"][0]), value(case["inputs"][1])
    out = a * b
    out.backward()
    return {"root_grad": read_number(out.grad, "out.grad"), "a_grad": read_number(a.grad, "a.grad")}


def judge_seed(case: Case, obs: Observation, tol: Tolerance) -> str | None:
    """backward() sets the root's grad to 1."""
    a, b = case["inputs"]
    where = f"out = a * b with a = Value({a!r}), b = Value({b!r})"
    repro = _repro_lines([f"a = Value({a!r}); b = Value({b!r})", "out = a * b", "out.backward()",
                          f"print(out.grad, a.grad)  # expected 1, {b!r}"])
    if "error" in obs:
        return f"{obs['error']}\n  while calling out.backward() on {where}" + repro
    if not grad_close(obs["root_grad"], 1.0, 1.0, tol.rtol, tol.atol):
        return (f"Value.backward: out.grad after out.backward() on {where}: expected 1, got {obs['root_grad']:.6g}\n"
                "  hint: backward() must seed the root, self.grad = 1 (d out / d out), before walking the graph"
                + repro)
    if not grad_close(obs["a_grad"], b, b, tol.rtol, tol.atol):
        hint = ""
        if abs(obs["a_grad"]) < 1e-12:
            hint = "\n  hint: " + ZERO_HINT.format(name="a")
        elif grad_close(obs["a_grad"], a, a, tol.rtol, tol.atol):
            hint = "\n  hint: " + UNSWAPPED_HINT
        return (f"Value.__mul__ / Value.backward: a.grad after out.backward() on {where}: expected {b!r} (b.data), "
                f"got {obs['a_grad']:.6g}{hint}" + repro)
    return None


def seed_cases(rng: random.Random, hidden: bool) -> list[Case]:
    """Plain pairs of generic inputs."""
    return [{"inputs": generic_inputs(rng, 2)} for _ in range(4 if hidden else 2)]


def ladder_cases(rng: random.Random, hidden: bool) -> list[Case]:
    """Starting points of the ladder."""
    return [{"x": x} for x in generic_inputs(rng, 3 if hidden else 1)]


def probe_repr(ns: Namespace, case: Case) -> Observation:
    """repr() of a fresh leaf."""
    text = repr(ns["Value"](case["x"]))
    if not isinstance(text, str):  # pragma: no cover - repr() itself enforces str
        raise LearnerError("repr() did not return a str")
    return {"repr": str.__str__(text)[:500]}


_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def shows_number(text: str, x: float) -> bool:
    """True when text contains x, rounded to however many decimals the text prints (at least one)."""
    for m in _NUMBER.finditer(text):
        literal = m.group()
        mantissa, _, exponent = literal.lower().partition("e")
        decimals = len(mantissa.partition(".")[2]) - int(exponent or 0)
        if decimals < 1:
            continue
        # a repr rounded to 2 decimals (`{self.data:.2f}`) still shows the data
        if abs(float(literal) - x) <= 0.5 * 10.0**-decimals * (1 + 1e-9) + 1e-15:
            return True
    return False


def judge_repr(case: Case, obs: Observation, tol: Tolerance) -> str | None:
    """The repr shows the data."""
    if "error" in obs:
        return f"{obs['error']}\n  while calling repr(Value({case['x']!r}))"
    text = obs["repr"]
    repro = _repro_lines([f"print(repr(Value({case['x']!r})))  # expected something like Value(data={case['x']!r})"])
    if " object at 0x" in text:
        return f"Value.__repr__: repr(Value({case['x']!r})) is {text!r}: define __repr__ to show the data" + repro
    if not shows_number(text, case["x"]):
        return f"Value.__repr__: repr(Value({case['x']!r})) is {text!r}, which does not show the data {case['x']!r}" + repro
    return None


def repr_cases(rng: random.Random, hidden: bool) -> list[Case]:
    """Leaf values."""
    return [{"x": x} for x in generic_inputs(rng, 2)]


# ---------------------------------------------------------------- the net

def _net_repro(build: str, weights: Sequence[float], *lines: str) -> str:
    """Lines that rebuild a model with the case's weights and show the failing numbers."""
    return _repro_lines([f"model = {build}", f"for p, w in zip(model.parameters(), {list(weights)!r}):",
                         "    p.data = w", *lines])


def _set_parameters(model: Any, weights: Sequence[float]) -> list[Any]:
    params = list(model.parameters())
    if len(params) != len(weights):
        return params
    for p, w in zip(params, weights):
        p.data = w
    return params


def _read_output(out: Any, what: str) -> float:
    if isinstance(out, (list, tuple)):
        raise LearnerError(f"{what} returned a {type(out).__name__} of {len(out)}; with one output neuron it "
                           "should return the Value itself")
    if not hasattr(out, "data"):
        raise LearnerError(f"{what} returned a {type(out).__name__} ({short_repr(out)}), expected a Value")
    return read_number(out.data, f"{what}.data")


def net_cases(shape: tuple[int, list[int]], n_inputs: int) -> Callable[[random.Random, bool], list[Case]]:
    """Weights and inputs for a model of the given shape."""
    nin, nouts = shape

    def cases(rng: random.Random, hidden: bool) -> list[Case]:
        out = []
        for _ in range(2 if hidden else 1):
            weights = nref.random_weights(rng, nin, nouts)
            xs = [[round(rng.uniform(-1, 1), 3) for _ in range(nin)] for _ in range(n_inputs)]
            out.append({"nin": nin, "nouts": nouts, "weights": weights, "xs": xs})
        return out

    return cases


def probe_neuron(ns: Namespace, case: Case) -> Observation:
    """Neuron(nin): its parameter count and tanh(w.x + b) for weights set through parameters()."""
    n = ns["Neuron"](case["nin"])
    params = _set_parameters(n, case["weights"])
    return {"count": len(params), "outputs": [[_read_output(n(x), "Neuron(x)")] for x in case["xs"]]}


def probe_layer(ns: Namespace, case: Case) -> Observation:
    """Layer(nin, nout): one Value when nout == 1, else a list of nout Values."""
    nin, nout = case["nin"], case["nouts"][0]
    layer = ns["Layer"](nin, nout)
    params = _set_parameters(layer, case["weights"])
    outputs = []
    for x in case["xs"]:
        out = layer(x)
        if nout == 1:
            outputs.append([_read_output(out, "Layer(nin, 1)(x)")])
        else:
            if not isinstance(out, (list, tuple)) or len(out) != nout:
                raise LearnerError(f"Layer({nin}, {nout})(x) returned {short_repr(out)}, expected a list of {nout} Values")
            outputs.append([_read_output(o, "Layer(x)[i]") for o in out])
    single = layer_single_output(ns, nin)
    return {"count": len(params), "outputs": outputs, "single_is_value": single}


def layer_single_output(ns: Namespace, nin: int) -> bool:
    """Whether Layer(nin, 1)(x) is a Value rather than a list."""
    out = ns["Layer"](nin, 1)([0.5] * nin)
    return hasattr(out, "data") and not isinstance(out, (list, tuple))


def probe_mlp(ns: Namespace, case: Case) -> Observation:
    """MLP(nin, nouts): parameter count, and its output for weights set through parameters()."""
    model = ns["MLP"](case["nin"], case["nouts"])
    params = _set_parameters(model, case["weights"])
    return {"count": len(params), "outputs": [[_read_output(model(x), "MLP(x)")] for x in case["xs"]]}


def judge_forward(kind: str) -> Callable[[Case, Observation, Tolerance], str | None]:
    """Parameter count first, then outputs against the grader's own tanh layers (and a hint on order)."""

    def judge(case: Case, obs: Observation, tol: Tolerance) -> str | None:
        nin, nouts, weights = case["nin"], case["nouts"], case["weights"]
        call = {"Neuron": f"Neuron({nin})", "Layer": f"Layer({nin}, {nouts[0]})", "MLP": f"MLP({nin}, {nouts})"}[kind]
        if "error" in obs:
            repro = _net_repro(call, weights, f"x = {case['xs'][0]!r}", "print(model(x))")
            return f"{obs['error']}\n  while building {call} and calling it{repro}"
        if obs["count"] != len(weights):
            return (f"{call}.parameters() has {obs['count']} Values, expected {len(weights)} "
                    f"(every weight and bias, layer by layer, neuron by neuron)")
        if kind == "Layer" and not obs["single_is_value"]:
            x = [0.5] * nin
            return (f"Layer({nin}, 1)(x) should return the one output Value itself, not a list"
                    + _repro_lines([f"print(Layer({nin}, 1)({x!r}))  # expected one Value, not a list"]))
        for x, got in zip(case["xs"], obs["outputs"]):
            want = nref.forward(weights, nin, nouts, x)
            if all(value_close(g, w, 1e-9) for g, w in zip(got, want)):
                continue
            hint = ""
            alt = nref.forward(weights, nin, nouts, x, bias_first=True)
            if all(value_close(g, w, 1e-9) for g, w in zip(got, alt)):
                hint = "\n  hint: parameters() lists each neuron's bias before its weights; the spec is weights then bias"
            elif all(value_close(g, w, 1e-9) for g, w in zip(got, nref.forward(weights, nin, nouts, x, activation=False))):
                hint = "\n  hint: the neuron's output must be tanh(w.x + b); the tanh is missing"
            show = "model(x).data" if kind != "Layer" or nouts[0] == 1 else "[o.data for o in model(x)]"
            repro = _net_repro(call, weights, f"x = {x!r}", f"print({show})  # expected {_fmt(want)}")
            return (f"{call}(x) at x = {x} with weights set through parameters(): expected {_fmt(want)}, "
                    f"got {_fmt(got)}{hint}{repro}")
        return None

    return judge


LOSS_SHAPE = (2, [3, 1])
LOSS_DATA_SIZE = 4


def loss_cases(rng: random.Random, hidden: bool) -> list[Case]:
    """A small model's weights and a four-example data set."""
    nin, nouts = LOSS_SHAPE
    cases = []
    for _ in range(2 if hidden else 1):
        weights = nref.random_weights(rng, nin, nouts)
        xs = [[round(rng.uniform(-1, 1), 3) for _ in range(nin)] for _ in range(LOSS_DATA_SIZE)]
        ys = [rng.choice((-1.0, 1.0)) * round(rng.uniform(0.5, 1.0), 3) for _ in range(LOSS_DATA_SIZE)]
        cases.append({"nin": nin, "nouts": nouts, "weights": weights, "xs": xs, "ys": ys})
    return cases


def probe_loss(ns: Namespace, case: Case) -> Observation:
    """mse_loss on a fresh model: its value and every parameter's gradient after backward()."""
    model = ns["MLP"](case["nin"], case["nouts"])
    params = _set_parameters(model, case["weights"])
    loss = ns["mse_loss"](model, case["xs"], case["ys"])
    data = _read_output(loss, "mse_loss")
    loss.backward()
    return {"count": len(params), "data": data, "grads": [read_number(p.grad, "parameter.grad") for p in params]}


def judge_loss(case: Case, obs: Observation, tol: Tolerance) -> str | None:
    """The loss is the mean squared error, and each parameter's gradient matches the numerical one."""
    nin, nouts, weights, xs, ys = case["nin"], case["nouts"], case["weights"], case["xs"], case["ys"]
    where = f"mse_loss(MLP({nin}, {nouts}), xs, ys) with xs = {xs}, ys = {ys}"
    if "error" in obs:
        repro = _net_repro(f"MLP({nin}, {nouts})", weights, f"xs = {xs!r}; ys = {ys!r}",
                           "loss = mse_loss(model, xs, ys)", "loss.backward()", "print(loss.data)")
        return f"{obs['error']}\n  while computing {where}{repro}"
    if obs["count"] != len(weights):
        return f"MLP({nin}, {nouts}).parameters() has {obs['count']} Values, expected {len(weights)}"
    want = nref.mse(weights, nin, nouts, xs, ys)
    setup = [f"xs = {xs!r}; ys = {ys!r}", "loss = mse_loss(model, xs, ys)"]
    if not value_close(obs["data"], want, tol.forward_rtol):
        hint = ""
        if value_close(obs["data"], want * len(xs), 1e-9):
            hint = "\n  hint: this is the sum of squared errors; the mean divides by the number of examples"
        repro = _net_repro(f"MLP({nin}, {nouts})", weights, *setup, f"print(loss.data)  # expected {want:.10g}")
        return f"{where}: expected {want:.10g}, got {obs['data']:.10g}{hint}{repro}"
    est = gradient(lambda *w: nref.mse(w, nin, nouts, xs, ys), weights)
    for i, (g, e) in enumerate(zip(obs["grads"], est)):
        if not grad_close(g, e.value, want, tol.rtol, tol.atol):
            repro = _net_repro(f"MLP({nin}, {nouts})", weights, *setup, "loss.backward()",
                               f"print(model.parameters()[{i}].grad)  # expected {e.value:.10g}")
            return (f"gradient of parameter {i} (of {len(weights)}, in parameters() order) after "
                    f"{where}.backward(): expected {e.value:.10g} (numerical), got {g:.10g}{repro}")
    return None


TRAIN_STEPS = 5
TRAIN_LR = 0.1


def train_cases(rng: random.Random, hidden: bool) -> list[Case]:
    """Loss cases plus a step count and learning rate."""
    cases = loss_cases(rng, hidden)
    for c in cases:
        c["steps"], c["lr"] = TRAIN_STEPS, TRAIN_LR
    return cases


def probe_train(ns: Namespace, case: Case) -> Observation:
    """train() from known starting weights: the losses it records."""
    model = ns["MLP"](case["nin"], case["nouts"])
    params = _set_parameters(model, case["weights"])
    losses = ns["train"](model, case["xs"], case["ys"], case["steps"], case["lr"])
    try:
        items = list(losses)[: case["steps"] + 10]
    except TypeError:
        raise LearnerError(f"train returned a {type(losses).__name__}, expected a list of losses") from None
    return {"count": len(params), "losses": [read_number(x, "a recorded loss") for x in items]}


TRAINING_MISTAKES = {
    "no_zero_grad": "gradients are never zeroed between steps, so they pile up: set every p.grad = 0 before backward()",
    "ascent": "the parameters move up the gradient: the update is p.data -= lr * p.grad",
    "record_after": "each recorded loss is the loss after that step's update: record loss.data before updating",
}


def judge_train(case: Case, obs: Observation, tol: Tolerance) -> str | None:
    """The recorded losses follow plain gradient descent from the same start, and fall."""
    args = {k: case[k] for k in ("nin", "nouts", "weights", "xs", "ys", "steps", "lr")}
    where = f"train(MLP({case['nin']}, {case['nouts']}), xs, ys, steps={case['steps']}, lr={case['lr']})"
    want = nref.descend(**args)
    repro = _net_repro(f"MLP({case['nin']}, {case['nouts']})", case["weights"], f"xs = {case['xs']!r}; ys = {case['ys']!r}",
                       f"print(train(model, xs, ys, {case['steps']}, {case['lr']}))  # expected {_fmt(want)}")
    if "error" in obs:
        return f"{obs['error']}\n  while running {where}{repro}"
    got = obs["losses"]

    def same(a: list[float], b: list[float]) -> bool:
        return len(a) == len(b) and all(grad_close(x, y, y, tol.rtol, tol.atol) for x, y in zip(a, b))

    if same(got, want):
        if not want[-1] < want[0]:  # pragma: no cover - the cases are chosen so that descent works
            return "the loss did not fall"
        return None
    hint = ""
    for mistake, text in TRAINING_MISTAKES.items():
        if same(got, nref.descend(**args, mistake=mistake)):
            hint = f"\n  hint: {text}"
    if not hint and len(got) > 1 and all(x == got[0] for x in got):
        hint = "\n  hint: the loss never changes: does each step call loss.backward() and move p.data by -lr * p.grad?"
    if len(got) != len(want):
        return f"{where} returned {len(got)} losses, expected one per step ({len(want)}){repro}"
    return (f"{where}: expected losses {_fmt(want)} (plain gradient descent from the same weights), "
            f"got {_fmt(got)}{hint}{repro}")


# ---------------------------------------------------------------- exercises of single notebooks

def probe_derivative(ns: Namespace, case: Case) -> Observation:
    """The learner's numerical_derivative on known functions."""
    fns = {"poly": lambda x: 3 * x**2 - 4 * x + 5, "sin": math.sin, "exp": math.exp}
    d = ns["numerical_derivative"]
    return {"values": [read_number(d(fns[k], x), f"numerical_derivative({k}, {x})") for k, x in case["points"]]}


def judge_derivative(case: Case, obs: Observation, tol: Tolerance) -> str | None:
    """Central differences get within 1e-6 relative of the exact slope."""
    exact = {"poly": lambda x: 6 * x - 4, "sin": math.cos, "exp": math.exp}
    if "error" in obs:
        return f"{obs['error']}\n  while calling numerical_derivative(f, x)"
    for (k, x), got in zip(case["points"], obs["values"]):
        want = exact[k](x)
        if abs(got - want) > 1e-6 * max(1.0, abs(want)):
            name = {"poly": "3x² - 4x + 5", "sin": "sin", "exp": "exp"}[k]
            # A forward difference errs by about h * f''(x) / 2: same sign as f'', and small.
            curvature = {"poly": lambda x: 6.0, "sin": lambda x: -math.sin(x), "exp": math.exp}[k](x)
            hint = ""
            if (got - want) * curvature > 0 and abs(got - want) < 0.1 * max(1.0, abs(want)):
                hint = ("\n  hint: this looks like a forward difference (f(x+h) - f(x)) / h, off by about h*f''(x)/2; "
                        "the central difference (f(x+h) - f(x-h)) / (2h) is far closer")
            return f"numerical_derivative of {name} at x = {x}: expected {want:.10g} (exact), got {got:.10g}{hint}"
    return None


def derivative_cases(rng: random.Random, hidden: bool) -> list[Case]:
    """Functions and points."""
    pts = [["poly", 3.0], ["sin", round(rng.uniform(-2, 2), 3)], ["exp", round(rng.uniform(-1, 1), 3)]]
    if hidden:
        pts += [["poly", round(rng.uniform(-3, 3), 3)]]
    return [{"points": pts}]


def probe_relative_error(ns: Namespace, case: Case) -> Observation:
    """The learner's relative_error on pairs."""
    r = ns["relative_error"]
    return {"values": [read_number(r(a, b), f"relative_error({a}, {b})") for a, b in case["pairs"]]}


def judge_relative_error(case: Case, obs: Observation, tol: Tolerance) -> str | None:
    """|a - b| / max(|a|, |b|), and 0 for two zeros."""
    if "error" in obs:
        return f"{obs['error']}\n  while calling relative_error(a, b)"
    for (a, b), got in zip(case["pairs"], obs["values"]):
        want = abs(a - b) / max(abs(a), abs(b)) if (a or b) else 0.0
        if not abs(got - want) <= 1e-12 + 1e-9 * want:
            hint = ""
            if a == b == 0:
                hint = "\n  hint: two zeros agree perfectly; avoid dividing 0 by 0"
            return f"relative_error({a!r}, {b!r}): expected {want:.10g}, got {got:.10g}{hint}"
    return None


def relative_error_cases(rng: random.Random, hidden: bool) -> list[Case]:
    """Pairs including equal values, a sign change and two zeros."""
    a = round(rng.uniform(1, 5), 3)
    return [{"pairs": [[a, a], [a, a * 1.01], [-a, a], [1e-9, 2e-9], [0.0, 0.0], [a * 100, a * 100 + 1]]}]


MANUAL_NODES = ("a", "b", "c", "e", "d", "f", "L")


def probe_manual(ns: Namespace, case: Case) -> Observation:
    """The data and hand-filled grads of a, b, c, e = a*b, d = e + c, f and L = d * f."""
    out: Observation = {}
    for n in MANUAL_NODES:
        node = ns.get(n)
        if node is None or not hasattr(node, "data"):
            raise LearnerError(f"{n} is not defined as a Value: run the cell that builds L = (a*b + c) * f first")
        out[n] = [read_number(node.data, f"{n}.data"), read_number(node.grad, f"{n}.grad")]
    return out


def judge_manual(case: Case, obs: Observation, tol: Tolerance) -> str | None:
    """Each hand-filled grad against the numerical dL/dnode."""
    if "error" in obs:
        return obs["error"]
    v = {n: obs[n][0] for n in MANUAL_NODES}
    downstream = {
        "L": (lambda L: L, ["L"]),
        "d": (lambda d, f: d * f, ["d", "f"]),
        "f": (lambda d, f: d * f, ["d", "f"]),
        "e": (lambda e, c, f: (e + c) * f, ["e", "c", "f"]),
        "c": (lambda e, c, f: (e + c) * f, ["e", "c", "f"]),
        "a": (lambda a, b, c, f: (a * b + c) * f, ["a", "b", "c", "f"]),
        "b": (lambda a, b, c, f: (a * b + c) * f, ["a", "b", "c", "f"]),
    }
    for n in ("L", "f", "d", "c", "e", "b", "a"):
        fn, names = downstream[n]
        xs = [v[k] for k in names]
        est = gradient(fn, xs)[names.index(n)].value
        got = obs[n][1]
        if not grad_close(got, est, v["L"], tol.rtol, tol.atol):
            hints = {
                "L": "dL/dL is 1",
                "d": "L = d * f, so dL/dd is f.data (`*` swaps)",
                "f": "L = d * f, so dL/df is d.data (`*` swaps)",
                "c": "d = e + c: `+` routes d's gradient unchanged, so c.grad = d.grad",
                "e": "d = e + c: `+` routes d's gradient unchanged, so e.grad = d.grad",
                "a": "e = a * b: a.grad = b.data * e.grad (`*` swaps, times the gradient flowing in)",
                "b": "e = a * b: b.grad = a.data * e.grad (`*` swaps, times the gradient flowing in)",
            }
            return f"{n}.grad: expected dL/d{n} = {est:.10g} (numerical), got {got:.10g}\n  hint: {hints[n]}"
    return None


def manual_cases(rng: random.Random, hidden: bool) -> list[Case]:
    """One case: the learner's own graph."""
    return [{}]


def probe_tanh_bricks(ns: Namespace, case: Case) -> Observation:
    """The learner's tanh_from_bricks(Value(x)): value, gradient, and whether it really is made of bricks."""
    results = []
    for x in case["inputs"]:
        leaf = ns["Value"](x)
        out = ns["tanh_from_bricks"](leaf)
        if not hasattr(out, "data"):
            raise LearnerError(f"tanh_from_bricks(Value({x!r})) gave a {type(out).__name__} ({short_repr(out)}), not a Value")
        nodes, _ = walk_graph(out)
        ops = [n._op for n in nodes if isinstance(getattr(n, "_op", None), str)]
        data = read_number(out.data, "tanh_from_bricks(x).data")
        out.backward()
        results.append({"data": data, "grad": read_number(leaf.grad, "x.grad"), "nodes": len(nodes),
                        "uses_tanh": "tanh" in ops})
    return {"results": results}


def judge_tanh_bricks(case: Case, obs: Observation, tol: Tolerance) -> str | None:
    """tanh(x) = (e^2x - 1) / (e^2x + 1) built from exp, +, -, / (or **): same value, same gradient."""
    if "error" in obs:
        return f"{obs['error']}\n  while calling tanh_from_bricks(Value(x)) and out.backward()"
    for x, r in zip(case["inputs"], obs["results"]):
        if r["uses_tanh"] or r["nodes"] < 4:
            return (f"tanh_from_bricks(Value({x!r})) has {r['nodes']} nodes" + (" and a tanh node" if r["uses_tanh"] else "")
                    + ": build it from the bricks (exp, +, -, /), not with x.tanh()")
        want = math.tanh(x)
        if not value_close(r["data"], want, tol.forward_rtol):
            return f"tanh_from_bricks(Value({x!r})).data: expected tanh(x) = {want:.10g}, got {r['data']:.10g}"
        dwant = 1 - want * want
        if not grad_close(r["grad"], dwant, want, tol.rtol, tol.atol):
            return (f"x.grad after tanh_from_bricks(x).backward() at x = {x!r}: expected 1 - tanh(x)**2 = {dwant:.10g}, "
                    f"got {r['grad']:.10g}\n  hint: the forward value is right, so one brick's backward is wrong: "
                    "run its own check again")
    return None


def tanh_bricks_cases(rng: random.Random, hidden: bool) -> list[Case]:
    """A few inputs of either sign, inside the range where tanh is not flat."""
    xs = [0.0, *generic_inputs(rng, 3, 0.2, 2.0)]
    if hidden:
        xs += generic_inputs(rng, 3, 0.2, 2.5)
    return [{"inputs": xs}]


def probe_local(op: str) -> Callable[[Namespace, Case], Observation]:
    """out = a op b with out.grad set by hand, then out._backward() alone: what reaches a.grad and b.grad."""

    def probe(ns: Namespace, case: Case) -> Observation:
        a, b = ns["Value"](case["x"]), ns["Value"](case["y"])
        out = a + b if op == "+" else a * b
        if not hasattr(out, "data"):
            raise LearnerError(f"a {op} b gave a {type(out).__name__} ({short_repr(out)}), not a Value")
        out.grad = case["upstream"]
        out._backward()
        return {"grads": [read_number(a.grad, "a.grad"), read_number(b.grad, "b.grad")]}

    return probe


def judge_local(op: str) -> Callable[[Case, Observation, Tolerance], str | None]:
    """`+` routes out.grad to both inputs; `*` gives each input the other's data times out.grad."""
    method = "__add__" if op == "+" else "__mul__"

    def judge(case: Case, obs: Observation, tol: Tolerance) -> str | None:
        x, y, g = case["x"], case["y"], case["upstream"]
        where = f"out = a {op} b with a = Value({x!r}), b = Value({y!r}), then out.grad = {g!r} and out._backward()"
        if "error" in obs:
            return f"{obs['error']}\n  while running {where}"
        want = [g, g] if op == "+" else [y * g, x * g]
        got = obs["grads"]
        if all(grad_close(u, w, w, tol.rtol, tol.atol) for u, w in zip(got, want)):
            return None
        hint = ""
        if got == [0.0, 0.0]:
            hint = "out._backward did nothing: define _backward inside the method and assign out._backward = _backward"
        elif op == "*" and all(grad_close(u, w, w, 1e-9, 1e-12) for u, w in zip(got, [x * g, y * g])):
            hint = "the operands look unswapped: self.grad gets other.data * out.grad, other.grad gets self.data * out.grad"
        elif all(grad_close(u, w / g, w, 1e-9, 1e-12) for u, w in zip(got, want)):
            hint = "out.grad is missing: each input's gradient is the local slope TIMES out.grad (the chain rule)"
        return (f"Value.{method}: {where} gave a.grad = {got[0]:.6g}, b.grad = {got[1]:.6g}; expected "
                f"{want[0]:.6g} and {want[1]:.6g}" + (f"\n  hint: {hint}" if hint else ""))

    return judge


def local_cases(rng: random.Random, hidden: bool) -> list[Case]:
    """Distinct operands and an upstream gradient other than 1."""
    out = []
    for _ in range(3 if hidden else 1):
        x, y, g = generic_inputs(rng, 3)
        out.append({"x": x, "y": y, "upstream": g})
    return out


GRADS_OF_KEYS = ("mul_add", "tanh_mul", "diamond", "a_plus_a")


def probe_grads_of(ns: Namespace, case: Case) -> Observation:
    """The learner's grads_of(f, inputs), called twice on the same inputs (a second call must not pile up)."""
    expr = EXPRESSIONS[case["expr"]]
    calls = []
    for _ in range(2):
        got = ns["grads_of"](expr.function, list(case["inputs"]))
        if not isinstance(got, (list, tuple)):
            raise LearnerError(f"grads_of returned a {type(got).__name__} ({short_repr(got)}), expected a list of numbers")
        calls.append([read_number(g, f"grads_of(...)[{i}]") for i, g in enumerate(list(got)[:20])])
    return {"calls": calls}


def judge_grads_of(case: Case, obs: Observation, tol: Tolerance) -> str | None:
    """One gradient per input, each the numerical one, the same on a second call."""
    expr = EXPRESSIONS[case["expr"]]
    xs = case["inputs"]
    call = f"grads_of(f, {list(xs)}) with f(" + ", ".join(expr.params) + f") = `{expr.source.replace(chr(10), '; ')}`"
    if "error" in obs:
        return f"{obs['error']}\n  while calling {call}"
    ref = expr.reference(*xs)
    estimates = gradient(expr.reference, xs)
    for n, got in enumerate(obs["calls"]):
        if len(got) != len(xs):
            return f"{call} returned {len(got)} numbers, expected one gradient per input ({len(xs)})"
        for p, g, est in zip(expr.params, got, estimates):
            if not grad_close(g, est.value, ref, tol.rtol, tol.atol):
                again = " on the second call (the first was right: start from fresh Values every call)" if n else ""
                return f"{call}: gradient of {p} expected {est.value:.10g} (numerical), got {g:.10g}{again}"
    return None


def grads_of_cases(rng: random.Random, hidden: bool) -> list[Case]:
    """Catalog expressions at generic inputs."""
    return [{"expr": k, "inputs": _sample(EXPRESSIONS[k], rng)} for k in GRADS_OF_KEYS for _ in range(2 if hidden else 1)]


# ---------------------------------------------------------------- the catalog

V = "Value"
ADD, MUL, BWD = f"{V}.__add__", f"{V}.__mul__", f"{V}.backward"

CHECKS: list[Check] = [
    # forward values (notebook 2)
    Check("value_repr", (f"{V}.__repr__",), "repr shows the data", repr_cases, probe_repr, judge_repr),
    expression_check("add_forward", (ADD,), "a + b computes the sum", ["add", "add3"], backward=False),
    expression_check("mul_forward", (MUL,), "a * b computes the product", ["mul", "mul3", "mul_add"], backward=False),
    # backward (notebook 3)
    Check("backward_seeds_root", (MUL, BWD), "backward() seeds the root with 1", seed_cases, probe_seed, judge_seed),
    expression_check("add_backward", (ADD, BWD), "+ routes out.grad to both operands", ["add_up", "add3"]),
    expression_check("mul_backward", (MUL, BWD), "* swaps the operands, times out.grad", ["mul_up", "mul3"]),
    expression_check("backward_accumulates", (ADD, MUL, BWD), "a node used twice accumulates both gradients",
                     ["a_plus_a", "a_times_a", "ab_plus_a", "a_plus_a_up", "a_plus_b_plus_a", "a_times_b_times_a"]),
    expression_check("backward_chain_order", (ADD, MUL, BWD), "gradients flow from the root down, in order",
                     ["chain", "chain_up", "mul_add"]),
    expression_check("backward_topological_order", (ADD, MUL, BWD),
                     "shared nodes and skip connections are walked in topological order",
                     ["shared", "skip_mul", "diamond"]),
    Check("backward_once_per_node", (ADD, MUL, BWD), "each node's _backward runs exactly once",
          ladder_cases, probe_ladder, judge_ladder),
    expression_check("backward_equal_data", (ADD, MUL, BWD, f"{V}.__eq__", f"{V}.__hash__"),
                     "distinct nodes with equal data stay distinct", ["twins", "tied_leaves"], required=(ADD, MUL, BWD)),
    # bricks (notebook 4)
    expression_check("tanh_backward", (f"{V}.tanh", BWD), "tanh: forward, and local derivative 1 - t**2",
                     ["tanh", "tanh_mul", "tanh_twice", "skip_tanh"]),
    expression_check("exp_backward", (f"{V}.exp", BWD), "exp: forward, and local derivative exp(x)", ["exp", "exp_mul"]),
    expression_check("pow_backward", (f"{V}.__pow__", BWD), "** number: forward, and n * x**(n-1)",
                     ["square", "cube", "inverse", "sqrt"]),
    expression_check("neg_sub_backward", (f"{V}.__neg__", f"{V}.__sub__", BWD), "-a and a - b",
                     ["neg", "sub", "sub_self", "sub_number"]),
    expression_check("div_backward", (f"{V}.__truediv__", BWD), "a / b, and a / number", ["div", "div_self", "rdiv"]),
    expression_check("number_operands", (f"{V}.__radd__", f"{V}.__rmul__", BWD), "numbers on either side of + and *",
                     ["radd", "add_number", "rmul", "mul_number", "sum"]),
    expression_check("rsub_backward", (f"{V}.__rsub__", BWD), "a number minus a Value", ["rsub", "rsub_mul"]),
    expression_check("all_bricks", (f"{V}.exp", f"{V}.__truediv__", f"{V}.__pow__", f"{V}.__sub__",
                                    f"{V}.__rmul__", BWD), "every brick together in one graph", ["bricks"]),
    # the net (notebook 6)
    Check("neuron_forward", ("Neuron",), "Neuron(nin)(x) is tanh(w.x + b)", net_cases((3, [1]), 3),
          probe_neuron, judge_forward("Neuron"), group="net"),
    Check("layer_forward", ("Layer",), "Layer(nin, nout) holds nout neurons", net_cases((3, [2]), 3),
          probe_layer, judge_forward("Layer"), group="net"),
    Check("mlp_forward", ("MLP",), "MLP(nin, nouts): parameters in order, layers chained",
          net_cases((3, [4, 4, 1]), 3), probe_mlp, judge_forward("MLP"), group="net"),
    Check("mse_loss_backward", ("MLP", "mse_loss"), "mse_loss is the mean squared error, with its gradients",
          loss_cases, probe_loss, judge_loss, group="net"),
    Check("train_descends", ("MLP", "train"), "train() is plain gradient descent and the loss falls",
          train_cases, probe_train, judge_train, group="net"),
    # exercises of single notebooks
    Check("numerical_derivative", ("numerical_derivative",), "central differences give the slope",
          derivative_cases, probe_derivative, judge_derivative, group="exercise"),
    Check("relative_error", ("relative_error",), "relative error, safe at zero", relative_error_cases,
          probe_relative_error, judge_relative_error, group="exercise"),
    Check("manual_backprop", tuple(MANUAL_NODES), "every hand-filled grad matches dL/dnode", manual_cases,
          probe_manual, judge_manual, group="exercise"),
    Check("add_local_backward", (ADD,), "out._backward() of a + b routes out.grad to both inputs", local_cases,
          probe_local("+"), judge_local("+"), group="exercise"),
    Check("mul_local_backward", (MUL,), "out._backward() of a * b gives each input the other's data times out.grad",
          local_cases, probe_local("*"), judge_local("*"), group="exercise"),
    Check("tanh_from_bricks", ("tanh_from_bricks",), "tanh rebuilt from exp, +, -, / has tanh's value and gradient",
          tanh_bricks_cases, probe_tanh_bricks, judge_tanh_bricks, group="exercise"),
    Check("grads_of", ("grads_of",), "grads_of(f, inputs) returns df/dinput for each input, fresh every call",
          grads_of_cases, probe_grads_of, judge_grads_of, group="exercise"),
    # notebook 4's number / Value; an exercise check so that engines written to the spec need not define it
    expression_check("rtruediv_backward", (f"{V}.__rtruediv__", BWD), "a number divided by a Value",
                     ["rtruediv", "rtruediv_tanh"], group="exercise"),
]

BY_NAME: dict[str, Check] = {c.name: c for c in CHECKS}


def get(name: str) -> Check:
    """The check of that name, or KeyError listing the names that exist."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"no check named {name!r}; known: {', '.join(BY_NAME)}") from None


def spec_checks() -> list[Check]:
    """The engine and net checks: what `python -m autograder check` runs."""
    return [c for c in CHECKS if c.group in ("engine", "net")]
