"""Run `python -m autograder check FILE --json` on each file in one process, with the allocator's order shuffled first.

Usage: python tests/checks/verdicts_run.py SHUFFLE FILE... ; prints one JSON object {file: what `check --json` printed}.
With SHUFFLE > 0, before each file, objects the size of a Value and of its __dict__ are made and a random half of
them freed in a random order (the rest kept alive), so that the Values a check makes land at other addresses, in
another order: what hashing by id(), and so the order of a set of nodes, depends on. PYTHONHASHSEED comes from the
environment. tests/checks/test_determinism.py compares the outputs of several such runs.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import sys

from autograder import cli


class _Filler:
    """An object with a __dict__, as big as a Value and its attributes."""

    def __init__(self, i: int) -> None:
        self.data, self.grad, self._prev, self._op, self._backward = float(i), 0.0, set(), "", None


def shuffle_allocator(rng: random.Random, kept: list[object]) -> None:
    """Make a few thousand Value-sized objects and free a random half of them in a random order."""
    made = [_Filler(i) for i in range(rng.randint(500, 4000))]
    rng.shuffle(made)
    half = len(made) // 2
    kept.extend(made[:half])
    for _ in range(len(made) - half):
        made.pop()


def main(argv: list[str]) -> int:
    shuffle, files = int(argv[0]), argv[1:]
    rng = random.Random(shuffle)
    kept: list[object] = []
    out = {}
    for path in files:
        if shuffle:
            shuffle_allocator(rng, kept)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            cli.main(["check", path, "--json"])
        out[path] = buf.getvalue()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
