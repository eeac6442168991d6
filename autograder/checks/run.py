"""Running checks: observe through a prober (this process, or a grading worker), judge here, pin the blame."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .. import probes
from ..settings import Limits, Tolerance
from . import messages as msg
from .base import ERROR, FAILED, NOT_IMPLEMENTED, PASSED, Case, Check, CheckResult, Failure, Observation


class Prober(Protocol):
    """Where observations come from: the learner's namespace here, or a worker process."""

    def missing(self, name: str) -> list[str]:
        """The targets check `name` needs that the learner has not defined."""

    def observe(self, name: str, case: Case) -> Observation:
        """The probe's observation of one case of check `name`."""


@dataclass
class LocalProber:
    """Probes the learner's namespace in this process (a notebook's kernel, the CLI)."""

    ns: Mapping[str, Any]
    check_timeout: float = dataclasses.field(default_factory=lambda: Limits().check_timeout)

    def missing(self, name: str) -> list[str]:
        """See Prober."""
        return probes.missing(name, self.ns)

    def observe(self, name: str, case: Case) -> Observation:
        """See Prober; learner code may have changed the recursion limit, so it is restored."""
        old_limit = sys.getrecursionlimit()
        try:
            return probes.observe(name, self.ns, case, self.check_timeout)
        finally:
            sys.setrecursionlimit(old_limit)


def _result(check: Check, status: str, message: str, misconception: str | None = None, **extra: Any) -> CheckResult:
    passed = status == PASSED
    return CheckResult(check.name, check.targets, check.points if passed else 0.0, check.points, message,
                       status, misconception, **extra)


def _from_error(check: Check, case: Case, obs: Observation) -> Failure:
    """An observation that carries an error (learner code raised, timed out or handed back a non-number)."""
    during = check_context(check, case)
    try:
        error = msg.probe_error(obs)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:  # only a tampered worker sends those
        return Failure(msg.MALFORMED.format(kind=type(exc).__name__), msg.MALFORMED_OBSERVATION, status=ERROR)
    if obs.get("error") == "graders_code":
        return Failure(error, msg.GRADERS_CODE, status=FAILED, method=str(obs.get("where") or "") or None)
    if obs.get("leftover_raise"):
        while_text, marker, repro = during.partition(msg.REPRO_MARK)
        return Failure(msg.LEFTOVER_RAISE.format(where=obs.get("where") or "your code") + while_text,
                       "common.leftover_raise", repro=marker + repro, status=FAILED)
    if obs.get("status") == NOT_IMPLEMENTED:
        return Failure(msg.NOT_IMPLEMENTED.format(error=error), status=NOT_IMPLEMENTED,
                       method=str(obs.get("where") or "") or None)
    place = obs.get("place") if isinstance(obs.get("place"), dict) else None
    mis = msg.error_misconception(error, str((place or {}).get("text", "")), obs.get("raised") is not False)
    return Failure(f"{error}{msg.place_line(place)}{during}", mis, status=ERROR,
                   method=str(obs.get("where") or "") or None)


def check_context(check: Check, case: Case) -> str:
    """`\\n  while ...` and the reproduce lines for a case: what was running when learner code raised."""
    return check.during(case) if check.during else ""


def verdict(check: Check, case: Case, obs: Observation, tolerance: Tolerance) -> Failure | None:
    """One case judged: None, or why it failed."""
    if not isinstance(obs, dict):
        return Failure(msg.MALFORMED.format(kind=type(obs).__name__), msg.MALFORMED_OBSERVATION, status=ERROR)
    if "error" in obs:
        return _from_error(check, case, obs)
    try:
        return check.judge(case, obs, tolerance)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        # a judge fed numbers of the wrong shape: only a tampered worker sends those
        return Failure(msg.MALFORMED.format(kind=type(exc).__name__), msg.MALFORMED_OBSERVATION, status=ERROR)


def judge_one(check: Check, hidden: bool, tolerance: Tolerance, prober: Prober,
              secret: bytes | str | None = None) -> CheckResult:
    """Decide one check from observations obtained anywhere; stop at the first failing case."""
    return _judge(check, hidden, tolerance, prober, secret)[0]


def _judge(check: Check, hidden: bool, tolerance: Tolerance, prober: Prober,
           secret: bytes | str | None) -> tuple[CheckResult, bool]:
    """The result, and whether it is final as it is: passed, a target not defined, or a stub of its own raising."""
    tolerance = tolerance.for_check(check.name)  # the check's own tolerance (settings.Tolerance.checks), if set
    absent = prober.missing(check.name)
    if absent:
        return _result(check, NOT_IMPLEMENTED, msg.NOT_DEFINED.format(targets=", ".join(absent))), True
    cases = check.make_cases(hidden, secret)
    for i, case in enumerate(cases):
        failure = verdict(check, case, prober.observe(check.name, case), tolerance)
        if failure:
            if failure.recovered:
                failure = _recovered_everywhere(check, failure, cases[i + 1:], prober, tolerance)
            failure = with_misconception(check, failure)
            own_stub = failure.status == NOT_IMPLEMENTED and _is_own(check, failure.method)
            raised_in = failure.method if failure.status in (NOT_IMPLEMENTED, ERROR) else None
            # the method a number reached unwrapped holds the bug, whichever check's graph took it there
            culprit = (_qualified(raised_in) if failure.misconception in msg.RAISED_IN_CULPRIT and raised_in
                       and not _is_own(check, raised_in) else None)
            return _result(check, failure.status, failure.message(), failure.misconception, repro=failure.repro,
                           raised_in=raised_in, culprit=culprit, recovered=failure.recovered), own_stub
    return _result(check, PASSED, check.description), True


def _recovered_everywhere(check: Check, failure: Failure, rest: Sequence[Case], prober: Prober,
                          tolerance: Tolerance) -> Failure:
    """The failure, its recovered formula kept only when the remaining cases recover the very same one (a formula
    shown must give the learner's numbers on every case); otherwise the hand-written fallback says what is known."""
    for case in rest:
        obs = prober.observe(check.name, case)
        other = verdict(check, case, obs, tolerance)
        if other is not None and other.recovered == failure.recovered:
            continue
        if check.fits is None or not isinstance(obs, dict) or "error" in obs or not check.fits(case, obs, failure.recovered):
            return dataclasses.replace(failure, recovered=None, misconception=None)
    return failure


def with_misconception(check: Check, failure: Failure) -> Failure:
    """Every failure carries an id: a known mistake, a recognised error of learner code, or the check's fallback.

    An error recognised from its text names the check's own method when the check has only one."""
    if failure.status == FAILED and not failure.misconception:
        return dataclasses.replace(failure, misconception=msg.fallback_id(check.name),
                                   sentence=msg.fallback_sentence(check.description))
    if failure.status != ERROR:
        return failure
    mis = failure.misconception or msg.error_misconception(failure.what)
    what = failure.what
    own = check.own_methods
    if mis not in ("common.raised", "common.unexpected_result") and len(own) == 1 and not failure.method and not what.startswith(own[0]):
        what = f"{own[0]}: {what}"
    what, mark, repro = what.partition(msg.REPRO_MARK)  # the hint goes before the reproduce lines
    return dataclasses.replace(failure, misconception=mis, what=what, repro=mark + repro + failure.repro)


def _qualified(where: str) -> str:
    """`Value.__mul__` for a qualname `Value.__mul__` or a bare `__mul__`."""
    return where if "." in where else f"Value.{where}" if where.startswith("__") else where


def _is_own(check: Check, where: str | None) -> bool:
    """Whether the function that raised (a qualname such as `__add__` or `Neuron.__init__`) is one of the check's own."""
    if not where:
        return False
    return any(where == m or m.endswith("." + where) or where.startswith(m + ".") or m.endswith("." + where.split(".")[-1])
               for m in check.own_methods)


def _indented(text: str) -> str:
    return "\n".join("  " + ln for ln in text.splitlines())


class Blame:
    """Pins failures on the method whose own check fails, once per `check(...)` call."""

    def __init__(self, get: Callable[[str], Check], hidden: bool, tolerance: Tolerance, prober: Prober,
                 secret: bytes | str | None) -> None:
        self.get, self.hidden, self.tolerance, self.prober, self.secret = get, hidden, tolerance, prober, secret
        self.memo: dict[str, CheckResult] = {}
        self.shown: set[str] = set()  # culprits reported in full in this call

    def alone(self, name: str) -> CheckResult:
        """The result of check `name` on its own (pinned in turn), judged once per call."""
        if name not in self.memo:
            check = self.get(name)
            result, absent = _judge(check, self.hidden, self.tolerance, self.prober, self.secret)
            self.memo[name] = result if absent else self.pin(check, result, quiet=True)
        return self.memo[name]

    def pin(self, check: Check, result: CheckResult, quiet: bool = False) -> CheckResult:
        """The result, blamed on the first isolated method or prerequisite exercise whose own check fails."""
        if result.passed:
            return result
        names = [*check.isolate, *check.prerequisites]
        if result.raised_in:  # the checks of the method that raised go first
            names.sort(key=lambda n: not _is_own(self.get(n), result.raised_in))
        for name in names:
            if name == check.name:
                continue
            alone = self.alone(name)
            if alone.passed:
                continue
            method = alone.culprit or alone.targets[0]
            if quiet:
                return dataclasses.replace(result, culprit=method, misconception=alone.misconception,
                                           message=alone.message, status=alone.status, same_as=alone.same_as or alone.name,
                                           recovered=alone.recovered)
            return self._blamed(check, result, alone, method)
        return self._uncontradicted(check, result, names)

    def _uncontradicted(self, check: Check, result: CheckResult, passed: Sequence[str]) -> CheckResult:
        """The result, its hint dropped where the checks that passed contradict it: `grad = ...` where `+=`
        belongs, when every operation of the check was tested alone for accumulation and accumulates, or when the
        check runs no operation of the learner's at all (the grader's own accumulate)."""
        if result.misconception not in msg.ASSIGNS:
            return result
        ops = [t for t in check.targets if t.startswith("Value.") and t not in msg.NOT_AN_OPERATION]
        if ops and not all(msg.LOCAL_CHECK.get(t) in passed for t in ops):
            return result
        mis = msg.ACCUMULATES_ALONE
        return dataclasses.replace(result, misconception=mis, message=msg.replace_hint(result.message, mis))

    def _blamed(self, check: Check, result: CheckResult, alone: CheckResult, method: str) -> CheckResult:
        """A failure whose cause is `method` (tested alone by `alone`), phrased once per call."""
        if method in self.shown:
            return dataclasses.replace(result, message=msg.SAME_CULPRIT.format(method=method),
                                       misconception=alone.misconception, culprit=method,
                                       same_as=alone.same_as or alone.name, status=alone.status
                                       if alone.status == NOT_IMPLEMENTED else FAILED)
        self.shown.add(method)
        if method in check.own_methods and alone.culprit is None:
            head = alone.message[: len(alone.message) - len(alone.repro)] if alone.repro else alone.message
            text = head + "\n" + msg.FOUND_ALONE.format(method=method, check=alone.name) + (alone.repro or result.repro)
            return dataclasses.replace(result, message=text, misconception=alone.misconception, status=alone.status,
                                       repro=alone.repro or result.repro, culprit=method, recovered=alone.recovered)
        source = alone.same_as or alone.name
        if alone.status == NOT_IMPLEMENTED:
            text = msg.NEEDS_FIRST_UNFINISHED.format(method=method)
            return dataclasses.replace(result, message=text, culprit=method, same_as=source, status=NOT_IMPLEMENTED,
                                       misconception=alone.misconception)
        text = msg.NEEDS_FIRST.format(method=method, check=source, detail=_indented(alone.message))
        return dataclasses.replace(result, message=text, culprit=method, same_as=source,
                                   misconception=alone.misconception, status=FAILED, recovered=alone.recovered)


def judge_checks(checks: Sequence[Check], hidden: bool, tolerance: Tolerance, prober: Prober,
                 secret: bytes | str | None = None, get: Callable[[str], Check] | None = None) -> list[CheckResult]:
    """Decide several checks (one `check(...)` call), each failure pinned on its culprit and named once."""
    if get is None:
        from . import get
    blame = Blame(get, hidden, tolerance, prober, secret)
    results = []
    for check in checks:
        result, absent = _judge(check, hidden, tolerance, prober, secret)
        results.append(result if absent else blame.pin(check, result))
    return results


def run_checks(checks: Sequence[Check], ns: Mapping[str, Any], hidden: bool = False, tolerance: Tolerance | None = None,
               limits: Limits | None = None, secret: bytes | str | None = None) -> list[CheckResult]:
    """Probe and judge checks in this process (a kernel, the CLI)."""
    prober = LocalProber(ns, (limits or Limits()).check_timeout)
    return judge_checks(checks, hidden, tolerance or Tolerance(), prober, secret)


def run_check(check: Check, ns: Mapping[str, Any], hidden: bool = False, tolerance: Tolerance | None = None,
              limits: Limits | None = None) -> CheckResult:
    """One check in this process."""
    return run_checks([check], ns, hidden, tolerance, limits)[0]
