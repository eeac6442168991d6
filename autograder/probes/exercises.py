"""Probes of the single-notebook exercises: the learner's functions called on inputs the case carries."""

from __future__ import annotations

import math
from typing import Any

from .graphs import compile_expression, leaf, op_text, walk_graph
from .safe import LearnerError, describe, read_number, short_repr

Case = dict[str, Any]
Observation = dict[str, Any]
Namespace = Any

FUNCTIONS = {"poly": lambda x: 3 * x**2 - 4 * x + 5, "sin": math.sin, "exp": math.exp}


def probe_derivative(ns: Namespace, case: Case) -> Observation:
    """The learner's numerical_derivative on known functions; and, where the case asks, at a wide step `h` passed
    by keyword (formulas that agree at a tiny step differ there; None where that call fails: evidence, not a verdict)."""
    d = ns["numerical_derivative"]
    obs: Observation = {"values": [read_number(d(FUNCTIONS[k], x), f"numerical_derivative({k}, {x})")
                                   for k, x in case["points"]]}
    if case.get("wide"):
        wide: list[float | None] = []
        for k, x in case["points"]:
            try:
                wide.append(read_number(d(FUNCTIONS[k], x, h=case["wide"]), "numerical_derivative at a wide step"))
            except Exception:
                wide.append(None)
        obs["wide"] = wide
    return obs


def probe_relative_error(ns: Namespace, case: Case) -> Observation:
    """The learner's relative_error on pairs (one call each; an exception on one pair is recorded, not fatal)."""
    r = ns["relative_error"]
    values: list[float | str] = []
    for a, b in case["pairs"]:
        try:
            values.append(read_number(r(a, b), f"relative_error({a}, {b})"))
        except ZeroDivisionError:
            values.append("ZeroDivisionError")
    return {"values": values}


def probe_manual(ns: Namespace, case: Case) -> Observation:
    """The data and hand-filled grads of the nodes the case names (a, b, c, e = a*b, d = e + c, f and L = d * f)."""
    out: Observation = {}
    for n in case["nodes"]:
        node = ns.get(n)
        if node is None or not hasattr(node, "data"):
            raise LearnerError("manual_node_missing", name=n)
        out[n] = [read_number(node.data, f"{n}.data"), read_number(node.grad, f"{n}.grad")]
    return out


def probe_tanh_bricks(ns: Namespace, case: Case) -> Observation:
    """The learner's tanh_from_bricks(Value(x)): value, gradient, and whether it really is made of bricks."""
    results: list[dict[str, Any]] = []
    for x in case["inputs"]:
        try:
            results.append(_tanh_bricks_at(ns, x))
        except Exception as exc:
            if not results:
                raise  # nothing to judge: the error is the observation
            # judged after the inputs that worked
            results.append(exc.as_data() if isinstance(exc, LearnerError)
                           else {"error": "raised", "fields": {"exception": describe(exc), "at": ""}})
            break
    return {"results": results}


def _tanh_bricks_at(ns: Namespace, x: float) -> dict[str, Any]:
    """Value, gradient, size and ops of the learner's tanh_from_bricks at one input."""
    x_leaf = leaf(ns["Value"], x)
    out = ns["tanh_from_bricks"](x_leaf)
    if not hasattr(out, "data"):
        raise LearnerError("bricks_not_a_value", x=repr(x), kind=type(out).__name__, shown=short_repr(out))
    nodes, _ = walk_graph(out)
    ops = [op_text(n) for n in nodes]
    data = read_number(out.data, "tanh_from_bricks(x).data")
    out.backward()
    return {"data": data, "grad": read_number(x_leaf.grad, "x.grad"), "nodes": len(nodes), "uses_tanh": "tanh" in ops,
            "reaches": any(n is x_leaf for n in nodes)}


def probe_grads_of(ns: Namespace, case: Case) -> Observation:
    """The learner's grads_of(f, inputs), called twice on the same inputs (a second call must not pile up)."""
    f = compile_expression(case["params"], case["source"], ns.get("Value"))
    calls = []
    for _ in range(2):
        got = ns["grads_of"](f, list(case["inputs"]))
        if not isinstance(got, (list, tuple)):
            raise LearnerError("grads_of_not_a_list", kind=type(got).__name__, shown=short_repr(got))
        calls.append([read_number(g, f"grads_of(...)[{i}]") for i, g in enumerate(list(got)[:20])])
    return {"calls": calls}
