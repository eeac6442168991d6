"""Judging a grade cell in the grader: the worker only observes; the truth, the cases and the verdicts live here."""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Sequence
from typing import Any, Protocol

from ... import checks as catalog
from ... import notebook
from ...checks import FAILED, NOT_IMPLEMENTED, CheckResult, judge_checks
from ...checks import messages as msg
from ...checks.messages import MALFORMED_OBSERVATION
from ...loader import CheckCall
from ...settings import Tolerance
from .channel import Violation

NUDGE = 1.0 + 2.0**-10  # about 0.1%: a real function barely notices; a table of the visible answers does
_RANDOM = secrets.SystemRandom()  # nudges no one can predict, not even from a course's own feedback


def random_nudge() -> float:
    """A factor 1 +- 0.05..0.2%, drawn afresh for every use: a table of inputs seen in feedback cannot cover it."""
    return 1.0 + _RANDOM.choice((-1.0, 1.0)) * _RANDOM.uniform(2.0**-11, 2.0**-9)


class Unanswered(Exception):
    """The observer got no answer (the worker died or ran out of time): raised as is, never judged as a reply."""


class Observer(Protocol):
    """What the judge needs from the notebook's worker: raw observations, nothing judged."""

    def missing(self, check: str) -> list[str]:
        """The check's targets the notebook lacks."""
        ...

    def observe(self, check: str, case: dict[str, Any]) -> dict[str, Any]:
        """The raw observations of one case."""
        ...


@dataclasses.dataclass
class CellVerdict:
    """One grade cell judged: the outputs `check(...)` would leave in a kernel, and what looked like cheating."""

    outputs: list[dict[str, Any]]
    results: list[CheckResult]
    flags: list[str]


def nudge(case: Any, factor: float = NUDGE) -> Any:
    """The case with every non-integer float input scaled by `factor` (integers, counts and names kept)."""
    if isinstance(case, float) and not case.is_integer():
        return case * factor
    if isinstance(case, list):
        return [nudge(x, factor) for x in case]
    if isinstance(case, dict):
        return {k: nudge(v, factor) for k, v in case.items()}
    return case


def judge_all(observer: Observer, checks: Sequence[Any], hidden: bool, tolerance: Tolerance,
              secret: bytes | None) -> list[CheckResult]:
    """One `check(...)` call decided here from the worker's observations, each failure pinned on its culprit
    (as in a kernel); observations no honest probe makes are a Violation."""
    names = ", ".join(c.name for c in checks)
    try:
        results = judge_checks(checks, hidden, tolerance, observer, secret, get=catalog.get)
    except (Violation, Unanswered):
        raise  # a worker that died or went silent while probed is an ordinary stop, not a forged reply
    except Exception as exc:  # a judge fed numbers of a shape the probe never makes: only a forged reply has it
        raise Violation(f"sent observations for check {names} that its judge cannot read "
                        f"({type(exc).__name__}: {str(exc)[:100]})") from None
    for r in results:
        if r.misconception == MALFORMED_OBSERVATION:
            raise Violation(f"sent observations for check {r.name} that its judge cannot read ({r.message[:100]})")
    return results


def judge_one(observer: Observer, check: Any, hidden: bool, tolerance: Tolerance, secret: bytes | None) -> CheckResult:
    """One check decided here from the worker's observations."""
    return judge_all(observer, [check], hidden, tolerance, secret)[0]


def tabulated(observer: Observer, check: Any, tolerance: Tolerance, hidden: bool = False,
              secret: bytes | None = None) -> bool:
    """True when the check passes its inputs but fails them nudged: the answers are looked up, not computed.

    Visible inputs are all moved by one random 0.05-0.2%; with `hidden`, one of the hidden cases (drawn from the
    course `secret`) picked at random is: a table of every input the grader ever used (hidden ones leak into a
    notebook's own feedback if it prints them) cannot hold it.
    """
    cases = [_RANDOM.choice(check.make_cases(True, secret))] if hidden else check.make_cases(False)
    moved = nudge(cases, random_nudge())  # random: the visible inputs and any fixed nudge of them are public
    if moved == cases:
        return False  # nothing to nudge (no float inputs): no evidence either way
    variant = dataclasses.replace(check, cases=lambda rng, hide, moved=moved: moved)
    return not judge_one(observer, variant, False, tolerance, None).passed


def judge_cell(observer: Observer, calls: Sequence[CheckCall], tolerance: Tolerance, secret: bytes | None,
               shown: notebook.Shown | None = None, ran: list[str] | None = None) -> CellVerdict:
    """Every `check(...)` call of a grade cell, as `run_checks` would run them in a kernel, judged here.

    A visible check that passes is also tried on its inputs moved by a random 0.05-0.2% when the cell has no hidden run of it
    (it then scores 0 if that fails), or when its hidden run fails; a hidden run that passes is tried on one of
    its cases moved by a random amount (it scores 0 if that fails). Failing a nudge is flagged. `shown` (one per
    notebook) makes a diagnosis already shown in full in an earlier cell say so in one line, as in a kernel. `ran`
    is told each check as it starts (a worker that stops during a check leaves it there too): what the grade
    depended on, for its resume record.
    """
    hidden_names = {n for call in calls if call.hidden for n in call.names}
    visible_passed: set[str] = set()
    outputs: list[dict[str, Any]] = []
    results: list[CheckResult] = []
    flags: list[str] = []
    for call in calls:
        if ran is not None:
            ran.extend(n for n in call.names if n not in ran)
        judged = []
        for name, result in zip(call.names, judge_all(observer, [catalog.get(n) for n in call.names], call.hidden,
                                                       tolerance, secret)):
            check = catalog.get(name)
            if not call.hidden and result.passed:
                if name not in hidden_names and tabulated(observer, check, tolerance):
                    flags.append(msg.FLAG_LOOKED_UP_VISIBLE.format(name=name))
                    result = dataclasses.replace(result, points=0.0, status=FAILED, message=msg.LOOKED_UP_VISIBLE)
                else:
                    visible_passed.add(name)
            elif (call.hidden and not result.passed and name in visible_passed
                  and result.status != NOT_IMPLEMENTED and tabulated(observer, check, tolerance)):
                flags.append(msg.FLAG_LOOKED_UP_VISIBLE.format(name=name) + msg.FLAG_AND_HIDDEN)
            elif call.hidden and result.passed and tabulated(observer, check, tolerance, True, secret):
                flags.append(msg.FLAG_LOOKED_UP_HIDDEN.format(name=name))
                result = dataclasses.replace(result, points=0.0, status=FAILED, message=msg.LOOKED_UP_HIDDEN)
            judged.append(result)
        results += judged
        flags += [msg.FLAG_GRADERS_CODE.format(name=r.name) for r in judged if r.misconception == msg.GRADERS_CODE]
        outputs += check_outputs([shown.note(r) for r in judged] if shown is not None else judged, call.hidden)
        if not all(r.passed for r in judged):
            break  # CheckFailed ends the cell, as in a kernel
    return CellVerdict(outputs, results, flags)


def check_outputs(results: list[CheckResult], hidden: bool) -> list[dict[str, Any]]:
    """The outputs `check(...)` leaves under nbgrader: the verdict (HTML, text fallback), then CheckFailed if any failed."""
    return notebook.check_outputs(results, hidden)


def stopped_output(reason: str) -> dict[str, Any]:
    """The error output of a cell the grader could not run (its grade cells score 0, as an error does in nbgrader)."""
    return {"output_type": "error", "ename": "NotGraded", "evalue": reason, "traceback": [msg.NOT_GRADED.format(reason=reason)]}


def flag_output(flags: list[str]) -> dict[str, Any]:
    """A stream output naming what the grader flagged in this cell."""
    return {"output_type": "stream", "name": "stdout", "text": "".join(msg.FLAGGED.format(flag=f) + "\n" for f in flags)}
