"""Walking and building graphs of the learner's Values, by identity, without trusting what they hold.

Every walk is in an order fixed by how the grader built the graph, never by id() or a set's order: the nodes the
grader makes (`make_node`, `leaf`) are recorded with their children in the order given, and their `_prev`, when the
learner's Values keep a set there, is a set that iterates in that order too (`OrderedSet`); the children of the
learner's own nodes are put in order by what the grader recorded of them, then by data and `_op`. So a graph is
walked the same way on every run, whatever PYTHONHASHSEED and wherever the allocator puts the nodes.
"""

from __future__ import annotations

import functools
import heapq
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
    scope: dict[str, Any] = {"Value": value if value is None else lambda data: leaf(value, data)}
    exec(_compiled(tuple(params), source), scope)
    return scope["_f"]


@functools.lru_cache(maxsize=256)
def _compiled(params: tuple[str, ...], source: str) -> Any:
    for p in params:
        if not p.isidentifier():
            raise ValueError(f"bad parameter name {p!r}")
    code = f"def _f({', '.join(params)}):\n{textwrap.indent(source, '    ')}\n    return out\n"
    return compile(code, f"{EXPRESSION_FILE} {source!r}>", "exec")


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


class _InOrder:
    """A set that iterates in the order the grader gave its items (of items the set holds as equal, the first, as
    set() keeps); once the learner's code changes it, in the set's own order."""

    _order: list[Any] | None

    def _keep_order(self, items: list[Any]) -> None:
        if len(self) == len(items):  # type: ignore[arg-type]  # no two items equal: set() kept them all
            self._order = items
            return
        seen: set[Any] = set()
        order = []
        for x in items:  # what set() keeps: the first of items equal under the learner's __eq__/__hash__
            if x not in seen:
                seen.add(x)
                order.append(x)
        self._order = order

    def __iter__(self) -> Any:
        order = getattr(self, "_order", None)
        if order is None or len(order) != len(self):  # type: ignore[arg-type]
            return super().__iter__()  # type: ignore[misc]
        return iter(order)


class OrderedSet(_InOrder, set):  # type: ignore[type-arg]
    """`set` for the `_prev` of a node the grader builds, iterating in the grader's order."""

    def __init__(self, items: Sequence[Any] = ()) -> None:
        items = list(items)
        set.__init__(self, items)
        self._keep_order(items)


def _forgets_order(name: str) -> Callable[..., Any]:
    method = getattr(set, name)

    def changed(self: OrderedSet, *args: Any) -> Any:
        self._order = None
        return method(self, *args)

    changed.__name__ = name
    return changed


for _name in ("add", "discard", "remove", "pop", "clear", "update", "difference_update", "intersection_update",
              "symmetric_difference_update", "__ior__", "__iand__", "__isub__", "__ixor__"):
    setattr(OrderedSet, _name, _forgets_order(_name))


class OrderedFrozenSet(_InOrder, frozenset):  # type: ignore[type-arg]
    """`frozenset` for the `_prev` of a node the grader builds, iterating in the grader's order."""

    def __new__(cls, items: Sequence[Any] = ()) -> OrderedFrozenSet:
        items = list(items)
        made = super().__new__(cls, items)
        made._keep_order(items)
        return made


_ORDERED = {set: OrderedSet, frozenset: OrderedFrozenSet, tuple: tuple, list: list}


class Built:
    """What the grader built during one observation: each node's rank (the order it was made in) and, for the nodes
    it made itself, their children in the order given. Holding the objects keeps their ids unique meanwhile."""

    def __init__(self) -> None:
        self.rank: dict[int, tuple[int, Any]] = {}
        self.kids: dict[int, list[Any]] = {}

    def add(self, node: Any, kids: Sequence[Any] | None = None) -> None:
        """Record a node the grader made (with its children), or a leaf."""
        self.rank.setdefault(id(node), (len(self.rank), node))
        if kids is not None:
            self.kids[id(node)] = list(kids)

    def rank_of(self, node: Any) -> int | None:
        entry = self.rank.get(id(node))
        return entry[0] if entry is not None and entry[1] is node else None


BUILT = Built()  # the current observation's record (probes.observe starts a fresh one for every case)


def leaf(value: Any, data: float) -> Any:
    """`Value(data)`, recorded as made by the grader."""
    node = value(data)
    BUILT.add(node)
    return node


def make_node(value: Any, data: float, kids: Sequence[Any], op: str) -> Any:
    """A node with these children, through any constructor that takes `data` first: `Value(data)`, then `_prev`
    (of the type a leaf's `_prev` has, a set iterating in the order given) and `_op` set as attributes; the
    positional `Value(data, kids, op)` only where the attributes cannot be set. Recorded as made by the grader."""
    node = value(data)
    if not hasattr(node, "_prev"):
        raise LearnerError("missing_attribute", attr="_prev")
    kind = type(node._prev)
    try:
        node._prev = _ORDERED[kind](kids) if kind in _ORDERED else tuple(kids)
        try:
            node._op = op
        except (AttributeError, TypeError):
            pass
    except (AttributeError, TypeError):
        node = value(data, tuple(kids), op)
    BUILT.add(node, kids)
    return node


def _sort_key(node: Any) -> tuple[int, float, str]:
    """Where a child the grader did not order itself goes among its siblings: nodes the grader made first, in the
    order it made them, then by data and `_op` (never by id())."""
    rank = BUILT.rank_of(node)
    try:
        data = read_number(getattr(node, "data", None), "data")
    except LearnerError:
        data = float("inf")
    return (rank if rank is not None else len(BUILT.rank) + 1, data if data == data else float("inf"),
            op_text(node) or "")


def ordered_children(node: Any, limit: int) -> list[Any]:
    """A node's children in a fixed order: as the grader gave them, for a node it made; else `_prev`, sorted."""
    key = id(node)
    entry = BUILT.rank.get(key)  # BUILT.rank_of, inlined: this runs once per node of every walk
    if entry is not None and entry[1] is node:
        kids = BUILT.kids.get(key)
        if kids is not None:
            unique = {id(k): k for k in kids}  # a * a: one child, walked once
            return list(unique.values())
    kids = children(node, limit)
    return sorted(kids, key=_sort_key)


def walk_graph(root: Any, limit: int = 100_000) -> tuple[list[Any], dict[int, list[Any]]]:
    """Every node reachable through `_prev`, by identity (never by the learner's __eq__/__hash__), and its children,
    in a fixed order (see the module's docstring)."""
    seen: dict[int, Any] = {}
    kids_of: dict[int, list[Any]] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        key = id(node)
        if key in seen:
            continue
        seen[key] = node
        if len(seen) > limit:
            raise LearnerError("graph_too_big", limit=limit)
        kids = ordered_children(node, limit)
        kids_of[key] = kids
        stack.extend(reversed(kids))
    return list(seen.values()), kids_of


def backward_order(root: Any, limit: int = 100_000) -> list[Any]:
    """Every node reachable from `root` in an order to call their `_backward` in: each after every node that uses
    it (a reverse topological order), fixed by how the graph was built; of the nodes ready at a time, the grader's own
    go first, so a learner's node runs as late as the graph allows (a `_backward` that sets `grad = ...` where `+=`
    belongs meets a child that already holds a gradient wherever one can)."""
    nodes, kids = walk_graph(root, limit)
    users = dict.fromkeys(kids, 0)  # kids holds every node's id, in the walk's order
    for ks in kids.values():
        for k in ks:
            users[id(k)] += 1
    # a node's place: the grader's own nodes first, then the walk's order (one int: (grader?, i) as a number)
    made, n = BUILT.kids, len(nodes)
    place = {key: i if key in made else n + i for i, key in enumerate(kids)}
    by_place = nodes + nodes  # by_place[place[id(x)]] is x
    ready = [place[id(root)]] if users[id(root)] == 0 else []  # a root that a cycle leads back to runs nothing
    order = []
    pop, push = heapq.heappop, heapq.heappush
    while ready:
        node = by_place[pop(ready)]
        order.append(node)
        for k in kids[id(node)]:
            key = id(k)
            users[key] -= 1
            if users[key] == 0:
                push(ready, place[key])
    return order


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
