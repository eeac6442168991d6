"""Pieces shared by the topic modules: expression checks and node checks (structure and local rules), the judges of
both; what they know of each operation comes from its declaration (ops.py), the graphs from graphs.py."""

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
from .graphs import BRICK_OF, EXPRESSIONS, FORWARD_OF, gradient_mistakes, value_mistakes
from .ops import BY_SYMBOL, Operation, rule_on

V = "Value"
ADD, MUL, BWD = f"{V}.__add__", f"{V}.__mul__", f"{V}.backward"
TANH, EXP, POW = f"{V}.tanh", f"{V}.exp", f"{V}.__pow__"


# ---------------------------------------------------------------- expressions

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
        for m, wrong in value_mistakes(key):
            if value_close(obs["data"], wrong(*xs), 1e-9):
                mis = m
        mis = mis or (FORWARD_OF[key].said("wrong_forward") if key in FORWARD_OF else None)
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
        for m, wrong in gradient_mistakes(key):
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

def node_case(op: str, rng: random.Random, operands: Sequence[int] | None = None, local: bool = False,
              k: float | None = None, sign: float | None = None) -> Case:
    """One operation on fresh leaves; with `local`, preset leaf grads and out.grad for one out._backward() call; with
    `sign`, every input of that sign."""
    operation = BY_SYMBOL[op]
    operands = list(operands if operands is not None else ([0, 1] if operation.arity == 2 else [0]))
    n = max(operands) + 1
    xs = generic_inputs(rng, n + 3, 0.3, operation.high)
    case: Case = {"probe": "node", "op": op, "inputs": xs[:n], "operands": operands}
    if operation.form == "power":
        case["k"] = k if k is not None else 3
    if sign is not None:
        case["inputs"] = [sign * abs(x) for x in case["inputs"]]
    if local:
        case["preset"] = [round(abs(x) * 0.4, 3) for x in xs[n: n + n]]  # as if another use had passed a gradient
        case["upstream"] = xs[-1]
    return case


def at_zero(case: Case) -> Case:
    """The node case with its first operand's data exactly 0 (every operation here has a slope there)."""
    return {**case, "inputs": [0.0, *case["inputs"][1:]]}


def local_cases(operation: Operation) -> Callable[[random.Random, bool], list[Case]]:
    """The node alone, preset grads and one out._backward() call: for two operands, distinct ones and one used twice;
    for one, a case of each of the declared signs; more of each when hidden; last, if declared, an operand of exactly
    0 (where a slope that divides by the data is undefined)."""
    op, local = operation.symbol, operation.local
    assert local is not None

    def cases(rng: random.Random, hidden: bool) -> list[Case]:
        if operation.arity == 2:
            out = [node_case(op, rng, local=True), node_case(op, rng, [0, 0], local=True)]
            if hidden:
                out += [node_case(op, rng, local=True), node_case(op, rng, [0, 0], local=True)]
        else:
            out = [node_case(op, rng, local=True, k=local.power, sign=sign)
                   for sign in (local.signs or (None,)) for _ in range(2 if hidden else 1)]
        if local.at_zero:
            out.append(at_zero(node_case(op, rng, local=True, k=local.power, sign=(local.signs or (None,))[0])))
        return out

    return cases


def _env(case: Case) -> dict[str, Any]:
    """The names of a node case's formulas: x and y the operands' data, k the exponent."""
    xs, ops = case["inputs"], case["operands"]
    return {"x": xs[ops[0]], "y": xs[ops[1]] if len(ops) > 1 else None, "k": case.get("k")}


def _per_leaf(case: Case, adds: Sequence[float]) -> list[float]:
    """What each leaf gets from what a _backward adds to each operand (a leaf used twice gets both)."""
    out = [0.0] * len(case["inputs"])
    for leaf, v in zip(case["operands"], adds):
        out[leaf] += v
    return out


def _forward(case: Case) -> float:
    e = _env(case)
    return BY_SYMBOL[case["op"]].forward_on(e["x"], e["y"], e["k"])


def _local_slopes(case: Case) -> list[float]:
    """d out / d leaf for each leaf (summed over the leaf's uses), by the grader's own calculus."""
    return _adds(case, BY_SYMBOL[case["op"]].backward, 1.0)


def _adds(case: Case, rule: tuple[str, ...], g: float) -> list[float]:
    """What a _backward following `rule` adds to each leaf's grad, out.grad being g."""
    e = _env(case)
    return _per_leaf(case, rule_on(rule)(e["x"], e["y"], _forward(case), e["k"], g))


def node_text(case: Case) -> str:
    """`out = a * b with a = Value(..), b = Value(..)` for a node case."""
    names = "ab"
    args = [names[i] for i in case["operands"]]
    body = BY_SYMBOL[case["op"]].call.format(a=args[0], b=args[-1], k=repr(case.get("k")))
    leaves = ", ".join(f"{names[i]} = Value({x!r})" for i, x in enumerate(case["inputs"]))
    return f"out = {body} with {leaves}"


def op_matches(op: str, text: str | None) -> bool:
    """Whether `_op` names the operation in any common way (`'×'` and `'mul'` for a product, `'^2'` for a square)."""
    if not text:
        return False
    label = "".join(text.split()).casefold()
    operation = BY_SYMBOL[op]
    return (label in operation.labels or any(p in label for p in operation.label_parts)
            or (bool(operation.label_starts) and label.startswith(operation.label_starts)))


def names_another_op(op: str, text: str | None) -> bool:
    """Whether `_op` names a different operation than `op` (such as '+' on a product): the only `_op` a check of a
    local rule rejects, since only notebook 2's exercises ask for the label."""
    return bool(text) and not op_matches(op, text) and any(op_matches(o, text) for o in BY_SYMBOL if o != op)


def _local_mistake(case: Case, got: list[float], tol: Tolerance, data: float) -> str | None:
    """Which known wrong local rule gives these grads: the shapes every operation may show, then the operation's own
    wrong rules (ops.py)."""
    operation = BY_SYMBOL[case["op"]]
    ops = case["operands"]
    p, u = case["preset"], case["upstream"]
    slopes = _local_slopes(case)
    binary = operation.arity == 2

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

    if binary and len(set(ops)) == 2:  # a rule wrong on one operand alone, such as a leaf given its own data
        for m in operation.mistakes:
            for rule in m.rules if m.alone else ():
                wrong = _adds(case, rule, u)
                if any(not close(got[i], right[i]) and close(got[i], p[i] + wrong[i]) for i in range(2)):
                    return m.id
    if binary and len(set(ops)) < len(ops) and close(got[ops[0]], p[ops[0]] + u * single[ops[0]]):
        return operation.said("loses_a_use")  # a + a: the leaf got one use's gradient added, not both
    if any(overwritten(i) for i in range(len(got))):
        return operation.said("assigns") or "node.assigns_instead_of_accumulating"
    if like(*(pi + s for pi, s in zip(p, slopes))):
        return "node.missing_upstream"
    if like(*(pi + data * s for pi, s in zip(p, slopes))):
        return "node.uses_out_data"
    for m in operation.mistakes:
        for rule in m.rules:
            wrong = _adds(case, rule, u)
            if like(*(pi + v for pi, v in zip(p, wrong))) or like(*wrong):
                return m.id
    if binary and len(set(ops)) == 2:  # one operand's rule wrong, the other's right
        for i, j in ((0, 1), (1, 0)):
            if not close(got[j], right[j]) or close(got[i], right[i]):
                continue
            if close(got[i], p[i]):
                return operation.said("forgets_an_operand")
            if close(got[i], p[i] - u * slopes[i]):
                return operation.said("sign_flipped")
            if any(close(got[i], p[i] + g * f) for g in (p[j], right[j]) for f in (1.0, u)):
                return operation.said("uses_operand_grad")
    if all(close(g, pi) or close(g, pi - u * s) for g, pi, s in zip(got, p, slopes)):
        return "node.sign_flipped"
    return None


def judge_node(case: Case, obs: Observation, tol: Tolerance) -> Failure | None:
    """The node is new, remembers exactly its operands and its op; its _backward adds the local rule times out.grad."""
    op = case["op"]
    operation = BY_SYMBOL[op]
    method = operation.target
    text = node_text(case)
    if any(obs["is_leaf"]):
        return Failure(f"{method}: {text}: expected a new Value, got one of its operands itself",
                       "node.returns_operand", method=method)
    want = _forward(case)
    if not value_close(obs["data"], want, tol.forward_rtol):
        return Failure(f"{method}: forward value of {text}: expected {want:.10g}, got {obs['data']:.10g}",
                       method=method, repro=node_repro(case))
    kids, operands = obs["children"], set(case["operands"])
    composed = operation.arity == 1 and not any(k >= 0 for k in kids) and all(obs.get("reaches", [False]))
    if composed:
        return None  # built from other nodes (tanh from exp, + and /): its own composite check judges it
    if not kids:
        return Failure(f"{method}: {text}: expected out._prev to hold the operand{'s' * (len(operands) > 1)}, got "
                       "no children at all (a graph cut)", operation.said("graph_cut"), method=method,
                       repro=structure_repro(case))
    if set(k for k in kids if k >= 0) != operands or (-1 in kids and not operation.extra_child):
        return Failure(f"{method}: {text}: expected out._prev to hold exactly the operands, got {len(kids)} "
                       f"children, {sum(k >= 0 for k in kids)} of them operands", "node.wrong_children", method=method,
                       repro=structure_repro(case))
    local = "preset" in case  # only notebook 2's structure cases ask for the label; a local rule's check needs none
    if (names_another_op(op, obs["op"]) if local else not op_matches(op, obs["op"])):
        return Failure(f"{method}: {text}: expected out._op = {op!r}, got {obs['op']!r}",
                       operation.said("wrong_op") or "node.wrong_op", method=method, repro=structure_repro(case))
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
        mis = operation.said("wrong_slope")
    grads = ", ".join(f"{n}.grad = {g!r}" for n, g in zip("ab", p))
    return Failure(f"{method}: {text}, then {grads} (as if from another use), out.grad = {u!r} and one "
                   f"out._backward() call: expected {fmt_grads(expected)}; got {fmt_grads(got)}", mis, name="a",
                   method=method, repro=node_repro(case, expected), recovered=recovered)


def slip_spaces(operation: Operation) -> tuple[Space, ...]:
    """Where the recovery looks for a slip of what the operation's _backward adds to each operand (its declared
    slips; the output t computed from the forward)."""
    sl = operation.slips
    if sl is None:
        return ()
    return tuple(Space(f, sl.names, sl.functions, sl.domains, (("t", operation.forward),), sl.where, counts=sl.counts)
                 for f in operation.backward)


def recover_slope(case: Case, got: Sequence[float]) -> dict[str, str] | None:
    """The one slip of what a one-input operation's _backward adds that gives the learner's gradient (the preset
    gradient plus the slip), as the learner's formula beside the right one; None if none or several do."""
    spaces = slip_spaces(BY_SYMBOL[case["op"]])
    if len(spaces) == 2:
        return _recover_binary(case, got)
    if len(spaces) != 1 or len(got) != 1:
        return None
    space = spaces[0]
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
    spaces = slip_spaces(BY_SYMBOL[case["op"]])
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
    spaces = slip_spaces(BY_SYMBOL[case["op"]])
    if len(spaces) == 2:
        env = spaces[0].env(x=xs[ops[0]], y=xs[ops[1]], g=u)
        side = 1 if "`other.grad" in recovered.get("what", "") else 0
        adds = [evaluate(recovered["got"] if k == side else sp.formula, env) for k, sp in enumerate(spaces)]
        if any(a is None for a in adds):
            return False
        want = list(p)
        for k, leaf in enumerate(ops):
            want[leaf] += adds[k]  # type: ignore[operator]
        return all(close(g, w) for g, w in zip(got, want))
    if len(spaces) != 1 or len(got) != 1:
        return False
    v = evaluate(recovered["got"], spaces[0].env(x=xs[0], g=u, **({"k": case["k"]} if "k" in case else {})))
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
