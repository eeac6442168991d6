"""The check catalogue: every check one unit (cases, judge, declaration) in its topic module.

Where things go:
- an operation of Value (its method, forward, local slopes, `_op` labels, known mistakes with their sentences, the
  slips the formula recovery tries, the graphs and checks of its brick): one `Operation` in `ops.py`, and nothing
  else; then `python -m autograder.checks` rewrites the probe side's tables (docs/contributing.md);
- a check: in its topic module, `engine` (Value, + and *, backward), `bricks` (each operation's checks, from
  `ops.py`, and the checks of several bricks at once), `net` (Neuron, Layer, MLP, loss, train) or `exercises`
  (single-notebook exercises), declared with its topic's `register`; its graphs in `graphs.py` (the engine's) or
  in its operation's declaration;
- a misconception: its sentence in the declaration of its operation, or in `messages.py` (every other sentence a
  learner reads); its evidence in the judge that names it, and a correct twin in the tests (tests/checks/twins.py).

`registry` joins the topic modules' checks into the catalogue and writes what the probe side needs of it.
This is the answer side: it never runs in the batch grader's sandbox.
"""

from __future__ import annotations

from . import bricks, engine, exercises, net
from . import messages as msg
from .base import ERROR, FAILED, NOT_IMPLEMENTED, PASSED, Check, CheckResult, Failure
from .registry import catalogue
from .run import judge_checks, run_check, run_checks

CHECKS: list[Check] = catalogue(bricks.TOPIC, engine.TOPIC, exercises.TOPIC, net.TOPIC)
BY_NAME: dict[str, Check] = {c.name: c for c in CHECKS}
# Every misconception id and its sentence: the written ones (messages, each operation's) and each check's fallback
MISCONCEPTIONS: dict[str, str] = {**msg.MISCONCEPTIONS,
                                  **{msg.fallback_id(c.name): msg.fallback_sentence(c.description) for c in CHECKS}}


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


__all__ = ["BY_NAME", "CHECKS", "ERROR", "FAILED", "MISCONCEPTIONS", "NOT_IMPLEMENTED", "PASSED", "Check", "CheckResult",
           "Failure", "get", "judge_checks", "notebook_checks", "run_check", "run_checks", "spec_checks"]
