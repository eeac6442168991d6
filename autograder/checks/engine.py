"""The engine: Value's repr, + and *, their local rules, and backward() (notebooks 2 and 3)."""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from ..settings import Tolerance
from ..truth.numeric import generic_inputs, grad_close
from . import messages as msg
from .base import Case, Check, Failure, Observation
from .bricks import local_check
from .common import (
    ADD,
    BWD,
    MUL,
    V,
    during_by_probe,
    expression_case,
    expression_check,
    expression_during,
    judge_by_probe,
    judge_expression,
    node_case,
)
from .ops import ADD as ADD_OP
from .ops import MUL as MUL_OP
from .registry import Topic

TOPIC = Topic()
register = TOPIC.add


# ---------------------------------------------------------------- repr (notebook 2)

def repr_cases(rng: random.Random, hidden: bool) -> list[Case]:
    """Leaf values."""
    return [{"probe": "repr", "x": x} for x in generic_inputs(rng, 2)]


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


def judge_repr(case: Case, obs: Observation, tol: Tolerance) -> Failure | None:
    """The repr shows the data."""
    text = obs["repr"]
    repro = msg.repro_lines([f"print(repr(Value({case['x']!r})))  # expected something like Value(data={case['x']!r})"])
    if " object at 0x" in text:
        return Failure(f"Value.__repr__: repr(Value({case['x']!r})) is {text!r}: define __repr__ to show the data",
                       "repr.default", repro=repro)
    if not shows_number(text, case["x"]):
        return Failure(f"Value.__repr__: repr(Value({case['x']!r})) is {text!r}, which does not show the data "
                       f"{case['x']!r}", "repr.hides_data", repro=repro)
    return None


register(Check("value_repr", (f"{V}.__repr__",), "repr shows the data", repr_cases, judge_repr,
               during=lambda case: f"\n  while calling repr(Value({case['x']!r}))"))


# ---------------------------------------------------------------- + and * (notebook 2: values and structure)

def structure_cases(op: str) -> Callable[[random.Random, bool], list[Case]]:
    """The node itself: a new Value whose _prev holds exactly the operands and whose _op names the operation."""

    def cases(rng: random.Random, hidden: bool) -> list[Case]:
        return [node_case(op, rng), node_case(op, rng, [0, 0])]

    return cases


ADD_FORWARD = register(expression_check("add_forward", (ADD,), "a + b computes the sum and remembers a, b and '+'",
                                        ["add", "add3"], backward=False, extra=structure_cases("+")))
MUL_FORWARD = register(expression_check("mul_forward", (MUL,), "a * b computes the product and remembers a, b and '*'",
                                        ["mul", "mul3"], backward=False, extra=structure_cases("*")))


# ---------------------------------------------------------------- local rules (notebook 3), from their declarations

register(local_check(ADD_OP))
register(local_check(MUL_OP))


# ---------------------------------------------------------------- backward() alone (isolated: the grader's own _backward)

# Nodes listed children first; [parent, child] edges; the root is the last node. The shapes hold a shared node, a skip
# connection whose two paths differ in length, and a leaf used by two nodes.
SHAPES = [
    # a diamond first: whichever child a depth-first walk takes first, its pre-order lists the shared node 0 before
    # its other parent, so a pre-order list walked reversed is told apart from a post-order list walked forwards
    [[1, 0], [2, 0], [3, 1], [3, 2]],
    [[2, 0], [2, 1], [3, 2], [4, 2], [4, 3], [5, 4], [5, 0]],
    [[2, 0], [3, 2], [3, 1], [4, 3], [5, 3], [5, 4], [6, 5], [6, 2], [6, 1]],
]


# Two graphs, called in turn: the first is 0, 1 -> 2 -> 3; the second reuses node 2 (4 = 2 with 0, 5 = 4 with 1), so
# that a list kept from the first call runs node 3 again, and a visited mark kept from it skips node 2.
AGAIN = {"edges": [[2, 0], [2, 1], [3, 2], [3, 1], [4, 2], [4, 0], [5, 4], [5, 1]], "roots": [3, 5]}


def backward_cases(rng: random.Random, hidden: bool) -> list[Case]:
    """Graphs of distinct data whose edges carry distinct weights; last, backward() on two graphs in turn."""
    out = []
    for shape in SHAPES if hidden else SHAPES[:2]:
        n = max(p for p, _ in shape) + 1
        data = generic_inputs(rng, n, 0.3, 2.5)
        weights = generic_inputs(rng, len(shape), 0.3, 2.5)
        out.append({"probe": "backward", "data": data, "edges": [[p, c, w] for (p, c), w in zip(shape, weights)]})
    edges = AGAIN["edges"]
    weights = generic_inputs(rng, len(edges), 0.3, 2.5)
    out.append({"probe": "backward_again", "data": generic_inputs(rng, 6, 0.3, 2.5), "roots": AGAIN["roots"],
                "edges": [[p, c, w] for (p, c), w in zip(edges, weights)], "zero": [0, 1, 2, 3]})
    return out


def _reachable(root: int, edges: list[tuple[int, int]]) -> set[int]:
    kids: dict[int, list[int]] = {}
    for p, c in edges:
        kids.setdefault(p, []).append(c)
    seen, todo = {root}, [root]
    while todo:
        for c in kids.get(todo.pop(), []):
            if c not in seen:
                seen.add(c)
                todo.append(c)
    return seen


def judge_backward_again(case: Case, obs: Observation, tol: Tolerance) -> Failure | None:
    """The second call runs the _backward of exactly the nodes its own graph holds, once each: nothing is kept from
    the first call."""
    edges = [(p, c) for p, c, _ in case["edges"]]
    first, second = case["roots"]
    mine, old = _reachable(second, edges), _reachable(first, edges)
    inner = sorted(p for p in mine if any(pp == p for pp, _ in edges))
    ran = obs["calls"][1]
    where = (f"Value.backward, called on a second graph (root {second}) after a first one (root {first}) whose node 2 "
             "it reuses, all grads of the first zeroed in between; the _backward functions are the grader's own")
    stale = sorted({i for i in ran if i not in mine})
    if stale:
        return Failure(f"{where}: the second call also ran the _backward of node{'s' * (len(stale) > 1)} "
                       f"{', '.join(map(str, stale))}, which only the first graph holds; expected only the second "
                       f"graph's nodes {inner}", "backward.keeps_state", method=BWD)
    skipped = [i for i in inner if i not in ran]
    if skipped:
        shared = [i for i in skipped if i in old]
        which = f" (node {shared[0]}, which the first call had visited)" if shared else ""
        return Failure(f"{where}: the second call never ran the _backward of {len(skipped)} of its {len(inner)} "
                       f"operation nodes{which}; expected each once", "backward.keeps_state" if shared
                       else "backward.misses_nodes", method=BWD)
    twice = sorted({i for i in ran if ran.count(i) > 1})
    if twice:
        return Failure(f"{where}: the second call ran the _backward of node {twice[0]} {ran.count(twice[0])} times; "
                       "expected once", "backward.runs_a_node_twice", method=BWD)
    return None


def _expected_grads(case: Case) -> list[float]:
    """Reverse topological accumulation on the case's graph, root seeded with 1."""
    n = len(case["data"])
    grads = [0.0] * n
    grads[-1] = 1.0
    for i in reversed(range(n)):  # children first in the list, so reverse index order is a reverse topological order
        for p, c, w in case["edges"]:
            if p == i:
                grads[c] += w * grads[i]
    return grads


def _depths(case: Case) -> dict[int, int]:
    """Each node's fewest steps from the root."""
    n = len(case["data"])
    kids = {i: [c for p, c, _ in case["edges"] if p == i] for i in range(n)}
    depth, queue = {n - 1: 0}, [n - 1]
    while queue:
        node = queue.pop(0)
        for c in kids[node]:
            if c not in depth:
                depth[c] = depth[node] + 1
                queue.append(c)
    return depth


def is_preorder(order: list[int], edges: list[tuple[int, int]], root: int) -> bool:
    """Whether `order` (the inner nodes a walk reached) is a depth-first pre-order from the root: each node right
    after an ancestor on the current path that has it as a child, for some order of the children."""
    kids: dict[int, list[int]] = {}
    for p, c in edges:
        kids.setdefault(p, []).append(c)
    inner = set(order)
    if not order or order[0] != root:
        return False
    seen, path = {root}, [root]
    for node in order[1:]:
        while path and node not in kids.get(path[-1], []):
            if any(k in inner and k not in seen for k in kids.get(path[-1], [])):
                return False  # the walk left a node whose unvisited children a depth-first walk visits first
            path.pop()
        if not path or node in seen:
            return False
        seen.add(node)
        path.append(node)
    return True


def judge_backward(case: Case, obs: Observation, tol: Tolerance) -> Failure | None:
    """Each node's _backward exactly once, after every node that uses it, the root seeded with 1."""
    n = len(case["data"])
    root = n - 1
    edges = [(p, c) for p, c, _ in case["edges"]]
    inner = sorted({p for p, _ in edges})
    calls = obs["calls"]
    where = (f"Value.backward, on a graph of {n} nodes made with Value(data), their _prev set, whose _backward functions are "
             "the grader's own (so only backward() itself is tested)")
    if not calls:
        return Failure(f"{where}: called no _backward at all; expected {len(inner)} calls", "backward.never_calls",
                       method=BWD)
    seed = obs["grad_at_call"][root]
    if seed is None:  # the walk left the root out: nothing says how it was seeded
        return Failure(f"{where}: never called the root's own _backward; expected 1 call of each of the "
                       f"{len(inner)} operation nodes, the root first", "backward.misses_nodes", method=BWD)
    if not grad_close(seed, 1.0, 1.0, tol.rtol, tol.atol):
        return Failure(f"{where}: gave root.grad = {seed:.6g} when the root's _backward ran; expected 1",
                       "backward.root_not_seeded", method=BWD)
    counts = [calls.count(i) for i in range(n)]
    if max(counts) > 1:
        over = [i for i in range(n) if counts[i] > 1]
        return Failure(f"{where}: gave {max(counts)} calls of node {over[0]}'s _backward ({len(over)} nodes ran more "
                       "than once); expected exactly 1 per node", "backward.runs_a_node_twice", method=BWD)
    never = [i for i in inner if counts[i] == 0]
    if never:
        return Failure(f"{where}: gave 0 calls of the _backward of {len(never)} of {len(inner)} operation nodes; "
                       "expected 1 each", "backward.misses_nodes", method=BWD)
    pos = {node: k for k, node in enumerate(calls)}
    late = [(p, c) for p, c in edges if c in pos and pos[p] > pos[c]]
    if late:
        p, c = late[0]
        forward = all(pos[cc] < pos[pp] for pp, cc in edges if cc in pos and pp in pos)
        preorder = is_preorder(list(reversed(calls)), edges, root)
        if forward and preorder:  # both codes give this order on this graph: say what both share
            mis = "backward.leaves_first"
        elif forward:
            mis = "backward.forward_order"  # a topological order walked forwards, leaves first
        elif preorder:
            mis = "backward.preorder"  # reversed(a pre-order list): each node listed before its children
        elif all(a <= b for a, b in zip([_depths(case)[x] for x in calls], [_depths(case)[x] for x in calls[1:]])):
            mis = "backward.breadth_first"
        else:
            mis = "backward.not_topological"
        return Failure(f"{where}: gave the call order {calls}, where node {c} ran before node {p}, which uses it; "
                       f"expected {p} before {c}", mis, method=BWD)
    want = _expected_grads(case)
    for i, (g, w) in enumerate(zip(obs["grads"], want)):
        if not grad_close(g, w, 1.0, tol.rtol, tol.atol):
            below = [obs["grad_at_call"][k] for k in inner if k != root]
            reset = next((v for v in (1.0, 0.0) if below and all(b == v for b in below)), None)
            if reset is not None:  # every node below the root held the same grad when its _backward ran
                return Failure(f"{where}: gave every node below the root the grad {reset:g} when its _backward ran; "
                               f"expected the sum its users had passed on (node {i}: {w:.10g})",
                               "backward.sets_every_grad", method=BWD)
            return Failure(f"{where}: gave node {i} the grad {g:.10g} after backward(); expected {w:.10g}", method=BWD)
    return None


BACKWARD_ALONE = register(Check("backward_alone", (BWD,), "backward() alone: seeds the root, then each _backward once, "
                                "in reverse topological order", backward_cases,
                                judge_by_probe(backward=judge_backward, backward_again=judge_backward_again),
                                group="isolated",
                                during=lambda case: "\n  while calling backward() on a graph whose _backward functions "
                                "are the grader's own"))

def judge_twins(case: Case, obs: Observation, tol: Tolerance) -> Failure | None:
    """Distinct nodes stay distinct in a set and a dict, whatever their data."""
    if obs["in_set"] != 2 or obs["in_dict"] != 2:
        return Failure(f"Value.__eq__/__hash__: {{Value({case['x']!r}), Value({case['x']!r})}}: expected a set of 2 "
                       f"distinct nodes, got {obs['in_set']}", "eq.by_value", method=f"{V}.__eq__",
                       repro=msg.repro_lines([f"print(len({{Value({case['x']!r}), Value({case['x']!r})}}))  # expected 2"]))
    return None


register(Check("eq_identity", (f"{V}.__eq__", f"{V}.__hash__"), "distinct nodes with equal data stay distinct in a set",
               lambda rng, hidden: [{"probe": "twins", "x": generic_inputs(rng, 1)[0]}], judge_twins, group="isolated"))

ENGINE = ("add_forward", "mul_forward", "add_local_backward", "mul_local_backward", "backward_alone", "eq_identity")
# backward()'s checks run the learner's backward() alone: the graphs' + and * are the grader's (probes/scaffold.py),
# so a slip in __add__ costs __add__'s points, not these; a failure is pinned on backward() by its isolated check.
# A Value whose __eq__/__hash__ compare data makes sets merge distinct nodes: pinned on __eq__, as its isolated
# check observed it, when backward() alone passes.
BACKWARD_CELL = {"isolate": ("backward_alone", "eq_identity"), "owns": (BWD, f"{V}.__eq__")}


# ---------------------------------------------------------------- backward() on graphs of the grader's + and * (notebook 3)

def seed_cases(rng: random.Random, hidden: bool) -> list[Case]:
    """Plain pairs of generic inputs."""
    return [{"probe": "seed", "inputs": generic_inputs(rng, 2)} for _ in range(4 if hidden else 2)]


def _seed_repro(case: Case) -> str:
    a, b = case["inputs"]
    return msg.repro_lines([f"a = Value({a!r}); b = Value({b!r})", "out = a * b", "out.backward()",
                            f"print(out.grad, a.grad)  # expected 1, {b!r}"])


def judge_seed(case: Case, obs: Observation, tol: Tolerance) -> Failure | None:
    """backward() sets the root's grad to 1."""
    a, b = case["inputs"]
    where = f"out = a * b with a = Value({a!r}), b = Value({b!r})"
    if not grad_close(obs["root_grad"], 1.0, 1.0, tol.rtol, tol.atol):
        return Failure(f"Value.backward: out.grad after out.backward() on {where}: expected 1, got {obs['root_grad']:.6g}",
                       "backward.root_not_seeded", repro=_seed_repro(case), method=BWD)
    if not grad_close(obs["a_grad"], b, b, tol.rtol, tol.atol):
        mis = None
        if abs(obs["a_grad"]) < 1e-12:
            mis = "backward.grad_stayed_zero"
        elif grad_close(obs["a_grad"], a, a, tol.rtol, tol.atol):
            mis = "mul.unswapped"
        return Failure(f"Value.__mul__ / Value.backward: a.grad after out.backward() on {where}: expected {b!r} (b.data), "
                       f"got {obs['a_grad']:.6g}", mis, name="a", repro=_seed_repro(case))
    return None


register(Check("backward_seeds_root", (BWD,), "backward() seeds the root with 1", seed_cases, judge_seed,
               during=lambda case: f"\n  while calling out.backward() on out = a * b with a = Value({case['inputs'][0]!r}), "
               f"b = Value({case['inputs'][1]!r})" + _seed_repro(case), **BACKWARD_CELL))
# backward() through + and * nodes (the grader's); `add_up` multiplies the sum by Value(3.0), so that out.grad
# upstream is not 1
register(expression_check("backward_through_add", (BWD,), "backward() routes out.grad through + to both operands",
                          ["add_up", "add3"], **BACKWARD_CELL))
register(expression_check("backward_through_mul", (BWD,), "backward() routes out.grad through * to both operands",
                          ["mul_up", "mul3"], **BACKWARD_CELL))
# the learner's + and * on whole graphs, back-propagated by the grader's backward(): an engine's checks of + and *
# (notebook 3 judges them as exercises, one node at a time: add_local_backward, mul_local_backward); a leaf used
# twice shows a _backward that assigns its gradient instead of adding it
register(expression_check("add_backward", (ADD,), "+ routes out.grad to both operands, adding to what is there",
                          ["add_up", "add3", "a_plus_a", "a_plus_b_plus_a"], isolate=("add_local_backward",)))
register(expression_check("mul_backward", (MUL,), "* swaps the operands, times out.grad, adding to what is there",
                          ["mul_up", "mul3", "mul_zero", "a_times_a", "a_times_b_times_a"], isolate=("mul_local_backward",)))
register(expression_check("backward_accumulates", (BWD,), "a node used twice accumulates both gradients",
                          ["a_plus_a", "a_times_a", "ab_plus_a", "a_plus_a_up", "a_plus_b_plus_a", "a_times_b_times_a"],
                          **BACKWARD_CELL))
register(expression_check("backward_chain_order", (BWD,), "gradients flow from the root down, in order",
                          ["chain", "chain_up", "mul_add"], **BACKWARD_CELL))
register(expression_check("backward_topological_order", (BWD,),
                          "shared nodes and skip connections are walked in topological order",
                          ["shared", "skip_mul", "diamond"], **BACKWARD_CELL))

LADDER_RUNGS = 12


def ladder_cases(rng: random.Random, hidden: bool) -> list[Case]:
    """Starting points of the ladder; then backward() on two graphs in turn (nothing may be kept between calls)."""
    again = [expression_case(k, rng, True) for k in ("again_fresh", "again_reuse")]
    return [{"probe": "ladder", "x": x, "rungs": LADDER_RUNGS} for x in generic_inputs(rng, 3 if hidden else 1)] + again


def _ladder_where(case: Case) -> str:
    return (f"a ladder of {LADDER_RUNGS} rungs `y = y * Value(0.5) + y * Value(0.5)` from x = Value({case['x']!r}), "
            "out = y * Value(3.0)")


def judge_ladder(case: Case, obs: Observation, tol: Tolerance) -> Failure | None:
    """Each inner node's _backward exactly once, each leaf's at most once, and the right gradient."""
    where = _ladder_where(case)
    inner = obs["inner_calls"]
    most = max(inner + obs["leaf_calls"], default=0)
    if most > 1:
        over = sum(1 for c in inner + obs["leaf_calls"] if c > 1)
        return Failure(f"Value.backward called some _backward up to {most} times on {where} ({over} nodes more than "
                       "once); expected exactly once per node", "backward.runs_a_node_twice", method=BWD)
    never = sum(1 for c in inner if c == 0)
    if never:
        return Failure(f"Value.backward never called _backward of {never} of {len(inner)} operation nodes on {where}",
                       "backward.misses_nodes")
    if not grad_close(obs["grad"], 3.0, obs["data"], tol.rtol, tol.atol):
        return Failure(f"gradient of x on {where}: expected 3 (exact), got {obs['grad']:.10g}")
    return None


register(Check("backward_once_per_node", (BWD,), "each node's _backward runs exactly once, on every graph",
               ladder_cases, judge_by_probe(ladder=judge_ladder, again=judge_expression),
               during=during_by_probe(ladder=lambda case: f"\n  while back-propagating {_ladder_where(case)}",
                                      again=expression_during),
               **BACKWARD_CELL))
register(expression_check("backward_equal_data", (BWD, f"{V}.__eq__", f"{V}.__hash__"),
                          "distinct nodes with equal data stay distinct", ["twins", "tied_leaves"],
                          isolate=("backward_alone", "eq_identity"), owns=(BWD, f"{V}.__eq__")))

__all__ = ["ADD_FORWARD", "BACKWARD_ALONE", "ENGINE", "MUL_FORWARD"]
