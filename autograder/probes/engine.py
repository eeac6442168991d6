"""Probes of the engine: graphs built from the learner's Value, read back as plain numbers.

Every case is self-contained (the expression's text, the inputs, the graph's shape); nothing here knows an answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .graphs import BUILT, compile_expression, leaf, make_node, op_text, operand_indices, walk_graph
from .op_table import NODE_CALLS
from .safe import LearnerError, LearnerTimeout, describe, read_number, short_repr

Case = dict[str, Any]
Observation = dict[str, Any]
Namespace = Any


def probe_expression(ns: Namespace, case: Case) -> Observation:
    """Build the expression from fresh leaves `Value(x)`, run backward, read plain numbers."""
    value = ns["Value"]
    params, source = case["params"], case["source"]
    leaves = [leaf(value, x) for x in case["inputs"]]
    out = compile_expression(params, source, value)(*leaves)
    if not hasattr(out, "data"):
        raise LearnerError("expression_not_a_value", line=source.splitlines()[-1], kind=type(out).__name__,
                           shown=short_repr(out))
    obs: Observation = {"data": read_number(out.data, "out.data")}
    if case["backward"]:
        out.backward()
        obs["root_grad"] = read_number(out.grad, "out.grad after backward()")
        obs["grads"] = [read_number(x.grad, f"{p}.grad") for p, x in zip(params, leaves)]
        try:  # which leaves the graph reaches through _prev (a cut one does not); unknown when _prev is odd
            nodes, _ = walk_graph(out, 10_000)
            ids = {id(n) for n in nodes}
            obs["reaches"] = [id(x) in ids for x in leaves]
            obs["merged"] = merged(nodes)
        except LearnerError:
            obs["reaches"] = None
    return obs


def merged(nodes: list[Any]) -> list[float]:
    """The data of each node the grader built that the graph below `out` lost to a distinct node of the graph with
    equal data that the learner's __eq__ calls equal: a set (a `_prev`) kept one of the two."""
    reached = {id(n) for n in nodes}
    built = [n for _, n in BUILT.rank.values()]
    kept = [n for n in nodes if BUILT.rank_of(n) is not None]
    lost = []
    for node in built:
        if id(node) in reached:
            continue
        try:
            data = read_number(node.data, "data")
            if any(other is not node and read_number(other.data, "data") == data and (other == node) is True
                   for other in kept):
                lost.append(data)
        except LearnerTimeout:
            raise
        except Exception:  # the learner's __eq__ may raise anything: then nothing is claimed
            continue
    return lost[:5]


def probe_node(ns: Namespace, case: Case) -> Observation:
    """One operation on fresh leaves, read straight off the result: data, children, op; then, when the case
    presets gradients, one `out._backward()` call alone (where `=` instead of `+=` shows)."""
    value = ns["Value"]
    leaves = [leaf(value, x) for x in case["inputs"]]
    operands = [leaves[i] for i in case["operands"]]  # `a + a` uses one leaf twice
    out = NODE_CALLS[case["op"]](operands[0], operands[-1], case.get("k"))
    if not hasattr(out, "data"):
        raise LearnerError("node_not_a_value", op=case["op"], kind=type(out).__name__, shown=short_repr(out))
    obs: Observation = {"data": read_number(out.data, "out.data"), "op": op_text(out),
                        "children": operand_indices(out, leaves), "is_leaf": [out is x for x in leaves]}
    if not obs["children"] or -1 in obs["children"]:  # composed of other nodes, or cut: does it reach its operands?
        nodes, _ = walk_graph(out, 1000)
        ids = {id(n) for n in nodes}
        obs["reaches"] = [id(x) in ids for x in leaves]
    if case.get("upstream") is not None:
        for x, g in zip(leaves, case["preset"]):
            x.grad = g
        out.grad = case["upstream"]
        if getattr(out, "_backward", None) is None:
            raise LearnerError("backward_is_none")
        out._backward()
        obs["grads"] = [read_number(x.grad, f"{p}.grad") for p, x in zip("ab", leaves)]
    return obs


def probe_backward(ns: Namespace, case: Case) -> Observation:
    """backward() alone: nodes made with the learner's constructor but carrying the grader's own recording
    `_backward`s (each adds weight * its grad to its children), so the learner's operators play no part.

    Nodes are listed children first; `edges` holds [parent, child, weight]; the last node is the root."""
    value = ns["Value"]
    kids: dict[int, list[int]] = {}
    for p, c, _ in case["edges"]:
        kids.setdefault(p, []).append(c)
    nodes: list[Any] = []
    for i, x in enumerate(case["data"]):
        nodes.append(make_node(value, x, [nodes[c] for c in kids.get(i, [])], "rec"))
    calls: list[int] = []
    grad_at_call: list[float | None] = [None] * len(nodes)
    weights = {(p, c): w for p, c, w in case["edges"]}

    def recorder(i: int) -> Callable[[], None]:
        def _backward() -> None:
            if len(calls) < 1000:
                calls.append(i)
            node = nodes[i]
            if grad_at_call[i] is None:
                grad_at_call[i] = read_number(node.grad, f"the grad of node {i}")
            for c in kids.get(i, []):
                nodes[c].grad = nodes[c].grad + weights[(i, c)] * node.grad

        return _backward

    for i, node in enumerate(nodes):
        try:
            node._backward = recorder(i)
        except (AttributeError, TypeError) as exc:
            raise LearnerError("backward_not_assignable", error=describe(exc)) from None
    nodes[-1].backward()
    return {"calls": calls, "grad_at_call": grad_at_call,
            "grads": [read_number(n.grad, "out.grad" if n is nodes[-1] else f"the grad of node {i}")
                      for i, n in enumerate(nodes)]}


def probe_again(ns: Namespace, case: Case) -> Observation:
    """Two graphs over the same leaves, backward() on each in turn: the first (`out1` in the source), then the
    second (`out`); between the calls the grads are zeroed as a training loop does (the leaves', or with
    `zero: "all"` every node of the first graph, when the second reuses one of its nodes). Both graphs stay alive."""
    value = ns["Value"]
    params = case["params"]
    leaves = [value(x) for x in case["inputs"]]
    first, out = compile_expression(params, case["source"] + "\nout = (out1, out)", value)(*leaves)
    for o in (first, out):
        if not hasattr(o, "data"):
            raise LearnerError("expression_not_a_value", line=case["source"].splitlines()[-1], kind=type(o).__name__,
                               shown=short_repr(o))
    first.backward()
    nodes = walk_graph(first, 10_000)[0] if case.get("zero") == "all" else leaves
    for node in nodes:
        node.grad = 0.0
    out.backward()
    return {"data": read_number(out.data, "out.data"), "root_grad": read_number(out.grad, "out.grad after backward()"),
            "grads": [read_number(leaf.grad, f"{p}.grad") for p, leaf in zip(params, leaves)]}


def probe_backward_again(ns: Namespace, case: Case) -> Observation:
    """backward() called on two graphs in turn, with the grader's own recording `_backward`s (as in probe_backward):
    nodes are listed children first, `edges` hold [parent, child, weight] and `roots` the two roots; between the calls
    the grads of the nodes in `zero` are set to 0. Which nodes' _backward each call ran, by index."""
    value = ns["Value"]
    kids: dict[int, list[int]] = {}
    for p, c, _ in case["edges"]:
        kids.setdefault(p, []).append(c)
    nodes: list[Any] = []
    for i, x in enumerate(case["data"]):
        nodes.append(make_node(value, x, [nodes[c] for c in kids.get(i, [])], "rec"))
    weights = {(p, c): w for p, c, w in case["edges"]}
    calls: list[list[int]] = [[], []]
    phase = [0]

    def recorder(i: int) -> Callable[[], None]:
        def _backward() -> None:
            if len(calls[phase[0]]) < 1000:
                calls[phase[0]].append(i)
            for c in kids.get(i, []):
                nodes[c].grad = nodes[c].grad + weights[(i, c)] * nodes[i].grad

        return _backward

    for i, node in enumerate(nodes):
        try:
            node._backward = recorder(i)
        except (AttributeError, TypeError) as exc:
            raise LearnerError("backward_not_assignable", error=describe(exc)) from None
    first, second = case["roots"]
    nodes[first].backward()
    for i in case["zero"]:
        nodes[i].grad = 0.0
    phase[0] = 1
    nodes[second].backward()
    return {"calls": calls, "grads": [read_number(n.grad, f"the grad of node {i}") for i, n in enumerate(nodes)]}


LADDER_RUNGS = 12


def probe_ladder(ns: Namespace, case: Case) -> Observation:
    """y = y * 0.5 + y * 0.5 repeated; count each node's _backward calls during one backward()."""
    value = ns["Value"]
    x = leaf(value, case["x"])
    y = x
    for _ in range(case.get("rungs", LADDER_RUNGS)):
        y = y * leaf(value, 0.5) + y * leaf(value, 0.5)  # Value constants: number coercion is not what is tested
    out = y * leaf(value, 3.0)
    nodes, kids = walk_graph(out)
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
            raise LearnerError("backward_not_wrappable", error=describe(exc)) from None
    out.backward()
    inner = [id(n) for n in nodes if kids[id(n)]]
    leaves = [id(n) for n in nodes if not kids[id(n)]]
    return {
        "inner_calls": [calls.get(i, 0) for i in inner],
        "leaf_calls": [calls.get(i, 0) for i in leaves],
        "grad": read_number(x.grad, "x.grad"),
        "data": read_number(out.data, "out.data"),
    }


def probe_seed(ns: Namespace, case: Case) -> Observation:
    """The root's grad after backward(), on a graph whose gradients start at zero."""
    value = ns["Value"]
    a, b = leaf(value, case["inputs"][0]), leaf(value, case["inputs"][1])
    out = a * b
    out.backward()
    return {"root_grad": read_number(out.grad, "out.grad"), "a_grad": read_number(a.grad, "a.grad")}


def probe_twins(ns: Namespace, case: Case) -> Observation:
    """Two distinct leaves with equal data: do a set and a dict keep them apart?"""
    a, b = ns["Value"](case["x"]), ns["Value"](case["x"])
    return {"in_set": len({a, b}), "in_dict": len({a: 1, b: 2})}


def probe_repr(ns: Namespace, case: Case) -> Observation:
    """repr() of a fresh leaf."""
    text = repr(ns["Value"](case["x"]))
    if not isinstance(text, str):  # pragma: no cover - repr() itself enforces str
        raise LearnerError("repr_not_str")
    return {"repr": str.__str__(text)[:500]}
