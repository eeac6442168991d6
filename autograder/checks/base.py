"""What a check is and what it reports: cases made here, observed next to the learner's code, judged here."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..settings import Tolerance
from ..truth.memo import copy_plain, remembered

Case = dict[str, Any]
Observation = dict[str, Any]

PASSED, FAILED, NOT_IMPLEMENTED, ERROR = "passed", "failed", "not_implemented", "error"
STATUSES = (PASSED, FAILED, NOT_IMPLEMENTED, ERROR)


@dataclass
class CheckResult:
    """The outcome of one check, as the CLI, the notebooks and the gradebook see it.

    `status` is passed, failed (wrong answer), not_implemented (a stub, or a target not defined) or error (the
    learner's code raised or timed out); `misconception` the id of the likely mistake (see checks.MISCONCEPTIONS);
    `culprit` the method a failure was pinned on by testing it alone; `same_as` the check whose diagnosis this one
    points to (set when the culprit is not this check's own method).
    """

    name: str
    targets: tuple[str, ...]
    passed: bool = field(init=False)  # derived from status, never set on its own
    points: float
    max_points: float
    message: str
    status: str = PASSED
    misconception: str | None = None
    culprit: str | None = None
    same_as: str | None = None
    repro: str = ""  # the reproduce block (also at the end of the message)
    raised_in: str | None = None  # the learner function that raised, when the learner's code raised
    recovered: dict[str, str] | None = None  # the learner's formula recovered from the numbers: got, want, where, what

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}")
        self.passed = self.status == PASSED

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with the documented keys."""
        d = asdict(self)
        d["targets"] = list(self.targets)
        return d


@dataclass(frozen=True)
class Failure:
    """Why a case failed: the message's first line(s), the misconception id and the reproduce block."""

    what: str
    misconception: str | None = None
    name: str = ""  # the variable the misconception's sentence speaks of
    repro: str = ""
    status: str = FAILED
    method: str | None = None  # the learner method this failure is certainly in, if known
    recovered: dict[str, str] | None = None  # the one slip of the right formula that gives the learner's numbers
    sentence: str = ""  # the hint's sentence, where the id's is not in messages.MISCONCEPTIONS (a check's fallback)

    def message(self) -> str:
        """The whole diagnosis: what, the hint sentence (the recovered formula, when there is one), the lines that
        reproduce it."""
        from .messages import hint_line, recovered_line

        hint = (recovered_line(self.recovered) if self.recovered
                else hint_line(self.misconception, self.name, self.sentence))
        return self.what + hint + self.repro


DEFAULTED = ("Value.__eq__", "Value.__hash__")  # object's identity is the default, and the right one
Judge = Callable[[Case, Observation, Tolerance], "Failure | None"]


@dataclass(frozen=True)
class Check:
    """One class of learner mistakes, exposed by graphs built fresh for every case.

    `cases` returns self-contained JSON cases (never the answers), each naming the probe that observes it;
    the probe (autograder.probes) runs next to the learner's code; `judge` runs here and returns None or a Failure.
    The probe runs only the learner functions in `targets`: every other Value operation, backward(), the model and
    the loss are the grader's own while it runs (probes/scaffold.py), so a check judges its own exercise.
    `isolate` names checks of single methods this one runs (a brick's local rule, backward() alone, __eq__): when
    this one fails, the first of them that fails is the culprit. `owns` are the methods of this check's own exercise
    (a culprit among them is reported in full; any other as "needs X to pass first"). `prerequisites` are exercises
    this one is made of (a Layer of the learner's Neurons; the notebook says so above the exercise). `companions`
    are the other methods of the same exercise: the learner's own run beside the targets when its class defines them
    (so a cycle among one exercise's methods fails that exercise), the grader's when it does not.
    """

    name: str
    targets: tuple[str, ...]
    description: str
    cases: Callable[[random.Random, bool], list[Case]]
    judge: Judge
    points: float = 1.0
    group: str = "engine"  # engine and net checks make up the spec; exercise checks belong to one notebook
    isolate: tuple[str, ...] = ()
    owns: tuple[str, ...] | None = None
    prerequisites: tuple[str, ...] = ()
    companions: tuple[str, ...] = ()
    during: Callable[[Case], str] | None = field(default=None, compare=False)  # what ran, when learner code raised
    # whether a formula recovered on one case also gives the learner's numbers on another (see run._recovered_everywhere)
    fits: Callable[[Case, Observation, dict[str, str]], bool] | None = field(default=None, compare=False)
    tags: tuple[str, ...] = field(default=())

    @property
    def needs(self) -> tuple[str, ...]:
        """The targets that must be defined before the check can run: all but those object gives every class
        (identity `__eq__`/`__hash__`); the probes' NEEDS table holds exactly these (a test proves it)."""
        return tuple(t for t in self.targets if t not in DEFAULTED)

    @property
    def own_methods(self) -> tuple[str, ...]:
        """The methods a failure of this check is reported against in full."""
        return self.targets if self.owns is None else self.owns

    def make_cases(self, hidden: bool = False, secret: bytes | str | None = None) -> list[Case]:
        """The cases for the visible check, or other inputs (and more of them) for the hidden one.

        A per-course `secret` makes hidden cases unpredictable from the package; None keeps the package's own.
        """
        return _cases(self, hidden, secret if secret is None or isinstance(secret, str) else bytes(secret))


@remembered(4096, copy_plain)  # drawing reliable inputs costs a numerical gradient each; a class reuses them
def _cases(check: Check, hidden: bool, secret: bytes | str | None) -> list[Case]:
    seed: str | int = f"{check.name}/{'hidden' if hidden else 'visible'}"
    if hidden and secret is not None:
        key = secret.encode() if isinstance(secret, str) else secret
        seed = int.from_bytes(hashlib.sha256(key + b"\0" + str(seed).encode()).digest()[:16], "big")
    return check.cases(random.Random(seed), hidden)
