"""The data notebook 06 trains on."""

from __future__ import annotations

import math
import random


def make_moons(n: int = 100, noise: float = 0.1, seed: int = 0) -> tuple[list[list[float]], list[float]]:
    """Two interleaved half circles in 2-D, labels -1.0 and +1.0 (seeded, pure Python)."""
    rng = random.Random(seed)
    xs: list[list[float]] = []
    ys: list[float] = []
    for i in range(n):
        upper = i % 2 == 0
        t = math.pi * rng.random()
        if upper:
            x, y = math.cos(t), math.sin(t)
        else:
            x, y = 1 - math.cos(t), 0.5 - math.sin(t)
        # centred and scaled so that tanh units start in their useful range
        xs.append([(x - 0.5) + rng.gauss(0, noise), (y - 0.25) * 2 + rng.gauss(0, noise)])
        ys.append(1.0 if upper else -1.0)
    return xs, ys


