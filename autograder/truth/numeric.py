"""Numerical truth: derivatives of the grader's own plain-float expressions, and the tolerance."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .memo import remembered

# Relative step for the coarsest central difference (then h/2 and h/4, each pair Richardson-extrapolated).
# Around 1e-3 the truncation error after one Richardson step (~h^4) and the
# rounding error (~eps/h) are both near 1e-13 for the smooth functions we check.
STEP = 1e-3
# If the two central differences disagree by more than this (relative), the
# estimate is not trustworthy at this input (kink, overflow, cancellation).
UNRELIABLE = 1e-6


@dataclass(frozen=True)
class Estimate:
    """A numerical derivative and how far it may be off."""

    value: float
    error: float

    @property
    def reliable(self) -> bool:
        """True when the estimate is finite and its two step sizes agree."""
        return math.isfinite(self.value) and self.error <= UNRELIABLE * max(1.0, abs(self.value))


def central_difference(f: Callable[..., float], xs: Sequence[float], i: int, h: float) -> float:
    """Central difference of f along input i with absolute step h."""
    up = list(xs)
    down = list(xs)
    up[i] = xs[i] + h
    down[i] = xs[i] - h
    return (float(f(*up)) - float(f(*down))) / (2.0 * h)


def partial_derivative(f: Callable[..., float], xs: Sequence[float], i: int) -> Estimate:
    """df/dx_i by central differences with a relative step and one Richardson step."""
    h = STEP * max(1.0, abs(xs[i]))

    def at(dx: float) -> float:
        moved = list(xs)
        moved[i] = xs[i] + dx
        return float(f(*moved))

    try:
        f0, up, down, up2, down2 = at(0.0), at(h), at(-h), at(h / 2.0), at(-h / 2.0)
        up4, down4 = at(h / 4.0), at(-h / 4.0)
    except (OverflowError, ZeroDivisionError, ValueError):
        return Estimate(math.nan, math.inf)
    d1, d2, d4 = (up - down) / (2.0 * h), (up2 - down2) / h, (up4 - down4) / (h / 2.0)
    # Two Richardson values; their gap bounds the error of the coarser one, so it is a safe error bar for the
    # finer one we return (one Richardson step on d1, d2 alone would only bound d1's much larger error).
    r1, r2 = (4.0 * d2 - d1) / 3.0, (4.0 * d4 - d2) / 3.0
    # A kink exactly at x (abs(x) at 0) is invisible to symmetric differences; the one-sided slopes show it:
    # their gap is h * f'' for a smooth f (so it halves with h) but the size of the jump at a kink (so it stays).
    gap, gap2 = (up - 2.0 * f0 + down) / h, (up2 - 2.0 * f0 + down2) / (h / 2.0)
    kink = abs(2.0 * gap2 - gap)
    return Estimate(r2, max(abs(r2 - r1), kink))


def gradient(f: Callable[..., float], xs: Sequence[float]) -> list[Estimate]:
    """All partial derivatives of f at xs."""
    return [partial_derivative(f, xs, i) for i in range(len(xs))]


# The same, remembered: for the grader's own long-lived pure functions (an expression's `reference`, a module-level
# function), never for a lambda made per call, which could never be looked up again.
known_gradient = remembered(8192, list)(gradient)


def grad_close(got: float, expected: float, scale: float, rtol: float, atol: float) -> bool:
    """|g - n| <= atol * max(1, |f|) + rtol * max(|g|, |n|), false for any non-finite number."""
    if not (math.isfinite(got) and math.isfinite(expected)):
        return False
    return abs(got - expected) <= atol * max(1.0, abs(scale)) + rtol * max(abs(got), abs(expected))


def value_close(got: float, expected: float, rtol: float = 1e-9) -> bool:
    """A forward value matches at a tight relative tolerance."""
    if not (math.isfinite(got) and math.isfinite(expected)):
        return False
    return abs(got - expected) <= rtol * max(1.0, abs(expected))


def generic_inputs(rng: random.Random, n: int, low: float = 0.3, high: float = 2.5) -> list[float]:
    """n distinct, non-zero inputs with magnitudes in [low, high], away from +-1 and each other."""
    xs: list[float] = []
    while len(xs) < n:
        x = round(rng.uniform(low, high), 3) * rng.choice((-1.0, 1.0))
        if abs(abs(x) - 1.0) < 0.05:
            continue
        if any(abs(abs(x) - abs(y)) < 0.05 for y in xs):
            continue
        xs.append(x)
    return xs
