"""Remembering the grader's own pure computations: a class hands in the same cases many times over.

In a batch, every student's notebook is judged against the same cases (the visible ones, and the hidden ones drawn
from the course's secret), so the numerical truth at those inputs is worked out once and looked up afterwards.
Only functions of plain data are remembered; the key tells 0.0 from -0.0 and 1 from 1.0 from True, so a hit is
always the very computation that would have run.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def freeze(value: Any) -> Any:
    """A hashable key for plain data: containers become tuples, floats their exact hex, every scalar tagged by type."""
    kind = type(value)
    if kind is float:
        return ("f", value.hex())
    if kind in (list, tuple):
        return (kind.__name__, *(freeze(v) for v in value))
    if kind is dict:
        return ("d", *sorted((k, freeze(v)) for k, v in value.items()))
    if kind in (int, bool, str, bytes, type(None)):
        return (kind.__name__, value)
    hash(value)  # anything else must be an immutable, hashable object (a frozen dataclass, a module-level function)
    return ("o", value)


def copy_plain(value: Any) -> Any:
    """A copy of plain data (dicts, lists, tuples of scalars): what `copy.deepcopy` makes of it, ~4x faster."""
    kind = type(value)
    if kind is dict:
        return {k: copy_plain(v) for k, v in value.items()}
    if kind is list:
        return [copy_plain(v) for v in value]
    if kind is tuple:
        return tuple(copy_plain(v) for v in value)
    return value  # a scalar (or an immutable object) is shared, as deepcopy shares it


def remembered(maxsize: int, copy: Callable[[Any], Any]) -> Callable[[F], F]:
    """Remember up to `maxsize` results of a pure function of plain data; each caller gets `copy(result)`."""

    def decorate(fn: F) -> F:
        cache: OrderedDict[Any, Any] = OrderedDict()
        lock = threading.Lock()  # the batch judges in several threads

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                key = freeze((args, kwargs))
            except TypeError:  # not plain data after all: compute, as if never remembered
                return fn(*args, **kwargs)
            with lock:
                if key in cache:
                    cache.move_to_end(key)
                    return copy(cache[key])
            result = fn(*args, **kwargs)
            with lock:
                cache[key] = copy(result)  # a caller that changes its result cannot change the next caller's
                if len(cache) > maxsize:
                    cache.popitem(last=False)
            return result

        return wrapper  # type: ignore[return-value]

    return decorate
