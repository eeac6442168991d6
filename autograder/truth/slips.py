"""Recovering a wrong formula: plausible slips of the right one, evaluated on a case's own inputs.

A learner's wrong local rule or numeric exercise usually differs from the right formula by one slip: a dropped or
extra factor, the input for the output, a sign, a power off by one, swapped operands, a regrouping of precedence,
one more application of the function, a constant step or scale, data and grad mixed up. `slips` writes every such
variant of a formula (one slip each, by rewriting its syntax tree); `recover` keeps those that give the learner's
numbers on every case, and names one only when exactly one (up to algebraic equality) does. Nothing here runs
learner code: the formulas are the grader's own, evaluated on plain floats.
"""

from __future__ import annotations

import ast
import copy
import functools
import math
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from .memo import remembered


class Vec(tuple):
    """A vector of floats for the net's formulas (a neuron's weights, a data set's outputs): arithmetic is element by
    element, with another Vec of the same length or with a number; `dot` and `sum` make numbers of it."""

    def _zip(self, other: object, op: Callable[[float, float], float]) -> Vec:
        if isinstance(other, Vec):
            if len(other) != len(self):
                raise ValueError("vectors of different lengths")
            return Vec(op(a, b) for a, b in zip(self, other))
        if isinstance(other, (int, float)):
            return Vec(op(a, other) for a in self)
        return NotImplemented

    def _rzip(self, other: object, op: Callable[[float, float], float]) -> Vec:
        return self._zip(other, lambda a, b: op(b, a))

    def __add__(self, o: object) -> Vec:  # type: ignore[override]
        return self._zip(o, lambda a, b: a + b)

    def __radd__(self, o: object) -> Vec:
        return self._rzip(o, lambda a, b: a + b)

    def __sub__(self, o: object) -> Vec:
        return self._zip(o, lambda a, b: a - b)

    def __rsub__(self, o: object) -> Vec:
        return self._rzip(o, lambda a, b: a - b)

    def __mul__(self, o: object) -> Vec:  # type: ignore[override]
        return self._zip(o, lambda a, b: a * b)

    def __rmul__(self, o: object) -> Vec:  # type: ignore[override]
        return self._rzip(o, lambda a, b: a * b)

    def __truediv__(self, o: object) -> Vec:
        return self._zip(o, lambda a, b: a / b)

    def __rtruediv__(self, o: object) -> Vec:
        return self._rzip(o, lambda a, b: a / b)

    def __pow__(self, o: object) -> Vec:
        return self._zip(o, lambda a, b: a**b)

    def __rpow__(self, o: object) -> Vec:
        return self._rzip(o, lambda a, b: a**b)

    def __neg__(self) -> Vec:
        return Vec(-a for a in self)

    def __abs__(self) -> Vec:
        return Vec(abs(a) for a in self)

    def __float__(self) -> float:
        raise TypeError("a vector is not a number")


def _dot(a: Vec, b: Vec) -> float:
    if not (isinstance(a, Vec) and isinstance(b, Vec)) or len(a) != len(b):
        raise TypeError("dot takes two vectors of one length")
    return math.fsum(x * y for x, y in zip(a, b))


def _each(f: Callable[[float], float]) -> Callable[[object], object]:
    return lambda v: Vec(f(a) for a in v) if isinstance(v, Vec) else f(v)  # type: ignore[arg-type, attr-defined]


FUNCTIONS: dict[str, Callable[..., float]] = {"tanh": _each(math.tanh), "exp": _each(math.exp), "abs": abs, "max": max,
                                              "min": min, "dot": _dot, "sum": lambda v: math.fsum(v)}
CONSTANT_SLIPS = (lambda c: c + 1, lambda c: c - 1, lambda c: 2 * c, lambda c: c / 2, lambda c: -c, lambda c: 0 * c)
CALL_SWAPS = {"max": "min", "min": "max", "tanh": "exp", "exp": "tanh"}
SWAP_OPS = {ast.Add: (ast.Sub,), ast.Sub: (ast.Add,), ast.Mult: (ast.Div, ast.Add), ast.Div: (ast.Mult,),
            ast.Pow: (ast.Mult,)}


@dataclass(frozen=True)
class Recovery:
    """The one slip that explains the learner's numbers: their formula beside the right one."""

    got: str
    want: str
    where: str = ""  # what the names stand for, such as "t is the output, x the input"



def _mutated(node: ast.AST, names: Sequence[str], functions: Sequence[str],
             counts: Sequence[str] = ()) -> Iterator[ast.AST]:
    """Every tree with one slip in it: at this node, or in one of its sub-expressions (untouched parts shared)."""
    if isinstance(node, ast.expr):
        yield from _variants(node, names, functions, counts)
    for field, value in ast.iter_fields(node):
        if isinstance(value, ast.AST) and not isinstance(value, (ast.expr_context, ast.operator, ast.unaryop)):
            for new in _mutated(value, names, functions, counts):
                clone = copy.copy(node)
                setattr(clone, field, new)
                yield clone
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, ast.expr):
                    for new in _mutated(item, names, functions, counts):
                        clone = copy.copy(node)
                        setattr(clone, field, [*value[:i], new, *value[i + 1:]])
                        yield clone


def _variants(node: ast.AST, names: Sequence[str], functions: Sequence[str],
              counts: Sequence[str] = ()) -> Iterator[ast.AST]:
    """Every one-slip replacement of one node."""

    def c(n: ast.AST) -> ast.AST:  # parts are shared, never changed: a slip builds new nodes around them
        return n

    if isinstance(node, ast.Name) and node.id in names:
        for other in names:  # the input for the output, data for grad, one operand for the other
            if other != node.id:
                yield ast.Name(other, ast.Load())
        for f in functions:  # one more application of the function
            yield ast.Call(ast.Name(f, ast.Load()), [c(node)], [])
        for k in (2, 0.5):  # a step twice (or half) as large
            yield ast.BinOp(ast.Constant(k), ast.Mult(), c(node))
        if node.id in counts:  # a count off by one (an exponent k as k - 1)
            for op in (ast.Add(), ast.Sub()):
                yield ast.BinOp(c(node), op, ast.Constant(1))
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        for n in names:  # one more factor, or divisor, inside a product
            for op in (ast.Mult(), ast.Div()):
                yield ast.BinOp(c(node), op, ast.Name(n, ast.Load()))
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        for slip in CONSTANT_SLIPS:
            yield ast.Constant(slip(node.value))
    if isinstance(node, ast.BinOp):
        left, right = node.left, node.right
        yield c(left)  # a dropped factor, term, divisor or power
        if not isinstance(node.op, (ast.Pow,)):
            yield c(right)
        if isinstance(node.op, ast.Sub):
            yield ast.UnaryOp(ast.USub(), c(right))
        for op in SWAP_OPS.get(type(node.op), ()):  # a sign, * for /, + for *
            yield ast.BinOp(c(left), op(), c(right))
        if isinstance(node.op, (ast.Sub, ast.Div, ast.Pow)):  # swapped operands
            yield ast.BinOp(c(right), node.op, c(left))
        if isinstance(node.op, ast.Pow):  # a power off by one
            for op in (ast.Add(), ast.Sub()):
                yield ast.BinOp(c(left), ast.Pow(), ast.BinOp(c(right), op, ast.Constant(1)))
        if isinstance(right, ast.BinOp):  # precedence: a op (b op2 c) read as (a op b) op2 c
            yield ast.BinOp(ast.BinOp(c(left), node.op, c(right.left)), right.op, c(right.right))
        if isinstance(left, ast.BinOp):  # and (a op b) op2 c read as a op (b op2 c)
            yield ast.BinOp(c(left.left), left.op, ast.BinOp(c(left.right), node.op, c(right)))
    if isinstance(node, ast.Call) and node.args:
        for arg in node.args:  # the function left out
            yield c(arg)
        if len(node.args) == 1 and isinstance(node.args[0], ast.BinOp):  # its parenthesis closed early (or late)
            inner = node.args[0]
            yield ast.BinOp(ast.Call(node.func, [c(inner.left)], []), inner.op, c(inner.right))
            yield ast.BinOp(c(inner.left), inner.op, ast.Call(node.func, [c(inner.right)], []))
        if isinstance(node.func, ast.Name) and node.func.id == "abs" and len(node.args) == 1:  # a square for a distance
            yield ast.BinOp(c(node.args[0]), ast.Pow(), ast.Constant(2))
        if isinstance(node.func, ast.Name) and node.func.id in CALL_SWAPS:  # max for min
            yield ast.Call(ast.Name(CALL_SWAPS[node.func.id], ast.Load()), node.args, node.keywords)
        if isinstance(node.func, ast.Name) and node.func.id in ("max", "min") and len(node.args) > 1:
            for i in range(len(node.args)):  # one of the numbers compared left out
                rest = [a for j, a in enumerate(node.args) if j != i]
                yield rest[0] if len(rest) == 1 else ast.Call(node.func, rest, [])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        yield c(node.operand)


def slips(formula: str, names: Sequence[str], functions: Sequence[str] = (), counts: Sequence[str] = ()) -> list[str]:
    """The formula's one-slip variants (their text), a sign, a factor of 2, a square or a root on the whole
    included."""
    tree = ast.parse(formula, mode="eval")
    out = [ast.unparse(t) for t in _mutated(tree.body, names, functions, counts)]  # (text only: no locations needed)
    out += list(_parentheses_left_out(formula))
    out += [f"-({formula})", f"2 * ({formula})", f"({formula}) / 2", f"({formula}) ** 2", f"({formula}) ** 0.5"]
    out += [f"({formula}) * {n}" for n in names] + [f"({formula}) / {n}" for n in names]  # an extra factor
    return list(dict.fromkeys(t for t in out if t != formula))


def substitute(formula: str, name: str, text: str) -> str:
    """The formula with every use of `name` replaced by the expression `text`."""
    inner = ast.parse(text, mode="eval").body

    class Put(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            return inner if node.id == name else node

    return ast.unparse(ast.fix_missing_locations(Put().visit(ast.parse(formula, mode="eval"))))


def _parentheses_left_out(formula: str) -> Iterator[str]:
    """The formula with one pair of grouping parentheses left out (`x ** (k - 1)` written `x ** k - 1`)."""
    opened: list[int] = []
    for i, ch in enumerate(formula):
        if ch == "(":
            opened.append(i)
        elif ch == ")" and opened:
            start = opened.pop()
            if start and (formula[start - 1].isalnum() or formula[start - 1] == "_"):
                continue  # a call's parentheses
            text = formula[:start] + formula[start + 1:i] + formula[i + 1:]
            try:
                yield ast.unparse(ast.parse(text, mode="eval"))
            except SyntaxError:  # pragma: no cover - removing a balanced pair keeps the text well formed
                continue


@functools.lru_cache(maxsize=8192)
def _compiled(formula: str) -> object:
    return compile(formula, "<formula>", "eval")


def evaluate(formula: str, env: Mapping[str, object]) -> float | None:
    """The formula's value on these names (None where it is undefined there)."""
    try:
        value = eval(_compiled(formula), {"__builtins__": {}, **FUNCTIONS}, dict(env))
        value = float(value)
    except (ArithmeticError, ValueError, TypeError, AttributeError, NameError, RecursionError):
        return None
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class Space:
    """Where a formula lives: its names, the functions a slip may apply once more, each free name's range, and the
    names computed from others (the output t = tanh(x) is not free)."""

    formula: str
    names: tuple[str, ...]
    functions: tuple[str, ...] = ()
    domains: tuple[tuple, ...] = ()  # (name, low, high) for a number, (name, low, high, n) for a Vec of n
    derived: tuple[tuple[str, str], ...] = ()
    where: str = ""
    fixed: tuple[tuple[str, object], ...] = ()  # names bound to the same thing everywhere (a function f)
    depth: int = 1  # slips on top of slips, for short formulas
    inner: tuple[tuple[str, str], ...] = ()  # a name that stands for a formula of its own, which may hold the slip
    counts: tuple[str, ...] = ()  # names that count (an exponent): a slip may put them off by one

    @property
    def full(self) -> str:
        """The formula with every inner name written out."""
        text = self.formula
        for name, inner in self.inner:
            text = substitute(text, name, inner)
        return text

    def env(self, **values: object) -> dict[str, object]:
        """The names' values at a point: the fixed ones, then these, then the derived ones."""
        env: dict[str, object] = {**dict(self.fixed), **values}
        for name, expr in self.derived:
            env[name] = evaluate(expr, env) or 0.0
        return env

    def points(self, n: int = 6) -> list[dict[str, object]]:
        """Points of the space, free names drawn, derived ones computed."""
        rng = random.Random(self.formula)
        return [self.env(**draw(rng, self.domains)) for _ in range(n)]

    def candidates(self) -> list[str]:
        """The one-slip variants, distinct from the formula and from each other."""
        return distinct_slips(self)


def draw(rng: random.Random, domains: Sequence[tuple]) -> dict[str, object]:
    """A value for each free name: a number in (low, high), or with a fourth entry n, a Vec of n such numbers."""
    out: dict[str, object] = {}
    for name, lo, hi, *size in domains:
        out[name] = Vec(rng.uniform(lo, hi) for _ in range(size[0])) if size else rng.uniform(lo, hi)
    return out


@remembered(512, list)
def distinct_slips(space: Space) -> list[str]:
    """The slips that differ from the formula and from each other somewhere in the space (the shortest text kept
    for each function), so that two matches always mean two different formulas."""
    formula = space.full
    points = space.points()

    def signature(text: str) -> tuple[float | None, ...]:
        return tuple(None if v is None else round(v, 9) for v in (evaluate(text, p) for p in points))

    seen = {signature(formula)}
    kept = []
    texts = slips(space.formula, space.names, space.functions, space.counts)
    if space.depth > 1:
        texts += [t2 for t in texts for t2 in slips(t, space.names, space.functions, space.counts)]
    for name, inner in space.inner:  # a slip outside (the inner formula right), or inside it (the outer right)
        texts = [substitute(t, name, inner) for t in texts]
        texts += [substitute(space.formula, name, s) for s in slips(inner, space.names, space.functions, space.counts)]
    for text in sorted(dict.fromkeys(texts), key=len):
        sig = signature(text)
        if sig not in seen and any(v is not None for v in sig):
            seen.add(sig)
            kept.append(text)
    return kept


def close(got: float, want: float) -> bool:
    """Equal but for rounding: a slip is recognised only when it gives the learner's number to about 9 digits."""
    return abs(got - want) <= 1e-9 * max(1.0, abs(got), abs(want))


def recover(formula: str, candidates: Sequence[str], matches: Callable[[str], bool], where: str = "",
            same: Callable[[str, str], bool] | None = None) -> Recovery | None:
    """The one candidate for which `matches` holds, beside the right formula; None when none or several do.
    Candidates that `same` finds equal wherever the case can be (`k * x` and `k * x ** (k - 2)` for k = 3) count as
    one, shown by the shortest."""
    found = [c for c in candidates if matches(c)]
    if len(found) > 1 and same is not None and all(same(found[0], c) for c in found[1:]):
        found = found[:1]  # candidates come shortest first
    return Recovery(_pretty(found[0]), _pretty(formula), where) if len(found) == 1 else None


def equal_on(space: Space, fixed: Mapping[str, object]) -> Callable[[str, str], bool]:
    """Whether two formulas agree at points of the space whose names in `fixed` keep the case's values."""
    rng = random.Random(0)
    points = [space.env(**{**draw(rng, space.domains), **fixed}) for _ in range(4)]

    def same(a: str, b: str) -> bool:
        values = [(evaluate(a, p), evaluate(b, p)) for p in points]
        return all(x is not None and y is not None and close(x, y) for x, y in values)

    return same


def _pretty(text: str) -> str:
    """Formula text as a learner writes it: no redundant parentheses, `x ** 2` as `x**2`."""
    return ast.unparse(ast.parse(text, mode="eval")).replace(" ** ", "**")
