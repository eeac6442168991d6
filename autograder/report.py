"""Turning check results into what people read: lines with a ✓ or ✗, or JSON.

Every place a diagnosis appears (a check cell, the summary, feedback, Validate's dialog, the command line) reads it
through `diagnosis()`, so it reads in one order everywhere: the method and the misconception's sentence first (the
lead), then the numbers that showed it (the evidence), then the lines that reproduce it. The grader's own names for
the probes it ran alone (`tanh_local`, `add_forward`...) are left out: a learner never meets them anywhere else.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from .checks.base import CheckResult
from .checks.messages import METHOD_OF, method_prefix
from .lines import one_line

PASS, FAIL = "✓", "✗"

# The shapes checks/run.py gives a failure pinned on another method (messages.NEEDS_FIRST, SAME_CULPRIT,
# FOUND_ALONE): read here so that each is shown in the one order, without the probe names inside them.
_NEEDS = re.compile(r"^needs `(?P<method>[^`]+)` to pass first; tested alone \([\w.]+\), it fails:$")
_SAME = re.compile(r"^fails because of `(?P<method>[^`]+)`, see above$")
_FOUND = re.compile(r"^\(found by testing `[^`]+` alone: [\w.]+\)$")
_HEAD = re.compile(r"([A-Za-z_][\w.]*): ")  # "Value.__mul__: ..." or "a.grad: ...": what the numbers are about
SAME_CAUSE = "same cause as above"


@dataclass(frozen=True)
class Diagnosis:
    """A check's outcome as people read it: the lead line, the numbers that showed it, the lines that reproduce it.

    `sentence` is the misconception's sentence alone (empty when none applies); `same_cause` marks a failure whose
    cause was already shown in full above.
    """

    lead: str
    evidence: tuple[str, ...] = ()
    repro: tuple[str, ...] = ()
    sentence: str = ""
    same_cause: bool = False


def _own(check: str, method: str) -> bool:
    """Whether `method` is one of the methods check `check` is the exercise of (else another exercise's)."""
    from .checks import BY_NAME

    known = BY_NAME.get(check)
    return known is None or method in known.own_methods


def _method(result: CheckResult, first: str) -> str:
    """The method the failure is about, as the learner knows it ('' when it is not one method)."""
    head = _HEAD.match(first)
    method = result.culprit or (head.group(1) if head and head.group(1).startswith("Value.") else "")
    method = method or method_prefix(result.misconception).removesuffix(": ")
    return "" if method == METHOD_OF["common"] else method


def _parts(lines: list[str]) -> tuple[list[str], str, list[str]]:
    """(evidence lines, the sentence, reproduce lines) of a message's lines."""
    evidence: list[str] = []
    sentence = ""
    repro: list[str] = []
    in_repro = False
    for line in lines:
        text = line.strip()
        if in_repro:
            repro.append(line)
        elif text == "reproduce:":
            in_repro = True
        elif text.startswith("hint:"):
            sentence = text[len("hint:"):].strip()
        elif text and not _FOUND.match(text):
            evidence.append(text)
    return evidence, sentence, textwrap.dedent("\n".join(repro)).splitlines()


def diagnosis(result: CheckResult) -> Diagnosis:
    """Read a result's message into the lead, the evidence and the reproduce lines (see the module docstring)."""
    lines = result.message.splitlines() or [""]
    first = lines[0].strip()
    if result.passed:
        return Diagnosis(first)
    same = _SAME.match(first)
    if same:
        method = same["method"]
        verb = f"fails because of `{method}`" if _own(result.name, method) else f"needs `{method}` to pass first"
        return Diagnosis(f"{verb}: {SAME_CAUSE}", same_cause=True)
    needs = _NEEDS.match(first)
    if needs:
        evidence, sentence, repro = _parts(lines[1:])
        method = needs["method"]
        while evidence and _NEEDS.match(evidence[0]):  # pinned in turn: the method at the end of the chain leads
            method = _NEEDS.match(evidence.pop(0))["method"]  # type: ignore[index]
        if evidence and evidence[0].startswith(f"{method}: "):
            evidence[0] = evidence[0][len(method) + 2:]
        lead = f"needs `{method}` to pass first" + (f": {sentence}" if sentence else ", which fails")
        return Diagnosis(lead, tuple(evidence), tuple(repro), sentence)
    evidence, sentence, repro = _parts(lines)
    if not sentence:  # not implemented, or a failure no sentence explains: its first line leads
        return Diagnosis(evidence[0] if evidence else first, tuple(evidence[1:]), tuple(repro))
    method = _method(result, evidence[0] if evidence else "")
    if method and evidence and evidence[0].startswith(f"{method}: "):
        evidence[0] = evidence[0][len(method) + 2:]
    lead = f"{method}: {sentence}" if method and method != result.name else sentence
    return Diagnosis(lead, tuple(evidence), tuple(repro), sentence)


def result_lines(result: CheckResult) -> list[str]:
    """A ✓ line, or a ✗ line with the lead, then the evidence ("seen: ...") and the reproduce lines, indented."""
    if result.passed:
        first, *rest = result.message.splitlines() or [""]
        return [one_line(ln) for ln in [f"{PASS} {result.name}: {first}", *("    " + ln for ln in rest)]]
    d = diagnosis(result)
    lines = [f"{FAIL} {result.name}: {d.lead}"]
    lines += [f"    {'seen: ' if i == 0 and d.sentence else ''}{ln}" for i, ln in enumerate(d.evidence)]
    if d.repro:
        lines += ["    reproduce:", *("      " + ln for ln in d.repro)]
    return [one_line(ln) for ln in lines]  # (the evidence quotes the learner's names and formulas: one line each)


def human(results: Sequence[CheckResult]) -> str:
    """One block per check and a score line."""
    lines = [ln for r in results for ln in result_lines(r)]
    score, total = score_of(results)
    lines.append(f"score: {score:g} / {total:g}")
    return "\n".join(lines)


def score_of(results: Sequence[CheckResult]) -> tuple[float, float]:
    """Points earned and points possible."""
    return sum(r.points for r in results), sum(r.max_points for r in results)


def as_json(results: Sequence[CheckResult]) -> str:
    """{"score", "max_score", "checks": [...]} with the documented keys."""
    score, total = score_of(results)
    return json.dumps({"score": score, "max_score": total, "checks": [r.to_dict() for r in results]},
                      indent=2, ensure_ascii=False)
