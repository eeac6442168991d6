"""Walking and building graphs of the learner's Values, by identity, without trusting what they hold."""

from __future__ import annotations

import contextlib
import itertools
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

from .safe import LearnerError, read_number, short_repr

EXPRESSION_FILE = "<expression"  # the filename prefix of expression code, so blame skips it


def compile_expression(params: Sequence[str], source: str, value: Any = None) -> Callable[..., Any]:
    """Statements assigning `out` as a function of its leaves (the same text runs on floats and on Values).

    `Value` in the text is `value`: constants are written `Value(3.0)` where number coercion is not what is tested,
    so an engine whose operators take only Values is judged on the operators alone."""
    for p in params:
        if not p.isidentifier():
            raise ValueError(f"bad parameter name {p!r}")
    code = f"def _f({', '.join(params)}):\n{textwrap.indent(source, '    ')}\n    return out\n"
    scope: dict[str, Any] = {"Value": value}
    exec(compile(code, f"{EXPRESSION_FILE} {source!r}>", "exec"), scope)
    return scope["_f"]


def children(node: Any, limit: int) -> list[Any]:
    """A node's `_prev` as a list, refusing one-shot iterators, non-Values and endless collections."""
    try:
        prev = node._prev
    except AttributeError:
        if hasattr(node, "data") and hasattr(node, "grad"):  # a Value after all, without the attribute
            raise LearnerError("missing_attribute", attr="_prev") from None
        raise LearnerError("child_not_a_value", kind=type(node).__name__, shown=short_repr(node)) from None
    try:
        one_shot = iter(prev) is prev
    except TypeError:
        raise LearnerError("prev_not_walkable", kind=type(prev).__name__) from None
    if one_shot:
        raise LearnerError("prev_one_shot", kind=type(prev).__name__)
    kids = list(itertools.islice(prev, limit + 1))  # never list() an endless learner collection
    if len(kids) > limit:
        raise LearnerError("prev_too_many", limit=limit)
    return kids


API_ATTRIBUTES = ("data", "grad", "_prev", "_op", "_backward")


def make_node(value: Any, data: float, kids: Sequence[Any], op: str) -> Any:
    """A node with these children, through any constructor that takes `data` first: `Value(data)`, then `_prev`
    (of the type a leaf's `_prev` has) and `_op` set as attributes; the positional `Value(data, kids, op)` only
    where the attributes cannot be set."""
    node = value(data)
    if not hasattr(node, "_prev"):
        raise LearnerError("missing_attribute", attr="_prev")
    kind = type(node._prev)
    try:
        node._prev = kind(kids) if kind in (set, frozenset, tuple, list) else tuple(kids)
        with contextlib.suppress(AttributeError, TypeError):
            node._op = op
        return node
    except (AttributeError, TypeError):
        return value(data, tuple(kids), op)


def walk_graph(root: Any, limit: int = 100_000) -> tuple[list[Any], dict[int, list[Any]]]:
    """Every node reachable through `_prev`, by identity (never by the learner's __eq__/__hash__), and its children."""
    seen: dict[int, Any] = {}
    kids_of: dict[int, list[Any]] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        if len(seen) > limit:
            raise LearnerError("graph_too_big", limit=limit)
        kids = children(node, limit)
        kids_of[id(node)] = kids
        stack.extend(kids)
    return list(seen.values()), kids_of


def reachable(root: Any, targets: Sequence[Any], limit: int = 10_000) -> int:
    """How many of `targets` (by identity) the graph below `root` reaches."""
    nodes, _ = walk_graph(root, limit)
    ids = {id(n) for n in nodes}
    return sum(id(t) in ids for t in targets)


def op_text(node: Any) -> str | None:
    """The node's `_op` as a short plain string, or None when it has none or it is not a string."""
    op = getattr(node, "_op", None)
    return str.__str__(op)[:40] if isinstance(op, str) else None


def operand_indices(node: Any, operands: Sequence[Any]) -> list[int]:
    """For each child of the node, the index of the operand it is (by identity), or -1 for anything else."""
    return [next((i for i, o in enumerate(operands) if o is k), -1) for k in children(node, 100_000)]


def set_parameters(model: Any, weights: Sequence[float]) -> list[Any]:
    """The model's parameters() as a list, their data set to `weights` when the counts match."""
    params = list(itertools.islice(model.parameters(), 10_000))
    if len(params) != len(weights):
        return params
    for p, w in zip(params, weights):
        p.data = w
    return params


def read_output(out: Any, what: str) -> float:
    """The data of one output Value, or LearnerError when it is a list or not a Value."""
    if isinstance(out, (list, tuple)):
        raise LearnerError("one_output_in_a_list", what=what, kind=type(out).__name__, n=len(out))
    if not hasattr(out, "data"):
        raise LearnerError("output_not_a_value", what=what, kind=type(out).__name__, shown=short_repr(out))
    return read_number(out.data, f"{what}.data")
