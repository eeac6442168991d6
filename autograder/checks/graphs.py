"""Every graph the checks build, by key, and the known mistakes recognised on a whole graph.

The engine's graphs (notebooks 2 and 3: + and *, backward()'s order, equal data, a second graph) are declared here;
each operation's own come from its declaration (ops.py), and so do the mistakes recognised on them: the gradients a
wrong rule of the operation's `_backward` gives (or one that sets `grad = ...` where `+=` belongs), and the values a
wrong forward gives, each computed by running the graph on the grader's floats (`Floats`) with that one operation
swapped for its mistake. A graph's key travels in its cases; the judges find it here.
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Callable, Iterable, Sequence

from ..probes.graphs import compile_expression
from ..truth.expressions import Expr
from .ops import ADD, MUL, OPERATIONS, Operation, rule_on, value_on

ENGINE: dict[str, Expr] = {
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
    "shared": Expr(("x",), "y = x * x\nout = y * Value(2.0) + y * Value(3.0)", exact=lambda x: (10 * x,),
                   misconception="backward.topological_order"),
    "skip_mul": Expr(("x",), "y = x * x\nout = y + (y * Value(2.5)) * Value(1.5)", exact=lambda x: (2 * x * 4.75,),
                     misconception="backward.topological_order"),
    "diamond": Expr(("a", "b"), "c = a * b\nd = c + a\ne = c * d\nout = e + d * b", misconception="backward.topological_order"),
    # distinct nodes with equal data
    "twins": Expr(("a", "b", "c"), "m = a * b\nn = b * a\nout = m * c + n", exact=lambda a, b, c: (b * c + b, a * c + a, a * b),
                  misconception="eq.by_value"),
    "tied_leaves": Expr(("a", "b"), "a * b + b", tied=True, exact=lambda a, b: (b, a + 1), misconception="eq.by_value"),
    # an input of exactly 0: a slope written as out.data / self.data is right elsewhere and undefined there
    "mul_zero": Expr(("a", "b"), "a * b", upstream=3.0, zeros=(0,), exact=lambda a, b: (3 * b, 3 * a)),
    # backward() called on a second graph after the first: fresh nodes over the same leaves (the leaves' grads
    # zeroed, as a training loop does), and a node of the first graph reused (every grad of the first zeroed)
    "again_fresh": Expr(("a", "b"), "y = a * b\nout = y + a\nout1 = out\nout = a * b * Value(2.0) + b",
                        again="leaves", exact=lambda a, b: (2 * b, 2 * a + 1)),
    "again_reuse": Expr(("a", "b"), "y = a * b\nout = y + a\nout1 = out\nout = y * b + a",
                        again="all", exact=lambda a, b: (b * b + 1, 2 * a * b)),
    # a neuron-sized graph with every brick (notebook 4's all_bricks)
    "bricks": Expr(("a", "b", "c"), "n = a * b + c\nout = (2 * n).exp() / ((2 * n).exp() + Value(1.0)) - 0.5 * n ** 2",
                   high=1.2),
}

# Mistakes of the engine's graphs recognised from the numbers alone: graph -> [(misconception, wrong gradient)]
ENGINE_MISTAKES: dict[str, list[tuple[str, Callable[..., Sequence[float]]]]] = {
    "mul_up": [
        ("mul.unswapped", lambda a, b: (3 * a, 3 * b)),
        # the upstream `* 3.0` is a multiplication too, so an unswapped __mul__ also gets out.grad wrong
        ("mul.unswapped", lambda a, b: (a * a * b, b * a * b)),
    ],
    "mul": [("mul.unswapped", lambda a, b: (a, b))],
    "ab_plus_a": [
        ("node.assigns_instead_of_accumulating", lambda a, b: (b, a)),
        ("node.assigns_instead_of_accumulating", lambda a, b: (1.0, a)),
    ],
}
# The operation a wrong forward value of notebook 2's graphs is blamed on when no known mistake matches
FORWARD_OF: dict[str, Operation] = {"add": ADD, "add3": ADD, "mul": MUL, "mul3": MUL}

EXPRESSIONS: dict[str, Expr] = {**{k: e for op in OPERATIONS for k, e in (*op.graphs.items(), *op.more_graphs.items())},
                                **ENGINE}
# The operation (by its misconception prefix) each graph tests: a gradient that stayed 0 there is that operation's graph
# cut (the leaf is not reached through _prev) or its missing _backward, named with the method.
BRICK_OF: dict[str, str] = {k: op.kind for op in OPERATIONS for k in op.graphs}
_OWNER: dict[str, Operation] = {k: op for op in OPERATIONS for k in op.graphs}
if len(EXPRESSIONS) != sum(len(op.graphs) + len(op.more_graphs) for op in OPERATIONS) + len(ENGINE):
    raise ValueError("two graphs share a key")  # pragma: no cover - a catalogue bug


# ---------------------------------------------------------------- the grader's floats, one operation swapped

class _Node:
    """A float that remembers how it was made: its children and what its `_backward` adds to each."""

    __slots__ = ("adds", "assign", "data", "grad", "kids", "rank", "swapped")

    def __init__(self, data: float, kids: Sequence[_Node] = (), adds: Callable[[float], Sequence[float]] | None = None,
                 assign: Sequence[int] = (), swapped: bool = False) -> None:
        self.data, self.grad, self.kids, self.adds = float(data), 0.0, tuple(kids), adds
        self.assign, self.swapped, self.rank = frozenset(assign), swapped, next(_RANKS)

    def backward_step(self) -> None:
        if self.adds is None:
            return
        for i, (kid, v) in enumerate(zip(self.kids, self.adds(self.grad))):
            kid.grad = v if i in self.assign else kid.grad + v


_RANKS = iter(range(1 << 62))


@functools.lru_cache(maxsize=64)
def floats(kind: str = "", rule: tuple[str, ...] = (), value: str = "", assign: tuple[int, ...] = ()) -> type:
    """The grader's own engine on floats, every operation as declared, but the one of `kind`: its `_backward` adds
    `rule` (when given) and assigns where `assign` lists an operand, or its forward is `value`."""

    def number(v: object) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    def made(op: Operation) -> Callable[..., object]:
        mine = op.kind == kind
        forward = value_on(value) if mine and value else op.forward_on
        adds = rule_on(rule) if mine and rule else op.adds_on
        how = dict(assign=assign if mine else (), swapped=mine)

        def node(x: float, y: float | None, k: float | None, kids: Sequence[_Node]) -> _Node:
            t = forward(x, y, k)
            return Floats(t, kids, lambda g: adds(x, y, t, k, g), **how)

        if op.form == "unary":
            return lambda self: node(self.data, None, None, (self,))
        if op.form == "power":
            return lambda self, k: node(self.data, None, k, (self,)) if number(k) else NotImplemented

        def binary(self: _Node, other: object) -> object:
            if not isinstance(other, _Node):
                if not number(other):
                    return NotImplemented
                other = Floats(other)
            left, right = (other, self) if op.form == "reflected" else (self, other)
            return node(left.data, right.data, None, (left, right))

        return binary

    Floats = type("Floats", (_Node,), {op.method: made(op) for op in OPERATIONS})
    return Floats


def _backward(root: _Node) -> None:
    """Every node's step once, each after every node that uses it; of the nodes ready, the swapped operation's last
    (as the grader's backward() runs a learner's node as late as the graph allows)."""
    nodes, users, todo = {}, {}, [root]
    while todo:
        n = todo.pop()
        if id(n) in nodes:
            continue
        nodes[id(n)] = n
        for k in n.kids:
            users[id(k)] = users.get(id(k), 0) + 1
            todo.append(k)
    root.grad = 1.0
    ready = [(root.swapped, -root.rank, id(root))]
    while ready:
        node = nodes[heapq.heappop(ready)[2]]
        node.backward_step()
        for k in node.kids:
            users[id(k)] -= 1
            if users[id(k)] == 0:
                heapq.heappush(ready, (k.swapped, -k.rank, id(k)))


def run(expr: Expr, xs: Sequence[float], engine: type) -> tuple[float, list[float]]:
    """The graph's value and each leaf's gradient on the floats `engine`."""
    leaves = [engine(x) for x in xs]
    out = compile_expression(expr.params, expr.source, engine)(*leaves)
    _backward(out)
    return out.data, [leaf.grad for leaf in leaves]


def _variants(op: Operation) -> Iterable[tuple[str, dict]]:
    """Each known wrong `_backward` of the operation: its rules, then `grad = ...` on each operand, then on all."""
    for m in op.mistakes:
        for rule in m.rules:
            yield m.id, {"rule": rule}
    assigns = op.said("assigns") or "node.assigns_instead_of_accumulating"
    for which in ([(0,)] if op.arity == 1 else [(0,), (1,), (0, 1)]):
        yield assigns, {"assign": which}


@functools.cache
def gradient_mistakes(key: str) -> list[tuple[str, Callable[..., Sequence[float]]]]:
    """Mistakes recognised on graph `key` from its gradients alone: [(misconception, the gradients it gives)]."""
    op = _OWNER.get(key)
    if op is None:
        return ENGINE_MISTAKES.get(key, [])
    expr = EXPRESSIONS[key]
    return [(mis, functools.partial(_gradients, expr, floats(op.kind, **how))) for mis, how in _variants(op)]


@functools.cache
def value_mistakes(key: str) -> list[tuple[str, Callable[..., float]]]:
    """Mistakes recognised on graph `key` from its forward value alone: [(misconception, the value it gives)]."""
    op = _OWNER.get(key)
    if op is None:
        return []
    expr = EXPRESSIONS[key]
    return [(m.id, functools.partial(_value, expr, floats(op.kind, value=m.value))) for m in op.mistakes if m.value]


def _gradients(expr: Expr, engine: type, *xs: float) -> list[float]:
    try:
        return run(expr, xs, engine)[1]
    except (ArithmeticError, ValueError):
        return [math.nan] * len(xs)


def _value(expr: Expr, engine: type, *xs: float) -> float:
    try:
        return run(expr, xs, engine)[0]
    except (ArithmeticError, ValueError):
        return math.nan
