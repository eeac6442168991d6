"""Where a notebook runs: under nbgrader (or the batch grader), in a Jupyter kernel, or elsewhere."""

from __future__ import annotations

import os
import sys


def grading() -> bool:
    """True while nbgrader executes the notebook (autograde or validate), and inside the batch grader's sandbox."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


def in_kernel() -> bool:
    """True inside a running Jupyter kernel, not merely when something imported ipykernel."""
    app = sys.modules.get("ipykernel.kernelapp")
    return app is not None and app.IPKernelApp.initialized()


def demo_size(interactive: int, graded: int) -> int:
    """`interactive` for a learner, the smaller `graded` under nbgrader (demo output is never graded)."""
    return graded if grading() else interactive
