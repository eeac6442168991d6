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
            raise LearnerError(MISSING_ATTRIBUTE.format(attr="_prev")) from None
        raise LearnerError(f"a child in some node's _prev is a {type(node).__name__} ({short_repr(node)}), not a Value: "
                           "_children must hold the operand Values") from None
    try:
        one_shot = iter(prev) is prev
    except TypeError:
        raise LearnerError(f"_prev is a {type(prev).__name__}, which cannot be walked: store the children in a set, "
                           "tuple or list") from None
    if one_shot:
        raise LearnerError(f"_prev is a {type(prev).__name__}, an iterator that can be walked only once: "
                           "store the children in a set, tuple or list")
    kids = list(itertools.islice(prev, limit + 1))  # never list() an endless learner collection
    if len(kids) > limit:
        raise LearnerError(f"a node's _prev holds more than {limit} children: does _prev hold only the operands?")
    return kids


API_ATTRIBUTES = ("data", "grad", "_prev", "_op", "_backward")


def make_node(value: Any, data: float, kids: Sequence[Any], op: str) -> Any:
    """A node with these children, through any constructor that takes `data` first: `Value(data)`, then `_prev`
    (of the type a leaf's `_prev` has) and `_op` set as attributes; the positional `Value(data, kids, op)` only
    where the attributes cannot be set."""
    node = value(data)
    if not hasattr(node, "_prev"):
        raise LearnerError(MISSING_ATTRIBUTE.format(attr="_prev"))
    kind = type(node._prev)
    try:
        node._prev = kind(kids) if kind in (set, frozenset, tuple, list) else tuple(kids)
        with contextlib.suppress(AttributeError, TypeError):
            node._op = op
        return node
    except (AttributeError, TypeError):
        return value(data, tuple(kids), op)


MISSING_ATTRIBUTE = ("your Value has no `{attr}`: the fixed API gives every Value `data`, `grad`, `_prev`, `_op` and "
                     "`_backward` (set them in __init__)")


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
            raise LearnerError(f"the graph has more than {limit} nodes: does _prev hold only the operands?")
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
        raise LearnerError(f"{what} returned a {type(out).__name__} of {len(out)}; with one output neuron it "
                           "should return the Value itself")
    if not hasattr(out, "data"):
        raise LearnerError(f"{what} returned a {type(out).__name__} ({short_repr(out)}), expected a Value")
    return read_number(out.data, f"{what}.data")
