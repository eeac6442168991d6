"""Expressions written once, evaluated on the learner's Value and on the grader's own floats."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..probes.graphs import compile_expression  # the same text runs on the learner's Values
from ..probes.op_table import METHODS
from .numeric import partial_derivative


class Num(float):
    """The grader's plain float, with every Value operation an expression may use (+, *, tanh, exp, ...): each is the
    operation's forward on floats, from its declaration (checks/ops.py, by way of the probe side's op table)."""


def _num_method(form: str, forward: Callable[..., float]) -> Callable[..., Num]:
    if form == "unary":
        return lambda self: Num(forward(float(self), None, None))
    if form == "power":
        return lambda self, k: Num(forward(float(self), None, float(k)))
    if form == "reflected":
        return lambda self, o: Num(forward(float(o), float(self), None))
    return lambda self, o: Num(forward(float(self), float(o), None))


for _name, (_form, _, _forward, _) in METHODS.items():
    setattr(Num, _name, _num_method(_form, _forward))


def _on_floats(fn: Callable[..., object]) -> Callable[..., float]:
    """An expression's function evaluated on the grader's own floats."""
    return lambda *xs: float(fn(*(Num(x) for x in xs)))  # type: ignore[arg-type]


@dataclass(frozen=True)
class Expr:
    """A small graph: statements over the leaves, the last one assigning `out`."""

    params: tuple[str, ...]
    body: str
    upstream: float = 1.0  # the output is multiplied by this, so out.grad upstream is not 1
    exact: Callable[..., Sequence[float]] | None = field(default=None, compare=False)
    low: float = 0.3
    high: float = 2.5
    tied: bool = False  # every leaf gets the same data (distinct nodes, equal values)
    misconception: str | None = None  # the likely mistake when this graph fails and the numbers match no known one
    zeros: tuple[int, ...] = ()  # leaves whose data is exactly 0 (a slope that divides by the data fails there)
    again: str = ""  # two graphs, backward() on `out1` then on `out`, grads zeroed between ("leaves" or "all")

    @property
    def source(self) -> str:
        """The statements, with the upstream factor applied to `out`."""
        src = self.body if "out =" in self.body else f"out = {self.body}"
        if self.upstream != 1.0:
            src += f"\nout = out * Value({self.upstream!r})"
        return src

    @functools.cached_property
    def function(self) -> Callable[..., object]:
        """The expression as a Python function of its leaves."""
        return compile_expression(self.params, self.source, Num)

    def reference(self, *xs: float) -> float:
        """The grader's own float value of the expression."""
        return float(self.function(*(Num(x) for x in xs)))

    def one_use_partials(self, param: str, xs: Sequence[float]) -> list[float]:
        """For a leaf the source uses more than once: the gradient through each use alone (the others held fixed).

        A leaf whose gradient equals one of these lost the others: some _backward set `grad = ...` where it must
        accumulate `grad += ...`."""
        spans = [m.span() for m in re.finditer(rf"\b{re.escape(param)}\b", self.source)]
        if len(spans) < 2:
            return []
        i, alone = self.params.index(param), f"{param}__alone"
        partials = []
        for start, end in spans:
            body = self.source[:start] + alone + self.source[end:]
            partials.append(partial_derivative(_on_floats(compile_expression((*self.params, alone), body, Num)),
                                               [*xs, xs[i]], len(xs)).value)
        return partials

    def repro(self, inputs: Sequence[float], expected: Sequence[float] | None = None, backward: bool = True) -> str:
        """Lines a learner can paste to rebuild this graph and print its gradients (or, forward only, its value)."""
        leaves = "; ".join(f"{p} = Value({x!r})" for p, x in zip(self.params, inputs))
        if not backward:
            return "\n".join([leaves, *self.source.splitlines(), "print(out.data)"])
        grads = ", ".join(f"{p}.grad" for p in self.params)
        lines = [leaves, *self.source.splitlines()]
        if self.again:  # the first graph's backward(), then the grads zeroed as a training loop does
            zeroed = ", ".join(self.params) if self.again == "leaves" else "every node of out1's graph"
            lines += ["out1.backward()", f"# set .grad = 0 on {zeroed}"]
        lines += ["out.backward()", f"print(out.data, {grads})"]
        if expected is not None:
            lines[-1] += "  # expected grads: " + ", ".join(f"{g:.6g}" for g in expected)
        return "\n".join(lines)
