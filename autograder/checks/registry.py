"""The registry: every check declared once, in its topic module, and what the probe side is told of it.

A check declares its targets (the learner functions it runs: a test proves it runs exactly these) and its cases
name the probes that observe them. The probe side runs in the sandbox and may import nothing of the answer side,
so the table it answers `missing(check)` from, `autograder/probes/needs.py`, is written from this registry:
`python -m autograder.checks` rewrites it, and a test fails while it differs from what the registry gives.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import messages as msg
from .base import Check

REGISTRY: list[Check] = []


def register(check: Check) -> Check:
    """Add a check to the catalogue (in the order the topic modules are imported) and return it, with the sentence
    of its fallback misconception (a failure no known mistake explains)."""
    if any(c.name == check.name for c in REGISTRY):
        raise ValueError(f"a check named {check.name!r} is registered twice")
    REGISTRY.append(check)
    msg.MISCONCEPTIONS.setdefault(msg.fallback_id(check.name), msg.fallback_sentence(check.description))
    return check


NEEDS_FILE = Path(__file__).resolve().parent.parent / "probes" / "needs.py"


def needs_source() -> str:
    """The text of probes/needs.py: each check's needs (its targets but the defaulted ones), by check name."""
    from . import CHECKS

    def row(check: Check) -> str:
        names = [json.dumps(t) for t in check.needs]
        line = f'    "{check.name}": ({", ".join(names)}{"," if len(names) == 1 else ""}),\n'
        if len(line) <= 120:
            return line
        return f'    "{check.name}": (\n' + "".join(f"        {n},\n" for n in names) + "    ),\n"

    def companions(check: Check) -> str:
        names = [json.dumps(t) for t in check.companions]
        return f'    "{check.name}": ({", ".join(names)}{"," if len(names) == 1 else ""}),\n'

    return ('"""What each check needs defined before its probes run, by check name (the probe side\'s `missing`), and\n'
            "the other methods of its exercise kept as the learner's while it runs, when defined (`COMPANIONS`).\n\n"
            "Written by `python -m autograder.checks` from each check's declared targets: do not edit.\n"
            '"""\n\nNEEDS: dict[str, tuple[str, ...]] = {\n' + "".join(row(c) for c in CHECKS) + "}\n"
            "\nCOMPANIONS: dict[str, tuple[str, ...]] = {\n" + "".join(companions(c) for c in CHECKS if c.companions) + "}\n")


def main() -> int:
    """Rewrite probes/needs.py from the registry; with --check, exit 1 if it differs instead."""
    text = needs_source()
    if "--check" in sys.argv[1:]:
        same = NEEDS_FILE.exists() and NEEDS_FILE.read_text() == text
        print(f"{NEEDS_FILE}: {'up to date' if same else 'differs from the registry'}")
        return 0 if same else 1
    NEEDS_FILE.write_text(text)
    print(f"wrote {NEEDS_FILE}")
    return 0
