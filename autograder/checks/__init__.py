"""The check catalogue: every check one unit (cases, judge, registration) in its topic module.

`engine` (Value, +, *, backward), `bricks` (tanh, exp, **, -, /), `net` (Neuron, Layer, MLP, loss, train),
`exercises` (single-notebook exercises); `messages` holds every sentence a learner reads; `registry` collects the
checks and writes the probe side's table of what each needs (`python -m autograder.checks`).
This is the answer side: it never runs in the batch grader's sandbox.
"""

from __future__ import annotations

from . import bricks, engine, exercises, net  # noqa: F401  (importing a topic module registers its checks)
from .base import ERROR, FAILED, NOT_IMPLEMENTED, PASSED, Check, CheckResult, Failure
from .registry import REGISTRY
from .run import judge_checks, run_check, run_checks

CHECKS: list[Check] = list(REGISTRY)
BY_NAME: dict[str, Check] = {c.name: c for c in CHECKS}


def get(name: str) -> Check:
    """The check of that name, or KeyError listing the names that exist."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"no check named {name!r}; known: {', '.join(BY_NAME)}") from None


def spec_checks() -> list[Check]:
    """The engine and net checks: what `python -m autograder check` runs on every file."""
    return [c for c in CHECKS if c.group in ("engine", "net")]


def notebook_checks() -> list[Check]:
    """The checks a notebook's check cell may name (the isolated ones serve only to pin blame)."""
    return [c for c in CHECKS if c.group != "isolated"]


__all__ = ["BY_NAME", "CHECKS", "ERROR", "FAILED", "NOT_IMPLEMENTED", "PASSED", "Check", "CheckResult", "Failure",
           "get", "judge_checks", "notebook_checks", "run_check", "run_checks", "spec_checks"]
