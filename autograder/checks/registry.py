"""The catalogue: every check declared once, in its topic module, and what the probe side is told of it.

A topic module lists its own checks (`Topic.add`); `catalogue` joins the topic modules' lists, in order, refusing a
name declared twice. A check declares its targets (the learner functions it runs: a test proves it runs exactly
these) and its cases name the probes that observe them. The probe side runs in the sandbox and may import nothing of
the answer side, so what it needs of the catalogue is written into it: `autograder/probes/needs.py` (what each check
needs defined, from the checks' targets) and `autograder/probes/op_table.py` (the grader's own operations, from
ops.py). `python -m autograder.checks` rewrites both, and a test fails while either differs from what they give.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from . import ops
from .base import Check


class Topic:
    """The checks of one topic module, in the order it declares them."""

    def __init__(self) -> None:
        self.checks: list[Check] = []

    def add(self, check: Check) -> Check:
        """Declare a check of this topic and return it."""
        self.checks.append(check)
        return check


def catalogue(*topics: Topic) -> list[Check]:
    """Every topic's checks, topic by topic; ValueError for a name declared twice."""
    out: list[Check] = []
    for check in (c for t in topics for c in t.checks):
        if any(c.name == check.name for c in out):
            raise ValueError(f"a check named {check.name!r} is registered twice")
        out.append(check)
    return out


PROBES_DIR = Path(__file__).resolve().parent.parent / "probes"
NEEDS_FILE = PROBES_DIR / "needs.py"
OP_TABLE_FILE = PROBES_DIR / "op_table.py"


def needs_source(checks: Iterable[Check] | None = None) -> str:
    """The text of probes/needs.py: each check's needs (its targets but the defaulted ones), by check name."""
    if checks is None:
        from . import CHECKS as checks

    def row(check: Check) -> str:
        names = [json.dumps(t) for t in check.needs]
        line = f'    "{check.name}": ({", ".join(names)}{"," if len(names) == 1 else ""}),\n'
        if len(line) <= 120:
            return line
        return f'    "{check.name}": (\n' + "".join(f"        {n},\n" for n in names) + "    ),\n"

    def companions(check: Check) -> str:
        names = [json.dumps(t) for t in check.companions]
        return f'    "{check.name}": ({", ".join(names)}{"," if len(names) == 1 else ""}),\n'

    checks = list(checks)
    return ('"""What each check needs defined before its probes run, by check name (the probe side\'s `missing`), and\n'
            "the other methods of its exercise kept as the learner's while it runs, when defined (`COMPANIONS`).\n\n"
            "Written by `python -m autograder.checks` from each check's declared targets: do not edit.\n"
            '"""\n\nNEEDS: dict[str, tuple[str, ...]] = {\n' + "".join(row(c) for c in checks) + "}\n"
            "\nCOMPANIONS: dict[str, tuple[str, ...]] = {\n" + "".join(companions(c) for c in checks if c.companions) + "}\n")


def op_table_source(operations: Iterable[ops.Operation] = ops.OPERATIONS) -> str:
    """The text of probes/op_table.py: each operation's form, `_op`, forward and local slopes, and how a probe
    applies the operations judged one node at a time, as Python the probe side runs (no sentence, no mistake)."""
    operations = list(operations)
    called = sorted({name for op in operations for text in (op.forward, *op.backward)
                     for name in ("exp", "tanh") if re.search(rf"\b{name}\(", text)})
    imports = f"from math import {', '.join(called)}\n" if called else ""

    def method(op: ops.Operation) -> str:
        return (f'    "{op.method}": ({json.dumps(op.form)}, {json.dumps(op.label)}, lambda x, y, k: {op.forward},\n'
                f"{' ' * (len(op.method) + 9)}lambda x, y, t, k, g: {ops.tuple_text(op.backward)}),\n")

    def call(op: ops.Operation) -> str:
        return f'    "{op.symbol}": lambda a, b, k: {op.call.format(a="a", b="b", k="k")},\n'

    return ('"""The grader\'s own Value operations, by method: the probe side\'s op table.\n\n'
            "Each is (form, the grader's `_op` ({k} the exponent), its forward on floats, and what its `_backward` adds\n"
            "to each operand's grad): x is self.data (for the reflected form, the number on the left of the operator),\n"
            "y other.data, k the exponent, t out.data and g out.grad; the forms are unary, binary, reflected (other op\n"
            "self) and power (self ** a number). `NODE_CALLS` applies each operation judged one node at a time to a\n"
            "node case's operands a, b and exponent k.\n\n"
            "Written by `python -m autograder.checks` from autograder/checks/ops.py: do not edit.\n"
            '"""\n\nfrom collections.abc import Callable\n' + imports + "from typing import Any\n\n"
            "METHODS: dict[str, tuple[str, str, Callable[..., float], Callable[..., tuple[float, ...]]]] = {\n"
            + "".join(method(op) for op in operations) + "}\n\n"
            "NODE_CALLS: dict[str, Callable[[Any, Any, Any], Any]] = {\n"
            + "".join(call(op) for op in operations if op.symbol) + "}\n")


GENERATED = ((NEEDS_FILE, needs_source), (OP_TABLE_FILE, op_table_source))


def main() -> int:
    """Rewrite probes/needs.py and probes/op_table.py from the catalogue; with --check, exit 1 if one differs instead."""
    check = "--check" in sys.argv[1:]
    differs = False
    for path, source in GENERATED:
        text = source()
        if check:
            same = path.exists() and path.read_text() == text
            differs |= not same
            print(f"{path}: {'up to date' if same else 'differs from the declarations'}")
        elif not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path}")
    return 1 if differs else 0
