"""The bricks of notebook 4: each operation's checks, made from its declaration (ops.py: its local rule alone, its
graphs), and the check of every brick in one graph."""

from __future__ import annotations

from .base import Check
from .common import V, expression_check, judge_node, local_cases, node_during, node_fits
from .ops import OPERATIONS, Brick, Operation
from .registry import Topic

TOPIC = Topic()
register = TOPIC.add


def local_check(op: Operation) -> Check:
    """The check of an operation's local rule alone (ops.Local): one node, preset grads, one out._backward() call."""
    assert op.local is not None
    return Check(op.local.name, (op.target,), op.local.description, local_cases(op), judge_node, group=op.local.group,
                 during=node_during, fits=node_fits)


def brick_check(op: Operation, brick: Brick) -> Check:
    """An expression check of notebook 4 that runs the learner's brick alone: every other operation of its graphs
    (an upstream factor `* Value(3.0)`, a leaf reused through `+`, the `*` of `self * -1`) and backward() are the
    grader's (probes/scaffold.py), but for the `companions` of its exercise the learner's class defines. When it
    fails, the operation's local check (or `isolate`) pins the failure on its local rule."""
    isolate = brick.isolate if brick.isolate is not None else ((op.local.name,) if op.local else ())
    targets = (op.target, *(f"{V}.{m}" for m in brick.also))
    extra = local_cases(op) if brick.local and op.local else None
    return expression_check(brick.name, targets, brick.description, brick.keys, points=brick.points, isolate=isolate,
                            group=brick.group, companions=brick.companions, extra=extra)


BRICKS = [op for op in OPERATIONS if op.notebook == 4]
for _op in BRICKS:
    if _op.local:
        register(local_check(_op))
for _op in BRICKS:
    if _op.check:
        register(brick_check(_op, _op.check))
# every brick in one graph: a check of the whole engine (the CLI's), pinned on the first brick whose own check fails
register(expression_check("all_bricks", (f"{V}.exp", f"{V}.__truediv__", f"{V}.__pow__", f"{V}.__sub__", f"{V}.__rmul__"),
                          "every brick together in one graph", ["bricks"], isolate=("exp_backward", "div_backward", "pow_backward")))
