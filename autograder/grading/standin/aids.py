"""What the staged `autograder.workbook` takes from the grader's modules, inside the sandbox (no answers).

Staged as `autograder/_sandbox_aids.py`; `sandbox.stage()` points every relative import of workbook.py that is not
staged itself (checks, notebook, report, ...) here, and replaces `summary`. The few helpers the teaching aids use
while grading are real; any other name is a placeholder that says it is not available inside the sandbox.
"""

from __future__ import annotations

import os
from typing import Any

GREEN, RED = "#1a7f37", "#cf222e"
NOT_IMPLEMENTED = "not_implemented"


def grading() -> bool:
    """True while nbgrader (or the batch grader) executes the notebook."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


def in_kernel() -> bool:
    """The grading worker is not a Jupyter kernel."""
    return False


def show(text: str, html: str = "") -> None:
    """Print the text (the worker captures it as the cell's output)."""
    print(text)


def __getattr__(name: str) -> Any:
    """Anything else of the grader's (run_checks, get, result_lines...): a placeholder that refuses to run."""
    if name.startswith("__"):
        raise AttributeError(name)

    def unavailable(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{name} is not available while the grader runs this notebook")

    unavailable.__name__ = name
    return unavailable
