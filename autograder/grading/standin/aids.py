"""What the staged `autograder.workbook` takes from the grader's modules, inside the sandbox (no answers).

Staged as `autograder/_sandbox_aids.py`; `sandbox.stage()` points workbook.py's imports of `checks`, `catalog`, `check`
and `report` here; `summary` is replaced in the staged workbook.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any


def run_checks(checks: list[Any], ns: Any = None, **options: Any) -> list[Any]:
    """No checks run inside the sandbox (the staged workbook's `summary` never calls this)."""
    return []


def result_lines(result: Any) -> list[str]:
    """No verdicts inside the sandbox."""
    return []


checks = catalog = SimpleNamespace(get=lambda name: name)
