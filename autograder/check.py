"""What a check is, what it reports, and how one runs: probe (learner side) then judge (grader side)."""

from __future__ import annotations

import hashlib
import hmac
import random
import sys
import traceback
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .safe import LearnerError, captured_output, describe, time_limit
from .settings import Limits, Tolerance

Namespace = Mapping[str, Any]
Case = dict[str, Any]
Observation = dict[str, Any]

_PACKAGE_DIR = str(Path(__file__).resolve().parent)


@dataclass
class CheckResult:
    """The outcome of one check, as the CLI, the notebooks and the gradebook see it."""

    name: str
    targets: tuple[str, ...]
    passed: bool
    points: float
    max_points: float
    message: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with the documented keys."""
        d = asdict(self)
        d["targets"] = list(self.targets)
        return d


@dataclass(frozen=True)
class Check:
    """One class of learner mistakes, exposed by graphs built fresh for every case.

    `cases` runs in the grader and returns JSON-able cases (never the answers);
    `probe` runs next to the learner's code and returns JSON-able plain numbers;
    `judge` runs in the grader and returns None on success or the failure message.
    """

    name: str
    targets: tuple[str, ...]
    description: str
    cases: Callable[[random.Random, bool], list[Case]]
    probe: Callable[[Namespace, Case], Observation]
    judge: Callable[[Case, Observation, Tolerance], str | None]
    points: float = 1.0
    group: str = "engine"  # engine and net checks make up the spec; exercise checks belong to one notebook
    tags: tuple[str, ...] = field(default=())
    # the targets that must be defined for the check to run; None means all of them. A check may exercise a
    # method the learner need not write (Value.__eq__ falls back to object's identity).
    required: tuple[str, ...] | None = None

    def make_cases(self, hidden: bool = False, secret: bytes | str | None = None) -> list[Case]:
        """The cases for the visible check, or other inputs (and more of them) for the hidden one.

        With a course's `secret`, the hidden inputs are drawn from it: nobody holding only the package can predict them.
        """
        seed = f"{self.name}/{'hidden' if hidden else 'visible'}"
        if hidden and secret is not None:
            key = secret.encode() if isinstance(secret, str) else secret
            seed = hmac.new(key, seed.encode(), hashlib.sha256).hexdigest()
        return self.cases(random.Random(seed), hidden)


def is_defined(ns: Namespace, target: str) -> bool:
    """True when the namespace defines a target such as `Value.__mul__`, `MLP` or `train`."""
    head, _, attr = target.partition(".")
    obj = ns.get(head)
    if obj is None:
        return False
    if not attr:
        return True
    if not isinstance(obj, type):
        return False
    # object's own __repr__, __eq__, ... do not count as the learner's definition.
    return any(attr in vars(k) for k in obj.__mro__ if k is not object)


def missing_targets(check: Check, ns: Namespace) -> list[str]:
    """The check's required targets that the namespace lacks."""
    needed = check.targets if check.required is None else check.required
    return [t for t in needed if not is_defined(ns, t)]


def _blame(tb: Any) -> str:
    """The learner function where an exception was raised, like `Value.__mul__.<locals>._backward`."""
    blamed = ""
    for frame, _ in traceback.walk_tb(tb):
        code = frame.f_code
        # the grader's own frames, and the expression text it runs on the learner's Values, are not the learner's
        if code.co_filename.startswith((_PACKAGE_DIR, "<expression")):
            continue
        blamed = getattr(code, "co_qualname", code.co_name)
    return blamed


def observe(check: Check, ns: Namespace, case: Case, limits: Limits | None = None) -> Observation:
    """Run the probe on learner code with a time limit and captured output; errors become data."""
    limits = limits or Limits()
    try:
        with captured_output(), time_limit(limits.check_timeout):
            return check.probe(ns, case)
    except LearnerError as exc:
        return {"error": str(exc)}
    except KeyboardInterrupt:
        raise  # the person running the grader pressed Ctrl-C
    except BaseException as exc:  # learner code may raise anything, SystemExit and GeneratorExit included
        where = _blame(exc.__traceback__)
        where = f" in {where}" if where else ""
        if isinstance(exc, NotImplementedError):
            return {"error": f"not implemented yet: NotImplementedError raised{where}", "not_implemented": True}
        if isinstance(exc, RecursionError):
            return {"error": f"RecursionError{where}: the graph is only a few hundred nodes deep, so a method calls itself without end"}
        if isinstance(exc, SystemExit):
            return {"error": f"learner code called sys.exit(){where}"}
        if not isinstance(exc, Exception):
            return {"error": f"learner code raised {describe(exc)}{where}"}
        return {"error": f"{describe(exc)}{where}"}


def run_check(
    check: Check,
    ns: Namespace,
    hidden: bool = False,
    tolerance: Tolerance | None = None,
    limits: Limits | None = None,
) -> CheckResult:
    """Probe and judge every case of one check in this process; stop at the first failure."""
    return judge_check(check, hidden, tolerance or Tolerance(),
                       missing=lambda: missing_targets(check, ns),
                       observe_case=lambda case: observe(check, ns, case, limits))


def judge_check(
    check: Check,
    hidden: bool,
    tolerance: Tolerance,
    missing: Callable[[], list[str]],
    observe_case: Callable[[Case], Observation],
    secret: bytes | str | None = None,
) -> CheckResult:
    """Decide one check from observations obtained anywhere (here, or from a grading worker)."""

    def result(passed: bool, message: str) -> CheckResult:
        return CheckResult(check.name, check.targets, passed, check.points if passed else 0.0, check.points, message)

    absent = missing()
    if absent:
        return result(False, f"not implemented yet: define {', '.join(absent)}")
    for case in check.make_cases(hidden, secret):
        failure = check.judge(case, observe_case(case), tolerance)
        if failure:
            return result(False, failure)
    return result(True, check.description)


def run_checks(
    checks: list[Check],
    ns: Namespace,
    hidden: bool = False,
    tolerance: Tolerance | None = None,
    limits: Limits | None = None,
) -> list[CheckResult]:
    """Run several checks in order."""
    old_limit = sys.getrecursionlimit()
    try:
        return [run_check(c, ns, hidden, tolerance, limits) for c in checks]
    finally:
        sys.setrecursionlimit(old_limit)  # learner code may have changed it
