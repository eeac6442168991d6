"""The grader's own Value operations, by method: the probe side's op table.

Each is (form, the grader's `_op` ({k} the exponent), its forward on floats, and what its `_backward` adds
to each operand's grad): x is self.data (for the reflected form, the number on the left of the operator),
y other.data, k the exponent, t out.data and g out.grad; the forms are unary, binary, reflected (other op
self) and power (self ** a number). `NODE_CALLS` applies each operation judged one node at a time to a
node case's operands a, b and exponent k.

Written by `python -m autograder.checks` from autograder/checks/ops.py: do not edit.
"""

from collections.abc import Callable
from math import exp, tanh
from typing import Any

METHODS: dict[str, tuple[str, str, Callable[..., float], Callable[..., tuple[float, ...]]]] = {
    "__add__": ("binary", "+", lambda x, y, k: x + y,
                lambda x, y, t, k, g: (g, g)),
    "__mul__": ("binary", "*", lambda x, y, k: x * y,
                lambda x, y, t, k, g: (y * g, x * g)),
    "tanh": ("unary", "tanh", lambda x, y, k: tanh(x),
             lambda x, y, t, k, g: ((1 - t ** 2) * g,)),
    "relu": ("unary", "ReLU", lambda x, y, k: max(x, 0.0),
             lambda x, y, t, k, g: ((t > 0) * g,)),
    "exp": ("unary", "exp", lambda x, y, k: exp(x),
            lambda x, y, t, k, g: (t * g,)),
    "__pow__": ("power", "**{k}", lambda x, y, k: x ** k,
                lambda x, y, t, k, g: (k * x ** (k - 1) * g,)),
    "__neg__": ("unary", "neg", lambda x, y, k: -x,
                lambda x, y, t, k, g: (-g,)),
    "__sub__": ("binary", "-", lambda x, y, k: x - y,
                lambda x, y, t, k, g: (g, -g)),
    "__truediv__": ("binary", "/", lambda x, y, k: x / y,
                    lambda x, y, t, k, g: (g / y, -x / (y * y) * g)),
    "__radd__": ("reflected", "+", lambda x, y, k: x + y,
                 lambda x, y, t, k, g: (g, g)),
    "__rmul__": ("reflected", "*", lambda x, y, k: x * y,
                 lambda x, y, t, k, g: (y * g, x * g)),
    "__rsub__": ("reflected", "-", lambda x, y, k: x - y,
                 lambda x, y, t, k, g: (g, -g)),
    "__rtruediv__": ("reflected", "/", lambda x, y, k: x / y,
                     lambda x, y, t, k, g: (g / y, -x / (y * y) * g)),
}

NODE_CALLS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "+": lambda a, b, k: a + b,
    "*": lambda a, b, k: a * b,
    "tanh": lambda a, b, k: a.tanh(),
    "relu": lambda a, b, k: a.relu(),
    "exp": lambda a, b, k: a.exp(),
    "**": lambda a, b, k: a ** k,
}
