"""Every Value operation, declared once: what the grader knows of it, in one place.

An operation's declaration holds its four beats as micrograd writes them (the method, the forward on floats, what
`_backward` adds to each operand's grad, the `_op` label), then what the checks need: the labels a learner may give
it, how a node case builds it, its known mistakes (each a sentence and its evidence: a wrong `_backward` rule, a wrong
forward value, or a shape the judge recognises), the slips the formula recovery tries, the graphs its check builds
and the checks themselves. Everything else derives from here: the checks of the local rule and of the brick
(`bricks.py`, `engine.py`), the judges (`common.py`), the sentences and the method a misconception lives in
(`messages.py`), the known mistakes on whole graphs (`graphs.py`), and the probe side's operations, written into
`autograder/probes/op_table.py` by `python -m autograder.checks` (the probe side may not import this module).

Formulas are Python expressions in the names of micrograd's code: x is self.data (for a reflected operation such as
`__radd__`, the number on the left), y other.data, k the exponent, t out.data and g out.grad; they may call tanh,
exp, max, min and abs. A new operation is one more `Operation(...)` below (see docs/contributing.md).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..truth.expressions import Expr

# ---------------------------------------------------------------- what a declaration is made of

# The shapes of mistake the judges recognise for any operation, each named by the operation's own id when it declares
# one (Mistake.role): a node with no children (or a brick's graph cut), no _backward, a wrong _op, a wrong forward on
# notebook 2's graphs, `grad = ...` where `+=` belongs, a node used twice losing a use, one operand forgotten, the
# sign flipped, another operand's grad used, and a slip of the right formula recovered from the numbers.
ROLES = ("graph_cut", "no_backward", "wrong_op", "wrong_forward", "assigns", "loses_a_use", "forgets_an_operand",
         "sign_flipped", "uses_operand_grad", "wrong_slope")
FORMS = ("unary", "binary", "reflected", "power")  # self alone; self op other; other op self (a number on the left); self ** number
FUNCTIONS: dict[str, Callable[..., float]] = {"tanh": math.tanh, "exp": math.exp, "max": max, "min": min, "abs": abs}


@dataclass(frozen=True)
class Mistake:
    """A known wrong version of an operation: its id, the sentence a learner reads, and the evidence it needs.

    The evidence is one of: `rules`, wrong `_backward`s (each what it adds to each operand's grad), recognised when one
    of them gives the learner's grads (added to what was there, or assigned); `value`, a wrong forward value; `role`,
    a shape every operation's judge recognises (ROLES); or none, for an id named in the judges' code."""

    id: str
    sentence: str
    rules: tuple[tuple[str, ...], ...] = ()
    value: str = ""
    role: str = ""
    alone: bool = False  # a rule recognised on one operand alone, whatever the other operand's grad


@dataclass(frozen=True)
class Slips:
    """Where the formula recovery looks for a slip of `_backward`: the names a slip may mix up (in this order), the
    functions it may apply once more, each free name's range, the names that count (an exponent k)."""

    names: tuple[str, ...]
    domains: tuple[tuple[str, float, float], ...]
    functions: tuple[str, ...] = ()
    counts: tuple[str, ...] = ()
    where: str = "x is self.data, t is out.data and g is out.grad"


@dataclass(frozen=True)
class Local:
    """The check of the local rule alone: a node on fresh leaves, preset grads, one `out._backward()` call."""

    name: str
    description: str
    group: str = "isolated"  # "exercise" for notebook 3's + and *, which a notebook cell names
    signs: tuple[float, ...] = ()  # each case's inputs made of these signs in turn (both sides of a kink); () as drawn
    at_zero: bool = False  # last, a case whose first operand is exactly 0 (where a slope that divides by x fails)
    power: float | None = None  # the exponent of the node cases


@dataclass(frozen=True)
class Brick:
    """The check of a brick on whole graphs (notebook 4): its graphs (keys of graphs.EXPRESSIONS, in order), the
    learner methods it runs (the operation's and `also`), and, when it fails, the isolated checks that pin it."""

    name: str
    description: str
    keys: tuple[str, ...]
    isolate: tuple[str, ...] | None = None  # None: the operation's local check, if it has one
    also: tuple[str, ...] = ()  # more targets (methods of Value) besides the operation's own
    companions: tuple[str, ...] = ()
    points: float = 1.0
    group: str = "engine"  # "exercise": a notebook's own, not part of the spec an engine is checked against
    local: bool = False  # also the local check's cases, judged by the declared slope: where numbers cannot be
    # estimated, such as at a kink, the convention is tested exactly there


@dataclass(frozen=True)
class Operation:
    """One Value operation (see the module docstring for the formulas' names)."""

    kind: str  # the misconception ids' prefix: "tanh"
    method: str  # the Value attribute: "tanh"
    shown: str  # how a diagnosis names where its misconceptions live: "Value.tanh"
    form: str  # one of FORMS
    forward: str  # its value on floats: "tanh(x)"
    backward: tuple[str, ...]  # what _backward adds to each operand's grad: ("(1 - t ** 2) * g",)
    label: str  # the grader's own `_op` ({k} the exponent): "tanh"
    notebook: int  # where the workbook asks for it
    mistakes: tuple[Mistake, ...] = ()
    labels: frozenset[str] = frozenset()  # every `_op` that names it, case-folded, spaces dropped
    label_parts: tuple[str, ...] = ()  # or: text an `_op` naming it contains ("**", "pow" for a power)
    label_starts: tuple[str, ...] = ()  # or: starts with ("²")
    symbol: str = ""  # a node case's "op" key, for an operation judged one node at a time ("" if none)
    call: str = ""  # how a probe applies it to the node case's operands {a}, {b} and exponent {k}: "{a}.tanh()"
    high: float = 2.5  # the node cases' largest input magnitude
    extra_child: bool = False  # a node may keep one more child than its operands (a power's exponent as a Value)
    slips: Slips | None = None  # where the recovery looks for a slip of the local rule (None: no recovery)
    local: Local | None = None
    graphs: Mapping[str, Expr] = field(default_factory=dict)  # graphs that test it: a failure there is pinned on it
    more_graphs: Mapping[str, Expr] = field(default_factory=dict)  # its check's other graphs (order, numbers)
    check: Brick | None = None

    def __post_init__(self) -> None:
        if self.form not in FORMS or any(m.role and m.role not in ROLES for m in self.mistakes):
            raise ValueError(f"{self.kind}: unknown form or role")
        if any(not m.id.startswith(self.kind + ".") for m in self.mistakes):
            raise ValueError(f"{self.kind}: a mistake's id must start with {self.kind!r}")

    @property
    def arity(self) -> int:
        """How many Value operands the node has."""
        return 2 if self.form in ("binary", "reflected") else 1

    @property
    def target(self) -> str:
        """The target a check names: `Value.tanh`."""
        return f"Value.{self.method}"

    def said(self, role: str) -> str | None:
        """This operation's own misconception id for a shape the judges recognise, or None."""
        return next((m.id for m in self.mistakes if m.role == role), None)

    @functools.cached_property
    def forward_on(self) -> Callable[[float, float | None, float | None], float]:
        """The forward on floats: f(x, y, k)."""
        return _compiled(("x", "y", "k"), self.forward)

    @functools.cached_property
    def adds_on(self) -> Callable[..., tuple[float, ...]]:
        """What the right _backward adds to each operand's grad: f(x, y, t, k, g)."""
        return _compiled(("x", "y", "t", "k", "g"), tuple_text(self.backward))


def tuple_text(formulas: tuple[str, ...]) -> str:
    """`(f1, f2)` (a one-element tuple keeps its comma)."""
    return f"({', '.join(formulas)}{',' if len(formulas) == 1 else ''})"


@functools.cache
def _compiled(params: tuple[str, ...], body: str) -> Callable[..., object]:
    return eval(f"lambda {', '.join(params)}: {body}", dict(FUNCTIONS))  # the grader's own text, never learner code


def rule_on(formulas: tuple[str, ...]) -> Callable[..., tuple[float, ...]]:
    """A rule (what a _backward adds to each operand's grad) as f(x, y, t, k, g)."""
    return _compiled(("x", "y", "t", "k", "g"), tuple_text(formulas))  # type: ignore[return-value]


def value_on(formula: str) -> Callable[..., float]:
    """A forward formula as f(x, y, k)."""
    return _compiled(("x", "y", "k"), formula)  # type: ignore[return-value]


# ---------------------------------------------------------------- sentences several operations share

def graph_cut(sym: str) -> str:
    """A brick built from plain numbers: its result does not reach its operands."""
    return (f"the result of {sym} does not reach its operands through _prev, so the graph is cut there and no gradient "
            f"flows back: build {sym} from Value operations (or create the result with its operands as children), "
            "never from plain numbers such as Value(-self.data)")


def no_backward(sym: str) -> str:
    """A brick whose result remembers its operands but passes no gradient back."""
    return (f"the result of {sym} remembers its operands, but no gradient comes out of it: its _backward is missing or "
            "does nothing; build it from operations that have one ⟦(a / b = a * b**-1, -a = a * -1) ⟧or define "
            "out._backward")


def wrong_slope(sym: str) -> str:
    """A slip of the local derivative, recovered from the numbers."""
    return (f"the local derivative of {sym} is a slip of the right formula: the diagnosis shows the formula that gives "
            "your numbers⟦ beside the right one⟧")


def loses_a_use(sym: str) -> str:
    """`a op a` passing one use's gradient only."""
    return (f"{sym} with the same Value twice adds only one use's gradient: each operand needs its own `+=` (self.grad "
            "and other.grad, even when they are the same Value); a loop over out._prev, a set that holds the Value "
            "once, loses the other")


ASSIGNS_TWICE = ("{name} is used twice and one of its two gradients was overwritten: a _backward sets `grad = ...` "
                 "where it must accumulate `grad += ...`")
BINARY_SLIPS = Slips(("x", "y", "t", "g"), (("x", -2.5, 2.5), ("y", -2.5, 2.5), ("g", -3.0, 3.0)),
                     where="x is self.data, y is other.data, t is out.data and g is out.grad")
UNARY_DOMAINS = (("x", -2.0, 2.0), ("g", -3.0, 3.0))


# ---------------------------------------------------------------- the operations, in the workbook's order

ADD = Operation(
    "add", "__add__", "Value.__add__", "binary", "x + y", ("g", "g"), "+", notebook=2,
    symbol="+", call="{a} + {b}", labels=frozenset({"+", "＋", "add", "plus", "sum", "addition", "__add__", "a+b"}),
    slips=BINARY_SLIPS,
    local=Local("add_local_backward", "out._backward() of a + b adds out.grad to both inputs' grads", "exercise"),
    mistakes=(
        Mistake("add.no_children", "the result of + must remember its operands⟦: Value(self.data + other.data, "
                "(self, other), '+')⟧", role="graph_cut"),
        Mistake("add.wrong_op", "the result of + must record the operation it came from⟦: _op = '+'⟧", role="wrong_op"),
        Mistake("add.wrong_forward", "a + b must compute the sum of the operands' data⟦, self.data + other.data⟧",
                role="wrong_forward"),
        Mistake("add.assigns_instead_of_accumulating", ASSIGNS_TWICE, role="assigns"),
        Mistake("add.loses_a_use", loses_a_use("a + a"), role="loses_a_use"),
        Mistake("add.forgets_an_operand", "+ must route out.grad to BOTH operands⟦: self.grad += out.grad and "
                "other.grad += out.grad⟧", role="forgets_an_operand"),
        Mistake("add.sign_flipped", "+ passes out.grad on unchanged to both operands; this subtracts it⟦: `+= "
                "out.grad`, not `-= out.grad`⟧", role="sign_flipped"),
        Mistake("add.uses_operand_grad", "+ must route out.grad, the gradient flowing in, to both operands; this adds "
                "another operand's .grad⟦ (self.grad += out.grad, other.grad += out.grad)⟧", role="uses_operand_grad"),
        Mistake("add.wrong_slope", wrong_slope("a + b"), role="wrong_slope"),
    ),
)

MUL = Operation(
    "mul", "__mul__", "Value.__mul__", "binary", "x * y", ("y * g", "x * g"), "*", notebook=2,
    symbol="*", call="{a} * {b}",
    labels=frozenset({"*", "×", "·", "⋅", "∗", "✕", "x", "mul", "mult", "times", "multiply", "product", "prod",
                      "multiplication", "__mul__", "a*b"}),
    slips=BINARY_SLIPS,
    local=Local("mul_local_backward", "out._backward() of a * b adds the other's data times out.grad to each input's "
                "grad", "exercise", at_zero=True),
    mistakes=(
        Mistake("mul.no_children", "the result of * must remember its operands⟦: Value(self.data * other.data, "
                "(self, other), '*')⟧", role="graph_cut"),
        Mistake("mul.wrong_op", "the result of * must record the operation it came from⟦: _op = '*'⟧", role="wrong_op"),
        Mistake("mul.wrong_forward", "a * b must compute the product of the operands' data⟦, self.data * other.data⟧",
                role="wrong_forward"),
        Mistake("mul.unswapped", "in __mul__, each operand's gradient needs the OTHER operand's data⟦ (self.grad needs "
                "other.data * out.grad, other.grad needs self.data * out.grad)⟧: the operands look unswapped",
                rules=(("x * g", "y * g"),), alone=True),
        Mistake("mul.assigns_instead_of_accumulating", ASSIGNS_TWICE, role="assigns"),
        Mistake("mul.loses_a_use", loses_a_use("a * a"), role="loses_a_use"),
        Mistake("mul.forgets_an_operand", "* must pass a gradient to BOTH operands⟦: self.grad += other.data * "
                "out.grad and other.grad += self.data * out.grad⟧", role="forgets_an_operand"),
        Mistake("mul.sign_flipped", "* adds (the other operand's data) * out.grad to each operand's grad: `+=`, not "
                "`-=`", role="sign_flipped"),
        Mistake("mul.uses_grad_for_data", "in __mul__, each operand's gradient is the OTHER operand's DATA times "
                "out.grad; this uses an operand's .grad where its .data belongs⟦ (other.grad += self.data * "
                "out.grad)⟧", role="uses_operand_grad"),
        Mistake("mul.wrong_slope", wrong_slope("a * b"), role="wrong_slope"),
    ),
)

TANH = Operation(
    "tanh", "tanh", "Value.tanh", "unary", "tanh(x)", ("(1 - t ** 2) * g",), "tanh", notebook=4,
    symbol="tanh", call="{a}.tanh()", labels=frozenset({"tanh", "tanh()", "th"}), high=2.0,
    slips=Slips(("x", "t", "g"), UNARY_DOMAINS, functions=("tanh",)),
    local=Local("tanh_local", "tanh alone: a node with x as its child, local derivative 1 - t**2"),
    mistakes=(
        Mistake("tanh.graph_cut", "the tanh node has no child, so the graph is cut there and no gradient reaches x⟦: "
                "create it as Value(t, (self,), 'tanh')⟧", role="graph_cut"),
        Mistake("tanh.no_backward", no_backward("x.tanh()"), role="no_backward"),
        Mistake("tanh.uses_input", "the local derivative of tanh is written with t = tanh(x), the OUTPUT⟦: 1 - t**2⟧; "
                "this looks like 1 - x**2, with the input x", rules=(("(1 - x ** 2) * g",),)),
        Mistake("tanh.drops_one_minus", "the local derivative of tanh looks like t**2 here, the output squared alone⟦; "
                "it is 1 - t**2⟧", rules=(("t ** 2 * g",),)),
        Mistake("tanh.one_minus_t", "the local derivative of tanh looks like 1 - t here: the output is not squared⟦; "
                "it is 1 - t**2⟧", rules=(("(1 - t) * g",),)),
        Mistake("tanh.one_plus_t_squared", "the local derivative of tanh looks like 1 + t**2 here: the sign is wrong⟦; "
                "it is 1 - t**2⟧", rules=(("(1 + t ** 2) * g",),)),
        Mistake("tanh.wrong_slope", wrong_slope("tanh"), role="wrong_slope"),
    ),
    graphs={
        "tanh": Expr(("x",), "x.tanh()", upstream=3.0, exact=lambda x: (3 * (1 - math.tanh(x) ** 2),)),
        "tanh_mul": Expr(("a", "b"), "(a * b).tanh()", high=1.5),
        # a leaf used by the brick AND by the root: the brick's _backward runs after the root's has given the leaf a
        # gradient, so a brick that sets `grad = ...` instead of `grad += ...` loses it (whatever the walk's order)
        "tanh_reuse": Expr(("x",), "x.tanh() + x", high=2.0, exact=lambda x: (2 - math.tanh(x) ** 2,)),
    },
    more_graphs={
        "tanh_twice": Expr(("x",), "t = x.tanh()\nout = t * t + t", misconception="backward.topological_order"),
        "skip_tanh": Expr(("x",), "y = x.tanh()\nout = y + (y * Value(2.5)) * Value(1.5)",
                          misconception="backward.topological_order"),
    },
    check=Brick("tanh_backward", "tanh: forward, and local derivative 1 - t**2",
                ("tanh", "tanh_mul", "tanh_twice", "skip_tanh", "tanh_reuse")),
)

RELU = Operation(
    "relu", "relu", "Value.relu", "unary", "max(x, 0.0)", ("(t > 0) * g",), "ReLU", notebook=4,
    symbol="relu", call="{a}.relu()", labels=frozenset({"relu", "relu()", "rectifier"}), high=2.0,
    slips=Slips(("x", "t", "g"), UNARY_DOMAINS),
    # a case of each sign, the negative first (where a rule that passes nothing on for a positive input still passes
    # something, which says what it does); last, exactly 0: the kink, where the slope is 0 by the workbook's
    # convention, micrograd's `(out.data > 0) * out.grad` (the numerical gradients of its graphs stay away from 0)
    local=Local("relu_local", "relu alone: a node with x as its child, local derivative 1 where x > 0, else 0",
                signs=(-1.0, 1.0), at_zero=True),
    mistakes=(
        Mistake("relu.graph_cut", "the relu node has no child, so the graph is cut there⟦: create it as "
                "Value(max(x, 0), (self,), 'relu')⟧", role="graph_cut"),
        Mistake("relu.no_backward", no_backward("x.relu()"), role="no_backward"),
        Mistake("relu.slope_at_kink", "at exactly 0, relu has a kink, and the workbook takes its slope there as 0⟦, as "
                "micrograd's (out.data > 0) * out.grad does⟧; this gives 1 at 0 (a test that includes 0, such as "
                "`>= 0`), though it is right on both sides", rules=(("(x >= 0) * g",),)),
        Mistake("relu.slope_one", "relu passes out.grad on only where its input is positive (slope 1) and nothing "
                "where it is negative (slope 0, its output stays 0 there); this passes out.grad on for a negative "
                "input too", rules=(("g",),)),
        Mistake("relu.uses_out_data", "relu's local derivative is a step, 1 where the input is positive and 0 "
                "elsewhere, not its output: this multiplies out.grad by out.data, relu's value, as exp's rule "
                "would⟦; it is (out.data > 0) * out.grad⟧", rules=(("t * g",),)),
        Mistake("relu.wrong_slope", wrong_slope("relu"), role="wrong_slope"),
    ),
    graphs={
        "relu": Expr(("x",), "x.relu()", upstream=3.0, exact=lambda x: (3.0 * (x > 0),)),
        "relu_mul": Expr(("a", "b"), "(a * b).relu()", exact=lambda a, b: (b * (a * b > 0), a * (a * b > 0))),
        # relu of a negative number: no gradient may pass through it (the + a passes 1)
        "relu_negative": Expr(("a",), "(a * a * Value(-1.0)).relu() + a", exact=lambda a: (1.0,)),
        "relu_reuse": Expr(("x",), "x.relu() + x", high=2.0, exact=lambda x: (1.0 + (x > 0),)),
    },
    check=Brick("relu_backward", "relu: forward, and local derivative 1 where x > 0, 0 elsewhere (0 at x = 0)",
                ("relu", "relu_mul", "relu_negative", "relu_reuse"), group="exercise", local=True),
)

EXP = Operation(
    "exp", "exp", "Value.exp", "unary", "exp(x)", ("t * g",), "exp", notebook=4,
    symbol="exp", call="{a}.exp()", labels=frozenset({"exp", "exp()", "e^x", "e**x", "eˣ", "e"}), high=2.0,
    slips=Slips(("x", "t", "g"), UNARY_DOMAINS, functions=("exp",)),
    local=Local("exp_local", "exp alone: a node with x as its child, local derivative exp(x)"),
    mistakes=(
        Mistake("exp.graph_cut", "the exp node has no child, so the graph is cut there⟦: create it as Value(e, "
                "(self,), 'exp')⟧", role="graph_cut"),
        Mistake("exp.no_backward", no_backward("x.exp()"), role="no_backward"),
        Mistake("exp.derivative_is_input", "the local derivative of exp looks like x or 1 here, not the output "
                "itself⟦, exp(x)⟧", rules=(("x * g",), ("g",))),
        Mistake("exp.wrong_slope", wrong_slope("exp"), role="wrong_slope"),
    ),
    graphs={
        "exp": Expr(("x",), "x.exp()", upstream=3.0, exact=lambda x: (3 * math.exp(x),)),
        "exp_mul": Expr(("a", "b"), "(a * b).exp()", high=1.5),
        "exp_reuse": Expr(("x",), "x.exp() + x", high=2.0, exact=lambda x: (math.exp(x) + 1,)),
    },
    check=Brick("exp_backward", "exp: forward, and local derivative exp(x)", ("exp", "exp_mul", "exp_reuse")),
)

POW = Operation(
    "pow", "__pow__", "Value.__pow__", "power", "x ** k", ("k * x ** (k - 1) * g",), "**{k}", notebook=4,
    symbol="**", call="{a} ** {k}", label_parts=("**", "pow", "^"), label_starts=("²", "³", "⁻"), extra_child=True,
    slips=Slips(("x", "k", "t", "g"), (("x", 0.3, 2.5), ("k", 2.0, 4.0), ("g", -3.0, 3.0)), counts=("k",),
                where="x is self.data, t is out.data and g is out.grad, k the exponent"),
    # last, x = 0, where x**k (k >= 2) has slope 0 and a slope that divides by x is undefined
    local=Local("pow_local", "** alone: a node with x as its child, local derivative n * x**(n-1)", signs=(1.0,),
                at_zero=True, power=3),
    mistakes=(
        Mistake("pow.graph_cut", "the ** node has no child, so the graph is cut there⟦: create it as Value(x ** k, "
                "(self,), f'**{k}')⟧", role="graph_cut"),
        Mistake("pow.no_backward", no_backward("x ** k"), role="no_backward"),
        Mistake("pow.derivative_keeps_power", "the local derivative of x**n looks like n * x**n or x**(n-1) here: the "
                "power is not lowered, or the factor n is missing⟦; it is n * x**(n-1)⟧",
                rules=(("k * x ** k * g",), ("x ** (k - 1) * g",))),
        Mistake("pow.exponent_off_by_one", "the local derivative of x**n looks like n * x**(n+1) here: the exponent "
                "must go DOWN by one⟦, n * x**(n-1)⟧", rules=(("k * x ** (k + 1) * g",),)),
        Mistake("pow.wrong_slope", wrong_slope("x ** k"), role="wrong_slope"),
    ),
    graphs={
        "square": Expr(("a",), "a ** 2", upstream=3.0, exact=lambda a: (6 * a,)),
        "cube": Expr(("a",), "a ** 3", exact=lambda a: (3 * a * a,)),
        "inverse": Expr(("a",), "a ** -1", exact=lambda a: (-1 / (a * a),)),
        "sqrt": Expr(("a",), "(a * a) ** 0.5", exact=lambda a: (math.copysign(1.0, a),)),
        "pow_reuse": Expr(("a",), "a ** 3 + a", exact=lambda a: (3 * a * a + 1,)),
        "cube_zero": Expr(("a",), "a ** 3", upstream=3.0, zeros=(0,), exact=lambda a: (0.0,)),
    },
    check=Brick("pow_backward", "** number: forward, and n * x**(n-1)",
                ("square", "cube", "inverse", "sqrt", "pow_reuse", "cube_zero")),
)

NEG = Operation(
    "neg", "__neg__", "Value.__neg__", "unary", "-x", ("-g",), "neg", notebook=4,
    mistakes=(Mistake("neg.graph_cut", graph_cut("-a"), role="graph_cut"),
              Mistake("neg.no_backward", no_backward("-a"), role="no_backward")),
    graphs={
        "neg": Expr(("a",), "-a", upstream=3.0, exact=lambda a: (-3.0,)),
        "neg_reuse": Expr(("a",), "-a * Value(2.5) + a", exact=lambda a: (-1.5,)),
    },
    # -a, a - b and number - a are one exercise (notebook 4's ex_04_neg_sub): each check keeps the learner's other two
    # when defined, so a cycle among them (`-self` written as `0 - self` while `__rsub__` negates) fails that exercise
    check=Brick("neg_sub_backward", "-a, a - b and a - number",
                ("neg", "sub", "sub_self", "sub_number", "neg_reuse", "sub_reuse", "sub_twice", "sub_twins"),
                also=("__sub__",), companions=("Value.__rsub__",)),
)

SUB = Operation(
    "sub", "__sub__", "Value.__neg__ / __sub__ / __rsub__", "binary", "x - y", ("g", "-g"), "-", notebook=4,
    mistakes=(
        Mistake("sub.graph_cut", graph_cut("a - b"), role="graph_cut"),
        Mistake("sub.no_backward", no_backward("a - b"), role="no_backward"),
        # named wherever a value or a gradient is the right one's negative (common.py)
        Mistake("sub.sign_flipped", "the sign is flipped: look at `-`, __neg__, __sub__ or __rsub__ (which operand is "
                "subtracted from which?)"),
    ),
    graphs={
        "sub": Expr(("a", "b"), "a - b", upstream=3.0, exact=lambda a, b: (3.0, -3.0)),
        "sub_self": Expr(("a", "b"), "a * b - a", exact=lambda a, b: (b - 1, a)),
        "sub_number": Expr(("a",), "a - 1.5", exact=lambda a: (1.0,)),
        "sub_reuse": Expr(("a", "b"), "(a - b) * Value(2.5) + a + b", exact=lambda a, b: (3.5, -1.5)),
        # the same operand twice, and two distinct operands of equal data (a * b and b * a): an engine whose
        # __eq__/__hash__ compare data merges them in a set, which these graphs show (issue 34)
        "sub_twice": Expr(("a", "b"), "(a - b) - b", exact=lambda a, b: (1.0, -2.0)),
        "sub_twins": Expr(("a", "b"), "m = a * b\nn = b * a\nout = (m - n) * Value(2.5) + m", exact=lambda a, b: (b, a)),
    },
)

DIV = Operation(
    "div", "__truediv__", "Value.__truediv__", "binary", "x / y", ("g / y", "-x / (y * y) * g"), "/", notebook=4,
    mistakes=(
        Mistake("div.graph_cut", graph_cut("a / b"), role="graph_cut"),
        Mistake("div.no_backward", no_backward("a / b"), role="no_backward"),
        Mistake("div.wrong_sign", "the gradient of b in a / b has the wrong sign⟦: a / b is a * b**-1, so it is "
                "-a / b**2 times out.grad⟧", rules=(("g / y", "x / (y * y) * g"),)),
        Mistake("div.operands_inverted", "a / b divides self by other; this computes other / self (the operands are "
                "inverted)", value="y / x"),
        Mistake("div.multiplies", "a / b computes a * b: divide⟦, self * other**-1⟧", value="x * y"),
    ),
    graphs={
        "div": Expr(("a", "b"), "a / b", upstream=3.0, exact=lambda a, b: (3 / b, -3 * a / (b * b))),
        "div_self": Expr(("a", "b"), "(a + b) / a"),
        "rdiv": Expr(("a", "b"), "(a * b) / 2.0", exact=lambda a, b: (b / 2, a / 2)),
        "div_reuse": Expr(("a", "b"), "a / b + a + b", exact=lambda a, b: (1 / b + 1, 1 - a / (b * b))),
        "div_twice": Expr(("a", "b"), "(a / b) / b", exact=lambda a, b: (1 / (b * b), -2 * a / b**3)),
        "div_twins": Expr(("a", "b"), "m = a * b\nn = b * a\nout = m / n + m", exact=lambda a, b: (b, a)),
        "div_zero": Expr(("a", "b"), "a / b", upstream=3.0, zeros=(0,), exact=lambda a, b: (3 / b, 0.0)),
    },
    check=Brick("div_backward", "a / b, and a / number",
                ("div", "div_self", "rdiv", "div_reuse", "div_twice", "div_twins", "div_zero")),
)

RADD = Operation(
    "radd", "__radd__", "Value.__radd__", "reflected", "x + y", ("g", "g"), "+", notebook=4,
    mistakes=(
        Mistake("radd.graph_cut", graph_cut("number + a"), role="graph_cut"),
        Mistake("radd.no_backward", no_backward("number + a"), role="no_backward"),
        Mistake("radd.calls_mul", "1 + a computes 1 * a: __radd__ must add⟦, return self + other⟧ (is it bound to "
                "__rmul__?)", value="x * y"),
    ),
    graphs={
        "radd": Expr(("a",), "1 + a", upstream=3.0, exact=lambda a: (3.0,)),
        "radd_reuse": Expr(("a",), "(1.5 + a) * Value(2.5) + a", exact=lambda a: (3.5,)),
    },
    more_graphs={"add_number": Expr(("a",), "a + 1", exact=lambda a: (1.0,)),
                 "sum": Expr(("a", "b"), "sum([a, b, a * b])", exact=lambda a, b: (1 + b, 1 + a))},
    # a number on the right of + and * is the learner's + and * wrapping it (given in notebook 4, the spec's for an
    # engine)
    check=Brick("number_operands", "numbers on either side of + and *",
                ("radd", "add_number", "rmul", "mul_number", "sum", "radd_reuse", "rmul_reuse"),
                isolate=("add_local_backward", "mul_local_backward"), also=("__rmul__", "__add__", "__mul__")),
)

RMUL = Operation(
    "rmul", "__rmul__", "Value.__rmul__", "reflected", "x * y", ("y * g", "x * g"), "*", notebook=4,
    mistakes=(
        Mistake("rmul.graph_cut", graph_cut("number * a"), role="graph_cut"),
        Mistake("rmul.no_backward", no_backward("number * a"), role="no_backward"),
        Mistake("rmul.calls_add", "2 * a computes 2 + a: __rmul__ must multiply⟦, return self * other⟧ (is it bound "
                "to __radd__?)", value="x + y"),
    ),
    graphs={
        "rmul": Expr(("a",), "2 * a", upstream=3.0, exact=lambda a: (6.0,)),
        "rmul_reuse": Expr(("a",), "2.5 * a + a", exact=lambda a: (3.5,)),
    },
    more_graphs={"mul_number": Expr(("a",), "a * 2", exact=lambda a: (2.0,))},
)

RSUB = Operation(
    "rsub", "__rsub__", "Value.__rsub__", "reflected", "x - y", ("g", "-g"), "-", notebook=4,
    mistakes=(Mistake("rsub.graph_cut", graph_cut("number - a"), role="graph_cut"),
              Mistake("rsub.no_backward", no_backward("number - a"), role="no_backward")),
    graphs={
        "rsub": Expr(("a",), "1 - a", upstream=3.0, exact=lambda a: (-3.0,)),
        "rsub_mul": Expr(("a", "b"), "2.5 - a * b", exact=lambda a, b: (-b, -a)),
        "rsub_reuse": Expr(("a",), "(2.5 - a) * Value(1.5) + a", exact=lambda a: (-0.5,)),
    },
    check=Brick("rsub_backward", "a number minus a Value", ("rsub", "rsub_mul", "rsub_reuse"),
                companions=("Value.__neg__", "Value.__sub__")),
)

RTRUEDIV = Operation(
    "rtruediv", "__rtruediv__", "Value.__rtruediv__", "reflected", "x / y", ("g / y", "-x / (y * y) * g"), "/",
    notebook=4,
    mistakes=(
        Mistake("rtruediv.graph_cut", graph_cut("number / a"), role="graph_cut"),
        Mistake("rtruediv.no_backward", no_backward("number / a"), role="no_backward"),
        Mistake("rtruediv.operands_inverted", "2 / a calls a.__rtruediv__(2): `other` is the number on the LEFT, so "
                "the result is other / self⟦, other * self**-1⟧; this computes self / other", value="y / x"),
    ),
    graphs={
        "rtruediv": Expr(("a",), "2 / a", upstream=3.0, exact=lambda a: (-6 / (a * a),)),
        "rtruediv_mul": Expr(("a", "b"), "3 / (a * b)", exact=lambda a, b: (-3 / (a * a * b), -3 / (a * b * b))),
        "rtruediv_reuse": Expr(("a",), "2 / a + a", exact=lambda a: (1 - 2 / (a * a),)),
    },
    # notebook 4's number / Value: an exercise check, so that engines written to the spec need not define it
    check=Brick("rtruediv_backward", "a number divided by a Value", ("rtruediv", "rtruediv_mul", "rtruediv_reuse"),
                group="exercise"),
)

OPERATIONS: tuple[Operation, ...] = (ADD, MUL, TANH, RELU, EXP, POW, NEG, SUB, DIV, RADD, RMUL, RSUB, RTRUEDIV)

# ---------------------------------------------------------------- lookups derived from the declarations

BY_KIND: dict[str, Operation] = {op.kind: op for op in OPERATIONS}
BY_METHOD: dict[str, Operation] = {op.method: op for op in OPERATIONS}
BY_SYMBOL: dict[str, Operation] = {op.symbol: op for op in OPERATIONS if op.symbol}
SENTENCES: dict[str, str] = {m.id: m.sentence for op in OPERATIONS for m in op.mistakes}
METHOD_OF: dict[str, str] = {op.kind: op.shown for op in OPERATIONS}
LOCAL_CHECK: dict[str, str] = {op.target: op.local.name for op in OPERATIONS if op.local}
