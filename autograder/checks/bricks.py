"""The bricks: tanh, exp, **, -, /, numbers on either side (notebook 4)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from ..truth.expressions import Expr
from .base import Case, Check
from .common import (
    ADD,
    BRICK_OF,
    EXP,
    EXPRESSIONS,
    GRADIENT_MISTAKES,
    MUL,
    POW,
    TANH,
    VALUE_MISTAKES,
    V,
    at_zero,
    expression_check,
    judge_node,
    node_case,
    node_during,
    node_fits,
    register,
)

EXPRESSIONS.update({
    # tanh
    "tanh": Expr(("x",), "x.tanh()", upstream=3.0, exact=lambda x: (3 * (1 - math.tanh(x) ** 2),)),
    "tanh_mul": Expr(("a", "b"), "(a * b).tanh()", high=1.5),
    "tanh_twice": Expr(("x",), "t = x.tanh()\nout = t * t + t", misconception="backward.topological_order"),
    "skip_tanh": Expr(("x",), "y = x.tanh()\nout = y + (y * Value(2.5)) * Value(1.5)", misconception="backward.topological_order"),
    # exp
    "exp": Expr(("x",), "x.exp()", upstream=3.0, exact=lambda x: (3 * math.exp(x),)),
    "exp_mul": Expr(("a", "b"), "(a * b).exp()", high=1.5),
    # pow
    "square": Expr(("a",), "a ** 2", upstream=3.0, exact=lambda a: (6 * a,)),
    "cube": Expr(("a",), "a ** 3", exact=lambda a: (3 * a * a,)),
    "cube_zero": Expr(("a",), "a ** 3", upstream=3.0, zeros=(0,), exact=lambda a: (0.0,)),
    "inverse": Expr(("a",), "a ** -1", exact=lambda a: (-1 / (a * a),)),
    "sqrt": Expr(("a",), "(a * a) ** 0.5", exact=lambda a: (math.copysign(1.0, a),)),
    # neg, sub, div
    "neg": Expr(("a",), "-a", upstream=3.0, exact=lambda a: (-3.0,)),
    "sub": Expr(("a", "b"), "a - b", upstream=3.0, exact=lambda a, b: (3.0, -3.0)),
    "sub_self": Expr(("a", "b"), "a * b - a", exact=lambda a, b: (b - 1, a)),
    "div": Expr(("a", "b"), "a / b", upstream=3.0, exact=lambda a, b: (3 / b, -3 * a / (b * b))),
    "div_self": Expr(("a", "b"), "(a + b) / a"),
    # the same operand twice, and two distinct operands of equal data (a * b and b * a): an engine whose __eq__/__hash__
    # compare data merges them in a set, which these graphs show (issue 34)
    "sub_twice": Expr(("a", "b"), "(a - b) - b", exact=lambda a, b: (1.0, -2.0)),
    "div_twice": Expr(("a", "b"), "(a / b) / b", exact=lambda a, b: (1 / (b * b), -2 * a / b**3)),
    "sub_twins": Expr(("a", "b"), "m = a * b\nn = b * a\nout = (m - n) * Value(2.5) + m", exact=lambda a, b: (b, a)),
    "div_twins": Expr(("a", "b"), "m = a * b\nn = b * a\nout = m / n + m", exact=lambda a, b: (b, a)),
    "div_zero": Expr(("a", "b"), "a / b", upstream=3.0, zeros=(0,), exact=lambda a, b: (3 / b, 0.0)),
    # numbers on either side
    "radd": Expr(("a",), "1 + a", upstream=3.0, exact=lambda a: (3.0,)),
    "add_number": Expr(("a",), "a + 1", exact=lambda a: (1.0,)),
    "rmul": Expr(("a",), "2 * a", upstream=3.0, exact=lambda a: (6.0,)),
    "mul_number": Expr(("a",), "a * 2", exact=lambda a: (2.0,)),
    "sum": Expr(("a", "b"), "sum([a, b, a * b])", exact=lambda a, b: (1 + b, 1 + a)),
    "rsub": Expr(("a",), "1 - a", upstream=3.0, exact=lambda a: (-3.0,)),
    "rsub_mul": Expr(("a", "b"), "2.5 - a * b", exact=lambda a, b: (-b, -a)),
    "sub_number": Expr(("a",), "a - 1.5", exact=lambda a: (1.0,)),
    "rdiv": Expr(("a", "b"), "(a * b) / 2.0", exact=lambda a, b: (b / 2, a / 2)),
    "rtruediv": Expr(("a",), "2 / a", upstream=3.0, exact=lambda a: (-6 / (a * a),)),
    "rtruediv_mul": Expr(("a", "b"), "3 / (a * b)", exact=lambda a, b: (-3 / (a * a * b), -3 / (a * b * b))),
    # a leaf used by the brick AND by the root: the brick's _backward runs after the root's has given the leaf a
    # gradient, so a brick that sets `grad = ...` instead of `grad += ...` loses it (whatever the walk's order)
    "tanh_reuse": Expr(("x",), "x.tanh() + x", high=2.0, exact=lambda x: (2 - math.tanh(x) ** 2,)),
    "exp_reuse": Expr(("x",), "x.exp() + x", high=2.0, exact=lambda x: (math.exp(x) + 1,)),
    "pow_reuse": Expr(("a",), "a ** 3 + a", exact=lambda a: (3 * a * a + 1,)),
    "neg_reuse": Expr(("a",), "-a * Value(2.5) + a", exact=lambda a: (-1.5,)),
    "sub_reuse": Expr(("a", "b"), "(a - b) * Value(2.5) + a + b", exact=lambda a, b: (3.5, -1.5)),
    "div_reuse": Expr(("a", "b"), "a / b + a + b", exact=lambda a, b: (1 / b + 1, 1 - a / (b * b))),
    "radd_reuse": Expr(("a",), "(1.5 + a) * Value(2.5) + a", exact=lambda a: (3.5,)),
    "rmul_reuse": Expr(("a",), "2.5 * a + a", exact=lambda a: (3.5,)),
    "rsub_reuse": Expr(("a",), "(2.5 - a) * Value(1.5) + a", exact=lambda a: (-0.5,)),
    "rtruediv_reuse": Expr(("a",), "2 / a + a", exact=lambda a: (1 - 2 / (a * a),)),
    # a neuron-sized graph with every brick
    "bricks": Expr(("a", "b", "c"), "n = a * b + c\nout = (2 * n).exp() / ((2 * n).exp() + Value(1.0)) - 0.5 * n ** 2", high=1.2),
})

GRADIENT_MISTAKES.update({
    "tanh": [
        ("tanh.uses_input", lambda x: (3 * (1 - x * x),)),
        ("tanh.drops_one_minus", lambda x: (3 * math.tanh(x) ** 2,)),
        ("tanh.one_minus_t", lambda x: (3 * (1 - math.tanh(x)),)),
    ],
    "exp": [("exp.derivative_is_input", lambda x: (3 * x,))],
    "div": [("div.wrong_sign", lambda a, b: (3 / b, 3 * a / (b * b)))],
    "square": [("pow.derivative_keeps_power", lambda a: (3 * 2 * a * a,)),
               ("pow.exponent_off_by_one", lambda a: (3 * 2 * a ** 3,))],
    "cube": [("pow.exponent_off_by_one", lambda a: (3 * a ** 4,))],
    "tanh_mul": [("tanh.one_plus_t_squared", lambda a, b: (b * (1 + math.tanh(a * b) ** 2), a * (1 + math.tanh(a * b) ** 2)))],
})
GRADIENT_MISTAKES["tanh"].append(("tanh.one_plus_t_squared", lambda x: (3 * (1 + math.tanh(x) ** 2),)))
# the reused leaf's gradient holds the brick's part alone: the root's part was overwritten
ASSIGNS = "node.assigns_instead_of_accumulating"
GRADIENT_MISTAKES.update({
    "tanh_reuse": [(ASSIGNS, lambda x: (1 - math.tanh(x) ** 2,))],
    "exp_reuse": [(ASSIGNS, lambda x: (math.exp(x),))],
    "pow_reuse": [(ASSIGNS, lambda a: (3 * a * a,))],
    "neg_reuse": [(ASSIGNS, lambda a: (-2.5,))],
    "sub_reuse": [(ASSIGNS, lambda a, b: (2.5, -1.5)), (ASSIGNS, lambda a, b: (3.5, -2.5)), (ASSIGNS, lambda a, b: (2.5, -2.5))],
    "div_reuse": [(ASSIGNS, lambda a, b: (1 / b, 1 - a / (b * b))), (ASSIGNS, lambda a, b: (1 / b + 1, -a / (b * b))),
                  (ASSIGNS, lambda a, b: (1 / b, -a / (b * b)))],
    "radd_reuse": [(ASSIGNS, lambda a: (2.5,))],
    "rmul_reuse": [(ASSIGNS, lambda a: (2.5,))],
    "rsub_reuse": [(ASSIGNS, lambda a: (-1.5,))],
    "rtruediv_reuse": [(ASSIGNS, lambda a: (-2 / (a * a),))],
})
BRICK_OF.update({"cube_zero": "pow", "div_zero": "div"})
BRICK_OF.update({"tanh": "tanh", "tanh_mul": "tanh", "tanh_reuse": "tanh", "exp": "exp", "exp_mul": "exp",
                 "exp_reuse": "exp", "square": "pow", "cube": "pow", "inverse": "pow", "sqrt": "pow", "pow_reuse": "pow",
                 "neg": "neg", "neg_reuse": "neg", "sub": "sub", "sub_self": "sub", "sub_number": "sub", "sub_reuse": "sub",
                 "div": "div", "div_self": "div", "rdiv": "div", "div_reuse": "div", "sub_twice": "sub", "sub_twins": "sub",
                 "div_twice": "div", "div_twins": "div", "radd": "radd", "radd_reuse": "radd",
                 "rmul": "rmul", "rmul_reuse": "rmul", "rsub": "rsub", "rsub_mul": "rsub", "rsub_reuse": "rsub",
                 "rtruediv": "rtruediv", "rtruediv_mul": "rtruediv", "rtruediv_reuse": "rtruediv"})
VALUE_MISTAKES.update({
    "rmul": [("rmul.calls_add", lambda a: (2 + a) * 3.0)],
    "rmul_reuse": [("rmul.calls_add", lambda a: 2.5 + a + a)],
    "radd": [("radd.calls_mul", lambda a: a * 3.0)],
    "radd_reuse": [("radd.calls_mul", lambda a: 1.5 * a * 2.5 + a)],
    "rtruediv": [("rtruediv.operands_inverted", lambda a: 3.0 * a / 2)],
    "rtruediv_mul": [("rtruediv.operands_inverted", lambda a, b: a * b / 3)],
    "div": [("div.operands_inverted", lambda a, b: 3.0 * b / a), ("div.multiplies", lambda a, b: a * b * 3.0)],
    "div_self": [("div.operands_inverted", lambda a, b: a / (a + b))],
})


def unary_local_cases(op: str, k: float | None = None) -> Callable[[random.Random, bool], list[Case]]:
    """The node alone: structure, then preset grads and one out._backward() call."""

    def cases(rng: random.Random, hidden: bool) -> list[Case]:
        out = [node_case(op, rng, local=True, k=k) for _ in range(2 if hidden else 1)]
        if op == "**":  # last: x = 0, where x**k (k >= 2) has slope 0 and a slope that divides by x is undefined
            out.append(at_zero(node_case(op, rng, local=True, k=k)))
        return out

    return cases


TANH_LOCAL = register(Check("tanh_local", (TANH,), "tanh alone: a node with x as its child, local derivative 1 - t**2",
                            unary_local_cases("tanh"), judge_node, group="isolated", during=node_during, fits=node_fits))
EXP_LOCAL = register(Check("exp_local", (EXP,), "exp alone: a node with x as its child, local derivative exp(x)",
                           unary_local_cases("exp"), judge_node, group="isolated", during=node_during, fits=node_fits))
POW_LOCAL = register(Check("pow_local", (POW,), "** alone: a node with x as its child, local derivative n * x**(n-1)",
                           unary_local_cases("**", 3), judge_node, group="isolated", during=node_during, fits=node_fits))


def bricks_check(name: str, bricks: tuple[str, ...], description: str, keys: list[str], own: tuple[str, ...] = (),
                 points: float = 1.0, group: str = "engine", companions: tuple[str, ...] = ()) -> Check:
    """An expression check of notebook 4 that runs the learner's `bricks` alone: every other operation of its graphs
    (an upstream factor `* Value(3.0)`, a leaf reused through `+`, the `*` of `self * -1`) and backward() are the
    grader's (probes/scaffold.py), but for the `companions` of its exercise the learner's class defines. `own` are the
    brick's isolated checks, which pin a failure on its local rule."""
    return register(expression_check(name, bricks, description, keys, points=points, isolate=own, group=group,
                                     companions=companions))


bricks_check("tanh_backward", (TANH,), "tanh: forward, and local derivative 1 - t**2",
             ["tanh", "tanh_mul", "tanh_twice", "skip_tanh", "tanh_reuse"], ("tanh_local",))
bricks_check("exp_backward", (EXP,), "exp: forward, and local derivative exp(x)", ["exp", "exp_mul", "exp_reuse"], ("exp_local",))
bricks_check("pow_backward", (POW,), "** number: forward, and n * x**(n-1)",
             ["square", "cube", "inverse", "sqrt", "pow_reuse", "cube_zero"],
             ("pow_local",))
# -a, a - b and number - a are one exercise (notebook 4's ex_04_neg_sub): each check keeps the learner's other two
# when defined, so a cycle among them (`-self` written as `0 - self` while `__rsub__` negates) fails that exercise
bricks_check("neg_sub_backward", (f"{V}.__neg__", f"{V}.__sub__"), "-a, a - b and a - number",
             ["neg", "sub", "sub_self", "sub_number", "neg_reuse", "sub_reuse", "sub_twice", "sub_twins"],
             companions=(f"{V}.__rsub__",))
bricks_check("div_backward", (f"{V}.__truediv__",), "a / b, and a / number",
             ["div", "div_self", "rdiv", "div_reuse", "div_twice", "div_twins", "div_zero"])
# a number on the right of + and * is the learner's + and * wrapping it (given in notebook 4, the spec's for an engine)
bricks_check("number_operands", (f"{V}.__radd__", f"{V}.__rmul__", ADD, MUL), "numbers on either side of + and *",
             ["radd", "add_number", "rmul", "mul_number", "sum", "radd_reuse", "rmul_reuse"],
             ("add_local_backward", "mul_local_backward"))
bricks_check("rsub_backward", (f"{V}.__rsub__",), "a number minus a Value", ["rsub", "rsub_mul", "rsub_reuse"],
             companions=(f"{V}.__neg__", f"{V}.__sub__"))
# notebook 4's number / Value: an exercise check, so that engines written to the spec need not define it
bricks_check("rtruediv_backward", (f"{V}.__rtruediv__",), "a number divided by a Value",
             ["rtruediv", "rtruediv_mul", "rtruediv_reuse"], group="exercise")
# every brick in one graph: a check of the whole engine (the CLI's), pinned on the first brick whose own check fails
bricks_check("all_bricks", (EXP, f"{V}.__truediv__", POW, f"{V}.__sub__", f"{V}.__rmul__"),
             "every brick together in one graph", ["bricks"],
             ("exp_backward", "div_backward", "pow_backward"))
