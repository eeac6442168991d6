"""`check(...)`: what a notebook's check cells call, printing ✓ or a diagnosis."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from . import checks
from .checks import CheckResult, run_checks
from .report import result_lines


class CheckFailed(AssertionError):
    """Some check failed; shown in Jupyter as the diagnosis alone, without a traceback."""

    def __init__(self, results: list[CheckResult]) -> None:
        self.results = results
        failed = [r for r in results if not r.passed]
        super().__init__(f"{len(failed)} of {len(results)} checks failed: {', '.join(r.name for r in failed)}")

    def _render_traceback_(self) -> list[str]:
        # IPython calls this instead of formatting a traceback.
        return [f"CheckFailed: {self}", "(the diagnosis is printed above)"]


def check(*names: str, hidden: bool = False, ns: Mapping[str, Any] | None = None) -> None:
    """Run the named catalog checks on the caller's definitions; print ✓ lines, raise CheckFailed on any ✗."""
    if ns is None:
        ns = sys._getframe(1).f_globals
    results = run_checks([checks.get(n) for n in names], ns, hidden=hidden)
    print(verdict_text(results, hidden))
    if not all(r.passed for r in results):
        raise CheckFailed(results)


def verdict_text(results: list[CheckResult], hidden: bool) -> str:
    """What a check cell prints: one ✓ line per passed check, the diagnosis of each failed one."""
    lines: list[str] = []
    for r in results:
        lines.extend([f"✓ {r.name} (hidden inputs)"] if hidden and r.passed else result_lines(r))
    return "\n".join(lines)
