"""The grader's own scaffolding: Value operations, backward() and a model, written on the fixed API.

A check judges only the learner functions it names (its targets, `needs.NEEDS`). While its probe runs, every other
operation of the learner's `Value` (+, *, tanh, ..., backward) is swapped for the grader's own below, and so are the
net's model and loss where the check does not name them; the learner's own method, if it calls `self * -1` or
`other ** -1`, gets the grader's `*` or `**` too. So a correct method earns its points whatever the rest of the
notebook holds, and the swap is undone when the probe returns.

The operations are the probe side's op table (`op_table.py`, written from their declarations in checks/ops.py). The
grader's nodes are made with the learner's constructor (`graphs.make_node`), their `_backward` adds each local
slope times `out.grad` to the child's grad; the grader's backward() seeds the root and calls every `_backward` once
in a reverse topological order fixed by how the graph was built (`graphs.backward_order`). No answer of any check is
here: only the calculus every check's graphs are made of.
"""

from __future__ import annotations

import contextlib
from collections import ChainMap
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any

from .graphs import backward_order, leaf, make_node
from .op_table import METHODS
from .safe import read_number

Slopes = Sequence[float]


def _node(value: Any, data: float, kids: Sequence[Any], op: str, slopes: Slopes) -> Any:
    """A grader node: `data`, children `kids`, and a `_backward` adding slope * out.grad to each child's grad."""
    out = make_node(value, data, kids, op)

    def _backward() -> None:
        g = read_number(out.grad, "out.grad")
        for kid, slope in zip(kids, slopes):
            kid.grad = read_number(kid.grad, "a child's grad") + slope * g

    out._backward = _backward
    return out


def _number(obj: Any) -> bool:
    return isinstance(obj, (int, float)) and not isinstance(obj, bool)


_MADE: dict[int, tuple[type, dict[str, Callable[..., Any]]]] = {}  # the last few classes' operations, by id


def operations(value: type) -> dict[str, Callable[..., Any]]:
    """The grader's Value operations for the learner's class `value`, by attribute name (made once per class)."""
    made = _MADE.get(id(value))
    if made is not None and made[0] is value:
        return made[1]
    if len(_MADE) >= 8:  # a kernel redefines Value as its cells run again: keep only the latest classes
        del _MADE[next(iter(_MADE))]
    ops = _operations(value)
    _MADE[id(value)] = (value, ops)
    return ops


def _operations(value: type) -> dict[str, Callable[..., Any]]:

    def data(v: Any) -> float:
        return read_number(v.data, "a Value's data")

    def wrap(other: Any) -> Any:
        return other if isinstance(other, value) else leaf(value, other) if _number(other) else None

    def made(form: str, label: str, forward: Callable[..., float], adds: Callable[..., Slopes]) -> Callable[..., Any]:
        def node(kids: Sequence[Any], x: float, y: float | None, k: Any, op: str = label) -> Any:
            t = forward(x, y, k)
            return _node(value, t, kids, op, adds(x, y, t, k, 1.0))  # the slopes: out.grad of 1

        if form == "unary":
            return lambda self: node((self,), data(self), None, None)
        if form == "power":
            return lambda self, k: node((self,), data(self), None, k, label.format(k=k)) if _number(k) else NotImplemented

        def method(self: Any, other: Any) -> Any:
            other = wrap(other)
            if other is None:
                return NotImplemented
            left, right = (other, self) if form == "reflected" else (self, other)
            return node((left, right), data(left), data(right), None)

        return method

    def backward(self: Any) -> None:
        order = backward_order(self)
        self.grad = 1.0
        for node in order:
            node._backward()

    return {**{name: made(*row) for name, row in METHODS.items()}, "backward": backward}


# ---------------------------------------------------------------- the net: a model and its loss

def model_class(value: type) -> Callable[[int, Sequence[int]], Any]:
    """The grader's MLP(nin, nouts) on the learner's Value: tanh neurons, parameters layer by layer, neuron by neuron,
    weights then bias; its parts carry the workbook's names (layers, neurons, w, b) and it has zero_grad()."""

    class Neuron:
        def __init__(self, nin: int, **_: Any) -> None:
            self.w = [leaf(value, 0.0) for _ in range(nin)]
            self.b = leaf(value, 0.0)

        def __call__(self, x: Sequence[Any]) -> Any:
            act = self.b
            for wi, xi in zip(self.w, x):
                act = act + wi * xi
            return act.tanh()

        def parameters(self) -> list[Any]:
            return [*self.w, self.b]

    class Layer:
        def __init__(self, nin: int, nout: int, **_: Any) -> None:
            self.neurons = [Neuron(nin) for _ in range(nout)]

        def __call__(self, x: Sequence[Any]) -> Any:
            outs = [n(x) for n in self.neurons]
            return outs[0] if len(outs) == 1 else outs

        def parameters(self) -> list[Any]:
            return [p for n in self.neurons for p in n.parameters()]

    class MLP:
        def __init__(self, nin: int, nouts: Sequence[int]) -> None:
            sizes = [nin, *nouts]
            self.layers = [Layer(sizes[i], sizes[i + 1]) for i in range(len(nouts))]

        def __call__(self, x: Sequence[Any]) -> Any:
            for layer in self.layers:
                x = layer(x)
            return x

        def parameters(self) -> list[Any]:
            return [p for layer in self.layers for p in layer.parameters()]

        def zero_grad(self) -> None:
            for p in self.parameters():
                p.grad = 0.0

    return MLP


def mse_loss(model: Any, xs: Sequence[Any], ys: Sequence[float]) -> Any:
    """The grader's mean squared error of a model with one output, as a Value."""
    total = None
    for x, y in zip(xs, ys):
        err = (model(x) - y) ** 2
        total = err if total is None else total + err
    return total * (1.0 / len(xs))


# ---------------------------------------------------------------- swapping it in

MISSING = object()


class _StandIns(Mapping[str, Any]):
    """The grader's stand-ins a probe reads before the learner's namespace; the model class is made on first use, for
    this probe alone (most probes never read it, and a fresh one per probe keeps a learner's patch from outliving it)."""

    def __init__(self, made: dict[str, Any], model_on: type | None) -> None:
        self._made = made
        self._model_on = model_on  # the learner's Value to make the grader's MLP on, until it is made

    def __getitem__(self, key: str) -> Any:
        if key == "MLP" and self._model_on is not None:
            self._made["MLP"], self._model_on = model_class(self._model_on), None
        return self._made[key]

    def __contains__(self, key: object) -> bool:
        return key in self._made or (key == "MLP" and self._model_on is not None)

    def __iter__(self) -> Iterator[str]:
        return iter([*self._made, *(["MLP"] if self._model_on is not None else [])])

    def __len__(self) -> int:
        return len(self._made) + (self._model_on is not None)


@contextlib.contextmanager
def scaffolded(ns: Mapping[str, Any], keep: Sequence[str]) -> Iterator[Mapping[str, Any]]:
    """While the block runs, whatever of the scaffolding the check does not name in `keep` (targets such as
    `Value.__add__`, `MLP`) stands in the learner's place: on the learner's Value class, and in the namespace its
    functions look names up in. Yields the namespace the probe should read (the grader's model and loss first)."""
    kept = set(keep)
    value = ns.get("Value")
    on_class: list[tuple[str, Any]] = []
    in_ns: list[tuple[str, Any]] = []
    swaps: dict[str, Any] = {}
    model_on = None  # the grader's model, when the namespace has none to stand in for, is made if the probe reads it
    try:
        if isinstance(value, type):
            own = vars(value)  # a live view of the class's own attributes
            for name, method in operations(value).items():
                if f"Value.{name}" in kept:
                    continue
                on_class.append((name, own.get(name, MISSING)))
                try:
                    setattr(value, name, method)
                except (AttributeError, TypeError):  # a class that refuses: its own method runs
                    on_class.pop()
            if "MLP" not in kept:
                if "MLP" in ns:
                    swaps["MLP"] = model_class(value)
                else:
                    model_on = value
        if "mse_loss" not in kept:
            swaps["mse_loss"] = mse_loss
        if isinstance(ns, MutableMapping):  # the learner's functions look these up in their globals (train: mse_loss)
            for name, obj in swaps.items():
                if name in ns:
                    in_ns.append((name, ns[name]))
                    ns[name] = obj
        yield ChainMap(_StandIns(swaps, model_on), ns)  # type: ignore[arg-type]
    finally:
        for name, before in reversed(in_ns):
            ns[name] = before  # type: ignore[index]
        for name, before in reversed(on_class):
            try:  # (a plain try: this runs for every operation after every case)
                if before is MISSING:
                    delattr(value, name)
                else:
                    setattr(value, name, before)
            except (AttributeError, TypeError):
                pass
