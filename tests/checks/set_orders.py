"""Run code against an engine under every iteration order of the sets it builds.

A buggy engine's gradients can depend on the order in which it iterates `self._prev`, a set of Values hashed by
`id()`: that order follows memory addresses, so two runs of the same lines may print different numbers. Instead of
hoping that a dozen reruns hit the grader's order, the engine's `set` is replaced by `ScriptedSet`, whose iteration
order is a scripted permutation of its insertion order, and every script is run (a depth-first walk over the choices).
Any order CPython could pick is one of these permutations, so "the grader's number is among the outcomes" is exact.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

MAX_RUNS = 4096  # a repro builds a handful of nodes; more runs than this means the enumeration is the wrong tool
MAX_ELEMENTS = 4  # a Value has at most two children; permutations of more would explode


class Chooser:
    """Picks one permutation per set when it is first iterated: scripted choices first, then `default`."""

    def __init__(self, script: list[int], default: Callable[[int], int] = lambda n: 0) -> None:
        self.script = script
        self.default = default
        self.made: list[tuple[int, int]] = []  # (choice, number of choices), in the order the sets were first iterated

    def choose(self, n: int) -> int:
        i = len(self.made)
        choice = self.script[i] if i < len(self.script) else self.default(n)
        self.made.append((choice, n))
        return choice


def scripted_set(chooser: Chooser) -> type[set]:
    """A `set` whose iteration order is a permutation of insertion order chosen by `chooser` (fixed once iterated)."""

    class ScriptedSet(set):
        def __init__(self, items: Any = ()) -> None:
            super().__init__()
            self._inserted: list[Any] = []
            self._order: list[Any] | None = None
            for item in items:
                self.add(item)

        def add(self, item: Any) -> None:
            # like a real set, an element equal to one already there is dropped (the first stays)
            if item not in self:
                self._inserted.append(item)
                self._order = None
            super().add(item)

        def __iter__(self):
            present = [x for x in self._inserted if x in self]  # elements removed since are skipped
            if self._order is None or len(self._order) != len(present):
                assert len(present) <= MAX_ELEMENTS, f"a set of {len(present)} elements: too many orders to enumerate"
                perms = list(itertools.permutations(present))
                self._order = list(perms[chooser.choose(len(perms))])
            return iter(self._order)

    return ScriptedSet


def every_set_order(run: Callable[[type[set]], Any], max_runs: int = MAX_RUNS) -> list[Any]:
    """run(set_type) for every combination of iteration orders of the sets created during the run."""
    outcomes, pending = [], [[]]
    while pending:
        script = pending.pop()
        chooser = Chooser(script)
        outcomes.append(run(scripted_set(chooser)))
        assert len(outcomes) <= max_runs, f"more than {max_runs} set orders: too many to enumerate"
        made = [c for c, _ in chooser.made]
        for i in range(len(script), len(chooser.made)):  # branch on every choice this run made by default
            pending.extend([*made[:i], alt] for alt in range(1, chooser.made[i][1]))
    return outcomes


def reversed_set_order(run: Callable[[type[set]], Any]) -> Any:
    """run(set_type) with every set iterating in reverse insertion order (the last permutation)."""
    return run(scripted_set(Chooser([], default=lambda n: n - 1)))
