"""`autograder.workbook` as a notebook imports it inside the grading sandbox: the teaching aids, and no checks.

Staged by `sandbox.stage()` as `autograder/workbook.py`, next to the `autograder.aids` package (staged unchanged).
While grading, nbgrader's rules score each grade cell on its own, so `summary` only says so, as the real one does.
"""

from __future__ import annotations

from typing import Any

from autograder.aids import (  # noqa: F401  (what the notebooks import from autograder.workbook)
    CPU_TORCH,
    TORCH_REFERENCE,
    GraphPicture,
    NotRecorded,
    demo_size,
    draw_graph,
    make_moons,
    plot_decision_boundary,
    plot_loss,
    plot_slopes,
    progress,
    recorded,
    torch_or_none,
    torch_reference,
)


def summary(*cells: tuple[Any, ...], ns: Any = None) -> None:
    """While grading, the grader scores each grade cell itself, outside this process."""
    print("Summary: skipped while nbgrader runs this notebook (each grade cell above is scored on its own).")


def unless_passing(*names: str, ns: Any = None) -> None:
    """While grading, demos are never graded: nothing to say about them."""
