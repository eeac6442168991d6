"""Turning check results into what people read: lines with a ✓ or ✗, or JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence

from .checks.base import CheckResult

PASS, FAIL = "✓", "✗"


def result_lines(result: CheckResult) -> list[str]:
    """A ✓ line, or a ✗ line followed by the rest of the diagnosis, indented."""
    first, *rest = result.message.splitlines() or [""]
    mark = PASS if result.passed else FAIL
    return [f"{mark} {result.name}: {first}", *("    " + ln for ln in rest)]


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
