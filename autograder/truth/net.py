"""The grader's own plain-float MLP: forward, mean squared error and gradient descent."""

from __future__ import annotations

import math
import operator
import random
from collections.abc import Sequence

from .memo import remembered
from .numeric import Estimate, central_difference, gradient


def parameter_count(nin: int, nouts: Sequence[int]) -> int:
    """Weights and biases of an MLP(nin, nouts)."""
    sizes = [nin, *nouts]
    return sum((sizes[i] + 1) * sizes[i + 1] for i in range(len(nouts)))


def random_weights(rng: random.Random, nin: int, nouts: Sequence[int]) -> list[float]:
    """Small weights, so every tanh argument stays well inside +-2.5."""
    return [round(rng.uniform(-0.6, 0.6), 3) for _ in range(parameter_count(nin, nouts))]


def forward(
    weights: Sequence[float],
    nin: int,
    nouts: Sequence[int],
    x: Sequence[float],
    bias_first: bool = False,
    activation: bool = True,
) -> list[float]:
    """The outputs of tanh layers whose parameters are listed layer by layer, neuron by neuron, weights then bias."""
    act = list(x)
    i = 0
    for nout in nouts:
        n, nxt = len(act), []
        for _ in range(nout):
            if bias_first:
                b, w = weights[i], weights[i + 1:i + 1 + n]
            else:
                w, b = weights[i:i + n], weights[i + n]
            i += n + 1
            # b + w0*x0 + w1*x1 + ..., added in that order as before, at C speed: a training check calls this
            # thousands of times (numerical gradients of the loss)
            z = sum(map(operator.mul, w, act), b)
            nxt.append(math.tanh(z) if activation else z)
        act = nxt
    return act


def mse(weights: Sequence[float], nin: int, nouts: Sequence[int], xs: Sequence[Sequence[float]], ys: Sequence[float]) -> float:
    """Mean of squared errors of a one-output MLP."""
    return sum((forward(weights, nin, nouts, x)[0] - y) ** 2 for x, y in zip(xs, ys)) / len(xs)


@remembered(256, list)
def mse_gradient(weights: Sequence[float], nin: int, nouts: Sequence[int], xs: Sequence[Sequence[float]],
                 ys: Sequence[float]) -> list[Estimate]:
    """The numerical gradient of `mse` with respect to every parameter."""
    return gradient(lambda *w: mse(w, nin, nouts, xs, ys), weights)


@remembered(256, list)
def descend(
    nin: int,
    nouts: Sequence[int],
    weights: Sequence[float],
    xs: Sequence[Sequence[float]],
    ys: Sequence[float],
    steps: int,
    lr: float,
    mistake: str | None = None,
    quick: bool = False,
) -> list[float]:
    """Losses recorded by plain gradient descent (or by one of the known wrong versions of it).

    `quick` takes one central difference per parameter instead of the Richardson estimate: about 1e-9 off, enough
    to recognise a known wrong version, and four times faster.
    """
    w = list(weights)
    acc = [0.0] * len(w)
    losses = []
    for _ in range(steps):
        loss = mse(w, nin, nouts, xs, ys)
        f = lambda *p: mse(p, nin, nouts, xs, ys)  # noqa: E731
        if quick:
            g = [central_difference(f, w, i, 1e-6 * max(1.0, abs(wi))) for i, wi in enumerate(w)]
        else:
            g = [e.value for e in gradient(f, w)]
        if mistake == "no_zero_grad":
            acc = [a + gi for a, gi in zip(acc, g)]
            g = acc
        sign = 1.0 if mistake == "ascent" else -1.0
        if mistake == "data_step":  # p.data -= lr * p.data: a step that ignores the gradient
            g = list(w)
        w = [wi + sign * lr * gi for wi, gi in zip(w, g)]
        losses.append(mse(w, nin, nouts, xs, ys) if mistake == "record_after" else loss)
    return losses
