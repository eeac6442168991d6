"""Pieces shared by the topic modules: expression checks, node checks (structure and local rules), the engine's
isolated checks; the registry every topic module adds its checks to is `registry`."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Sequence
from typing import Any

from ..settings import Tolerance
from ..truth.expressions import Expr
from ..truth.numeric import Estimate, generic_inputs, grad_close, known_gradient, value_close
from ..truth.slips import Recovery, Space, close, equal_on, evaluate, recover
from . import messages as msg
from .base import Case, Check, Failure, Observation
from .registry import REGISTRY, register  # noqa: F401  (the topic modules register through here)

V = "Value"
ADD, MUL, BWD = f"{V}.__add__", f"{V}.__mul__", f"{V}.backward"
TANH, EXP, POW = f"{V}.tanh", f"{V}.exp", f"{V}.__pow__"


# ---------------------------------------------------------------- expressions

EXPRESSIONS: dict[str, Expr] = {}
# Mistakes recognised from the numbers alone: expression -> [(misconception, wrong gradient)]
GRADIENT_MISTAKES: dict[str, list[tuple[str, Callable[..., Sequence[float]]]]] = {}
# Mistakes recognised from the forward value alone: expression -> [(misconception, wrong value)]
VALUE_MISTAKES: dict[str, list[tuple[str, Callable[..., float]]]] = {}
# The brick (a method of notebook 4, by its misconception prefix) an expression tests: a gradient that stayed 0 there
# is that brick's graph cut (the leaf is not reached through _prev) or its missing _backward, named with the method.
BRICK_OF: dict[str, str] = {}
# The operation an expression's wrong forward value is blamed on when no known mistake matches
FORWARD_MISCONCEPTIONS = {"add": "add.wrong_forward", "add3": "add.wrong_forward", "mul": "mul.wrong_forward",
                          "mul3": "mul.wrong_forward"}


def sample(expr: Expr, rng: random.Random) -> list[float]:
    """Generic inputs where the grader's own numerical derivative is trustworthy."""
    for _ in range(100):
        xs = generic_inputs(rng, len(expr.params), expr.low, expr.high)
        if expr.tied:
            xs = [xs[0]] * len(xs)
        xs = [0.0 if i in expr.zeros else x for i, x in enumerate(xs)]
        try:
            f = expr.reference(*xs)
        except (ArithmeticError, ValueError):
            continue
        if math.isfinite(f) and all(e.reliable for e in known_gradient(expr.reference, xs)):
            return xs
    raise RuntimeError(f"no reliable inputs for {expr.body!r}")  # pragma: no cover - a catalogue bug


def where(expr: Expr, xs: Sequence[float]) -> str:
    """`source` at a=..., b=..."""
    src = expr.source.replace("\n", "; ")
    args = ", ".join(f"{p}={x!r}" for p, x in zip(expr.params, xs))
    return f"`{src}` at {args}"


def expression_case(key: str, rng: random.Random, backward: bool) -> Case:
    """One self-contained case: the expression's text and parameters, the inputs, whether to back-propagate."""
    expr = EXPRESSIONS[key]
    case = {"probe": "again" if expr.again else "expression", "expr": key, "params": list(expr.params),
            "source": expr.source, "inputs": sample(expr, rng), "backward": backward}
    if expr.again:
        case["zero"] = expr.again
    return case


def _ratio_misconception(expr: Expr, got: float, want: float, used_twice: bool) -> str | None:
    """The misconception the ratio of a wrong gradient to the right one points at."""
    if want == 0 or not math.isfinite(got):
        return None
    r = got / want
    if abs(got) < 1e-12:
        return "backward.grad_stayed_zero"
    if abs(r + 1) < 1e-6:
        return "sub.sign_flipped"
    if expr.upstream != 1.0 and abs(r * expr.upstream - 1) < 1e-6:
        return "node.missing_upstream"
    if used_twice and abs(r - 0.5) < 1e-6:
        return "node.assigns_instead_of_accumulating"
    if r > 1.5 and abs(r - round(r)) < 1e-6:
        return "backward.ran_twice"
    return None


def _uses(expr: Expr, param: str) -> int:
    return len(re.findall(rf"\b{param}\b", expr.source))


def judge_expression(case: Case, obs: Observation, tol: Tolerance) -> Failure | None:
    """Forward value first, then the root seed, then each leaf's gradient against the numerical truth."""
    key = case["expr"]
    expr = EXPRESSIONS[key]
    xs = case["inputs"]
    ref = expr.reference(*xs)
    if not value_close(obs["data"], ref, tol.forward_rtol):
        mis = "sub.sign_flipped" if value_close(-obs["data"], ref, tol.forward_rtol) else None
        for m, wrong in VALUE_MISTAKES.get(key, []):
            if value_close(obs["data"], wrong(*xs), 1e-9):
                mis = m
        mis = mis or FORWARD_MISCONCEPTIONS.get(key)
        return Failure(f"{msg.method_prefix(mis)}forward value of {where(expr, xs)}: expected {ref:.10g}, "
                       f"got {obs['data']:.10g}", mis,
                       repro=msg.repro_lines(expr.repro(xs, backward=case["backward"]).splitlines()))
    if not case["backward"]:
        return None
    repro = msg.repro_lines(expr.repro(xs, [e.value for e in known_gradient(expr.reference, xs)]).splitlines())
    if not grad_close(obs["root_grad"], 1.0, 1.0, tol.rtol, tol.atol):
        return Failure(f"Value.backward: out.grad after out.backward() on {where(expr, xs)}: expected 1, "
                       f"got {obs['root_grad']:.6g}", "backward.root_not_seeded", repro=repro, method=BWD)
    estimates: list[Estimate] = known_gradient(expr.reference, xs)
    exact = list(expr.exact(*xs)) if expr.exact else None
    got = obs["grads"]
    for i, (p, g, est) in enumerate(zip(expr.params, got, estimates)):
        if grad_close(g, est.value, ref, tol.rtol, tol.atol):
            continue
        bound = tol.atol * max(1.0, abs(ref)) + tol.rtol * max(abs(g), abs(est.value))
        want = f"{est.value:.10g} (numerical"
        want += f"; exact {exact[i]:.10g})" if exact else ")"
        mis = _ratio_misconception(expr, g, est.value, _uses(expr, p) > 1)
        if mis is None and any(grad_close(g, w, ref, 1e-6, 1e-8) for w in expr.one_use_partials(p, xs)):
            mis = "node.assigns_instead_of_accumulating"  # the gradient through one use alone: the others overwritten
        mis = mis or expr.misconception
        for m, wrong in GRADIENT_MISTAKES.get(key, []):
            if all(grad_close(x, w, ref, 1e-6, 1e-9) for x, w in zip(got, wrong(*xs))):
                mis = m
        lost = obs.get("merged") or []
        if lost:  # the learner's engine merged two nodes the grader built: what was observed, and why
            mis = "eq.by_value"
        brick, prefix = BRICK_OF.get(key), ""
        if brick:  # a brick's check: name the brick, unless the mistake names another method
            if abs(g) < 1e-12 and not lost:
                reaches = obs.get("reaches")
                mis = f"{brick}.graph_cut" if reaches is not None and not reaches[i] else f"{brick}.no_backward"
            kind = (mis or "").split(".")[0]
            prefix = msg.method_prefix(mis) if kind not in ("", "node", "backward") else f"{msg.METHOD_OF[brick]}: "
        merge = (f" (the graph below out lost a node of data {lost[0]:.6g} that the grader built: your __eq__ calls it "
                 "equal to another node of that data, and a set kept only one of them)") if lost else ""
        return Failure(f"{prefix}gradient of {p} in {where(expr, xs)}: expected {want}, got {g:.10g}; "
                       f"error {abs(g - est.value):.3g} > tolerance {bound:.3g}{merge}", mis, name=p, repro=repro)
    return None


def expression_during(case: Case) -> str:
    """What ran when learner code raised on an expression case."""
    expr = EXPRESSIONS[case["expr"]]
    xs = case["inputs"]
    return f"\n  while computing {where(expr, xs)}" + msg.repro_lines(expr.repro(xs, backward=case["backward"]).splitlines())


# ---------------------------------------------------------------- one node: structure and local rule

NODE_METHOD = {"+": ADD, "*": MUL, "tanh": TANH, "exp": EXP, "**": POW}
NODE_KIND = {"+": "add", "*": "mul", "tanh": "tanh", "exp": "exp", "**": "pow"}


def node_case(op: str, rng: random.Random, operands: Sequence[int] | None = None, local: bool = False,
              k: float | None = None) -> Case:
    """One operation on fresh leaves; with `local`, preset leaf grads and out.grad for one out._backward() call."""
    binary = op in ("+", "*")
    operands = list(operands if operands is not None else ([0, 1] if binary else [0]))
    n = max(operands) + 1
    high = 2.0 if op in ("tanh", "exp") else 2.5
    xs = generic_inputs(rng, n + 3, 0.3, high)
    case: Case = {"probe": "node", "op": op, "inputs": xs[:n], "operands": operands}
    if op == "**":
        case["k"] = k if k is not None else 3
        case["inputs"] = [abs(x) for x in case["inputs"]]
    if local:
        case["preset"] = [round(abs(x) * 0.4, 3) for x in xs[n: n + n]]  # as if another use had passed a gradient
        case["upstream"] = xs[-1]
    return case


def at_zero(case: Case) -> Case:
    """The node case with its first operand's data exactly 0 (every operation here has a slope there)."""
    return {**case, "inputs": [0.0, *case["inputs"][1:]]}


def _local_slopes(case: Case) -> list[float]:
    """d out / d leaf for each leaf (summed over the leaf's uses), by the grader's own calculus."""
    op, xs, ops = case["op"], case["inputs"], case["operands"]
    vals = [xs[i] for i in ops]
    if op == "+":
        per_use = [1.0] * len(ops)
    elif op == "*":
        per_use = [vals[1], vals[0]]
    elif op == "tanh":
        per_use = [1 - math.tanh(vals[0]) ** 2]
    elif op == "exp":
        per_use = [math.exp(vals[0])]
    else:
        per_use = [case["k"] * vals[0] ** (case["k"] - 1)]
    slopes = [0.0] * len(xs)
    for i, s in zip(ops, per_use):
        slopes[i] += s
    return slopes


def _forward(case: Case) -> float:
    op, xs, ops = case["op"], case["inputs"], case["operands"]
    vals = [xs[i] for i in ops]
    return {"+": lambda: vals[0] + vals[1], "*": lambda: vals[0] * vals[1], "tanh": lambda: math.tanh(vals[0]),
            "exp": lambda: math.exp(vals[0]), "**": lambda: vals[0] ** case["k"]}[op]()


def node_text(case: Case) -> str:
    """`out = a * b with a = Value(..), b = Value(..)` for a node case."""
    names = "ab"
    args = [names[i] for i in case["operands"]]
    expr = {"+": " + ", "*": " * "}.get(case["op"])
    if expr:
        body = expr.join(args)
    elif case["op"] == "**":
        body = f"a ** {case['k']!r}"
    else:
        body = f"a.{case['op']}()"
    leaves = ", ".join(f"{names[i]} = Value({x!r})" for i, x in enumerate(case["inputs"]))
    return f"out = {body} with {leaves}"


# Every common label of an operation (compared case-folded, spaces dropped): symbols, Unicode signs, words.
OP_LABELS: dict[str, frozenset[str]] = {
    "+": frozenset({"+", "＋", "add", "plus", "sum", "addition", "__add__", "a+b"}),
    "*": frozenset({"*", "×", "·", "⋅", "∗", "✕", "x", "mul", "mult", "times", "multiply", "product", "prod",
                    "multiplication", "__mul__", "a*b"}),
    "tanh": frozenset({"tanh", "tanh()", "th"}),
    "exp": frozenset({"exp", "exp()", "e^x", "e**x", "eˣ", "e"}),
}


def op_matches(op: str, text: str | None) -> bool:
    """Whether `_op` names the operation in any common way (`'×'` and `'mul'` for a product, `'^2'` for a square)."""
    if not text:
        return False
    label = "".join(text.split()).casefold()
    if op == "**":
        return "**" in label or "pow" in label or "^" in label or label.startswith(("²", "³", "⁻"))
    return label in OP_LABELS[op]


def names_another_op(op: str, text: str | None) -> bool:
    """Whether `_op` names a different operation than `op` (such as '+' on a product): the only `_op` a check of a
    local rule rejects, since only notebook 2's exercises ask for the label."""
    return bool(text) and not op_matches(op, text) and any(op_matches(o, text) for o in (*OP_LABELS, "**") if o != op)


def _local_mistake(case: Case, got: list[float], tol: Tolerance, data: float) -> str | None:
    """Which known wrong local rule gives these grads."""
    op, xs, ops = case["op"], case["inputs"], case["operands"]
    p, u = case["preset"], case["upstream"]
    slopes = _local_slopes(case)
    kind = NODE_KIND[op]

    def close(g: float, w: float) -> bool:
        return grad_close(g, w, w, 1e-6, 1e-9)

    def like(*values: float) -> bool:
        return all(close(g, w) for g, w in zip(got, values))

    if like(*p):
        return "node.backward_not_attached"
    single = [s / ops.count(i) if ops.count(i) else 0.0 for i, s in enumerate(slopes)]
    right = [pi + u * s for pi, s in zip(p, slopes)]

    def overwritten(i: int) -> bool:  # this leaf's grad holds one use's gradient alone: `=` where `+=` belongs
        return not close(got[i], right[i]) and (close(got[i], u * slopes[i]) or close(got[i], u * single[i]))

    if op == "*" and len(set(ops)) == 2 and any(not close(got[i], right[i]) and close(got[i], p[i] + u * xs[i])
                                                 for i in range(2)):
        return "mul.unswapped"  # a leaf got its own data times out.grad
    if op in ("+", "*") and len(set(ops)) < len(ops) and close(got[ops[0]], p[ops[0]] + u * single[ops[0]]):
        return f"{kind}.loses_a_use"  # a + a: the leaf got one use's gradient added, not both
    if any(overwritten(i) for i in range(len(got))):
        return f"{kind}.assigns_instead_of_accumulating" if kind in ("add", "mul") else "node.assigns_instead_of_accumulating"
    if like(*(pi + s for pi, s in zip(p, slopes))):
        return "node.missing_upstream"
    if like(*(pi + data * s for pi, s in zip(p, slopes))):
        return "node.uses_out_data"
    x = xs[0]
    wrong = {
        "*": [("mul.unswapped", [x * u, xs[-1] * u] if len(xs) > 1 else [])],
        "+": [("add.forgets_an_operand", [p[0] + u, p[1]] if len(p) > 1 else []),
              ("add.forgets_an_operand", [p[0], p[1] + u] if len(p) > 1 else [])],
        "tanh": [("tanh.uses_input", [u * (1 - x * x)]), ("tanh.drops_one_minus", [u * math.tanh(x) ** 2]),
                 ("tanh.one_minus_t", [u * (1 - math.tanh(x))]), ("tanh.one_plus_t_squared", [u * (1 + math.tanh(x) ** 2)])],
        "exp": [("exp.derivative_is_input", [u * x]), ("exp.derivative_is_input", [u])],
        "**": [("pow.derivative_keeps_power", [u * case.get("k", 1) * x ** case.get("k", 1)]),
               ("pow.derivative_keeps_power", [u * x ** (case.get("k", 1) - 1)]),
               ("pow.exponent_off_by_one", [u * case.get("k", 1) * x ** (case.get("k", 1) + 1)])],
    }[op]
    for mis, values in wrong:
        if not values:
            continue
        if op in ("+",):
            if like(*values):
                return mis
        elif like(*(pi + v for pi, v in zip(p, values))) or like(*values):
            return mis
    if op in ("+", "*") and len(set(ops)) == 2:  # one operand's rule wrong, the other's right
        for i, j in ((0, 1), (1, 0)):
            if not close(got[j], right[j]) or close(got[i], right[i]):
                continue
            if close(got[i], p[i]):
                return f"{kind}.forgets_an_operand"
            if close(got[i], p[i] - u * slopes[i]):
                return f"{kind}.sign_flipped"
            if any(close(got[i], p[i] + g * f) for g in (p[j], right[j]) for f in (1.0, u)):
                return "add.uses_operand_grad" if op == "+" else "mul.uses_grad_for_data"
    if all(close(g, pi) or close(g, pi - u * s) for g, pi, s in zip(got, p, slopes)):
        return "node.sign_flipped"
    return None


def judge_node(case: Case, obs: Observation, tol: Tolerance) -> Failure | None:
    """The node is new, remembers exactly its operands and its op; its _backward adds the local rule times out.grad."""
    op = case["op"]
    method, kind = NODE_METHOD[op], NODE_KIND[op]
    text = node_text(case)
    if any(obs["is_leaf"]):
        return Failure(f"{method}: {text}: expected a new Value, got one of its operands itself",
                       "node.returns_operand", method=method)
    want = _forward(case)
    if not value_close(obs["data"], want, tol.forward_rtol):
        return Failure(f"{method}: forward value of {text}: expected {want:.10g}, got {obs['data']:.10g}",
                       method=method, repro=node_repro(case))
    kids, operands = obs["children"], set(case["operands"])
    composed = op in ("tanh", "exp", "**") and not any(k >= 0 for k in kids) and all(obs.get("reaches", [False]))
    if composed:
        return None  # built from other nodes (tanh from exp, + and /): its own composite check judges it
    if not kids:
        mis = f"{kind}.no_children" if kind in ("add", "mul") else f"{kind}.graph_cut"
        return Failure(f"{method}: {text}: expected out._prev to hold the operand{'s' * (len(operands) > 1)}, got "
                       "no children at all (a graph cut)", mis, method=method, repro=structure_repro(case))
    extra_ok = op == "**"  # a power may keep its exponent as a child Value
    if set(k for k in kids if k >= 0) != operands or (-1 in kids and not extra_ok):
        return Failure(f"{method}: {text}: expected out._prev to hold exactly the operands, got {len(kids)} "
                       f"children, {sum(k >= 0 for k in kids)} of them operands", "node.wrong_children", method=method,
                       repro=structure_repro(case))
    local = "preset" in case  # only notebook 2's structure cases ask for the label; a local rule's check needs none
    if (names_another_op(op, obs["op"]) if local else not op_matches(op, obs["op"])):
        mis = f"{kind}.wrong_op" if kind in ("add", "mul") else "node.wrong_op"
        return Failure(f"{method}: {text}: expected out._op = {op!r}, got {obs['op']!r}", mis, method=method,
                       repro=structure_repro(case))
    if "grads" not in obs:
        return None
    p, u = case["preset"], case["upstream"]
    expected = [pi + u * s for pi, s in zip(p, _local_slopes(case))]
    got = obs["grads"]
    if all(grad_close(g, w, w, tol.rtol, tol.atol) for g, w in zip(got, expected)):
        return None
    mis = _local_mistake(case, got, tol, obs["data"])
    recovered = None if mis else recover_slope(case, got)
    if recovered:
        mis = f"{kind}.wrong_slope"
    grads = ", ".join(f"{n}.grad = {g!r}" for n, g in zip("ab", p))
    return Failure(f"{method}: {text}, then {grads} (as if from another use), out.grad = {u!r} and one "
                   f"out._backward() call: expected {fmt_grads(expected)}; got {fmt_grads(got)}", mis, name="a",
                   method=method, repro=node_repro(case, expected), recovered=recovered)


# What a one-input operation's _backward adds to self.grad, in the names a slip may mix up: x the input (self.data),
# t the output (out.data), g the gradient flowing in (out.grad), k the exponent.
_IO = "x is self.data, t is out.data and g is out.grad"
LOCAL_SLOPES: dict[str, Space] = {
    "tanh": Space("(1 - t ** 2) * g", ("x", "t", "g"), ("tanh",), (("x", -2.0, 2.0), ("g", -3.0, 3.0)),
                  (("t", "tanh(x)"),), _IO),
    "exp": Space("t * g", ("x", "t", "g"), ("exp",), (("x", -2.0, 2.0), ("g", -3.0, 3.0)), (("t", "exp(x)"),), _IO),
    "**": Space("k * x ** (k - 1) * g", ("x", "k", "t", "g"), (), (("x", 0.3, 2.5), ("k", 2.0, 4.0), ("g", -3.0, 3.0)),
                (("t", "x ** k"),), _IO + ", k the exponent", counts=("k",)),
}
# What a two-operand operation's _backward adds to each operand's grad: x is self.data, y other.data, t out.data, g
# out.grad (the other operand's rule held right while one is recovered).
_IO2 = "x is self.data, y is other.data, t is out.data and g is out.grad"
BINARY_SLOPES: dict[str, tuple[Space, Space]] = {
    op: tuple(Space(f, ("x", "y", "t", "g"), (), (("x", -2.5, 2.5), ("y", -2.5, 2.5), ("g", -3.0, 3.0)),
                    (("t", out),), _IO2) for f in rules)  # type: ignore[misc]
    for op, out, rules in (("*", "x * y", ("y * g", "x * g")), ("+", "x + y", ("g", "g")))
}


def recover_slope(case: Case, got: Sequence[float]) -> dict[str, str] | None:
    """The one slip of what a one-input operation's _backward adds that gives the learner's gradient (the preset
    gradient plus the slip), as the learner's formula beside the right one; None if none or several do."""
    if case["op"] in BINARY_SLOPES:
        return _recover_binary(case, got)
    space = LOCAL_SLOPES.get(case["op"])
    if space is None or len(got) != 1:
        return None
    p, u = case["preset"][0], case["upstream"]
    env = space.env(x=case["inputs"][0], g=u, **({"k": case["k"]} if "k" in case else {}))

    def matches(text: str) -> bool:
        v = evaluate(text, env)
        return v is not None and close(got[0], p + v)

    found = recover(space.formula, space.candidates(), matches, space.where,
                    equal_on(space, {"k": case["k"]} if "k" in case else {}))
    return ({"what": "_backward's `self.grad += ...`", "got": found.got, "want": found.want, "where": found.where}
            if found else None)


def _recover_binary(case: Case, got: Sequence[float]) -> dict[str, str] | None:
    """For + and *: the one slip of what one operand's line of _backward adds (the other's held right) that gives
    the learner's grads, whether the operands are two leaves or one leaf twice."""
    spaces = BINARY_SLOPES[case["op"]]
    xs, ops, p, u = case["inputs"], case["operands"], case["preset"], case["upstream"]
    env = spaces[0].env(x=xs[ops[0]], y=xs[ops[1]], g=u)
    right = [evaluate(sp.formula, env) or 0.0 for sp in spaces]
    found: list[tuple[int, Recovery]] = []
    for side, space in enumerate(spaces):
        def matches(text: str, side: int = side) -> bool:
            v = evaluate(text, env)
            if v is None:
                return False
            adds = [v if k == side else right[k] for k in (0, 1)]
            want = list(p)
            for k, leaf in enumerate(ops):
                want[leaf] += adds[k]
            return all(close(g, w) for g, w in zip(got, want))

        hit = recover(space.formula, space.candidates(), matches, space.where, equal_on(space, {}))
        if hit:
            found.append((side, hit))
    if len(found) != 1:
        return None
    side, hit = found[0]
    who = ("self", "other")[side]
    return {"what": f"_backward's `{who}.grad += ...`", "got": hit.got, "want": hit.want, "where": hit.where}


def node_fits(case: Case, obs: Observation, recovered: dict[str, str]) -> bool:
    """Whether a one-operand or one-line slip recovered on another case gives this case's grads too."""
    got = obs.get("grads")
    if case.get("probe") != "node" or got is None or "preset" not in case:
        return False
    xs, ops, p, u = case["inputs"], case["operands"], case["preset"], case["upstream"]
    if case["op"] in BINARY_SLOPES:
        spaces = BINARY_SLOPES[case["op"]]
        env = spaces[0].env(x=xs[ops[0]], y=xs[ops[1]], g=u)
        side = 1 if "`other.grad" in recovered.get("what", "") else 0
        adds = [evaluate(recovered["got"] if k == side else sp.formula, env) for k, sp in enumerate(spaces)]
        if any(a is None for a in adds):
            return False
        want = list(p)
        for k, leaf in enumerate(ops):
            want[leaf] += adds[k]  # type: ignore[operator]
        return all(close(g, w) for g, w in zip(got, want))
    space = LOCAL_SLOPES.get(case["op"])
    if space is None or len(got) != 1:
        return False
    v = evaluate(recovered["got"], space.env(x=xs[0], g=u, **({"k": case["k"]} if "k" in case else {})))
    return v is not None and close(got[0], p[0] + v)


def structure_repro(case: Case) -> str:
    """Lines that rebuild the node and print what it remembers."""
    names = "ab"
    leaves = "; ".join(f"{names[i]} = Value({x!r})" for i, x in enumerate(case["inputs"]))
    return msg.repro_lines([leaves, node_text(case).split(" with ")[0], "print(out._prev, out._op)"])


def node_repro(case: Case, expected: Sequence[float] | None = None) -> str:
    """Lines that rebuild the node (and, with presets, run its _backward once) and print what was judged."""
    names = "ab"
    body = node_text(case).split(" with ")[0]
    lines = ["; ".join(f"{names[i]} = Value({x!r})" for i, x in enumerate(case["inputs"])), body]
    if expected is None:
        return msg.repro_lines([*lines, f"print(out.data)  # expected {_forward(case):.10g}"])
    leaves = names[: len(case["inputs"])]
    lines += ["; ".join(f"{n}.grad = {g!r}" for n, g in zip(leaves, case["preset"])) + f"; out.grad = {case['upstream']!r}",
              "out._backward()", f"print({', '.join(f'{n}.grad' for n in leaves)})  # expected {msg.fmt(expected)}"]
    return msg.repro_lines(lines)


def fmt_grads(values: Sequence[float]) -> str:
    """`a.grad = .., b.grad = ..`"""
    return ", ".join(f"{n}.grad = {v:.6g}" for n, v in zip("ab", values))


def node_during(case: Case) -> str:
    """What ran when learner code raised on a node case."""
    extra = " and one out._backward() call" if case.get("upstream") is not None else ""
    return f"\n  while running {node_text(case)}{extra}"


def judge_by_probe(**judges: Callable[[Case, Observation, Tolerance], Failure | None]) -> Callable[..., Failure | None]:
    """One judge that dispatches on the case's probe kind."""

    def judge(case: Case, obs: Observation, tol: Tolerance) -> Failure | None:
        return judges[case["probe"]](case, obs, tol)

    return judge


def during_by_probe(**durings: Callable[[Case], str]) -> Callable[[Case], str]:
    """One `during` that dispatches on the case's probe kind."""

    def during(case: Case) -> str:
        d = durings.get(case["probe"])
        return d(case) if d else ""

    return during


def expression_check(name: str, targets: tuple[str, ...], description: str, keys: Sequence[str],
                     backward: bool = True, repeats: int = 2, points: float = 1.0,
                     extra: Callable[[random.Random, bool], list[Case]] | None = None, **kw: Any) -> Check:
    """A check over catalogue expressions, each rebuilt `repeats` times (more when hidden), plus `extra` cases."""
    for k in keys:
        assert k in EXPRESSIONS, k

    def cases(rng: random.Random, hidden: bool) -> list[Case]:
        n = repeats * 2 if hidden else repeats
        out = [expression_case(k, rng, backward) for k in keys for _ in range(n)]
        return out + (extra(rng, hidden) if extra else [])

    kw.setdefault("fits", node_fits)
    return Check(name, targets, description, cases,
                 judge_by_probe(expression=judge_expression, again=judge_expression, node=judge_node), points,
                 during=during_by_probe(expression=expression_during, again=expression_during, node=node_during), **kw)
