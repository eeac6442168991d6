"""Where a notebook runs: under nbgrader (or the batch grader), in a Jupyter kernel, or elsewhere."""

from __future__ import annotations

import os
import sys


def grading() -> bool:
    """True while nbgrader executes the notebook (autograde or validate), and inside the batch grader's sandbox."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


def in_browser() -> bool:
    """True in JupyterLite's Pyodide kernel: Python compiled to WebAssembly, running in the browser's page."""
    return sys.platform == "emscripten"


def in_kernel() -> bool:
    """True inside a running Jupyter kernel (JupyterLite's Pyodide kernel too), not merely when something imported ipykernel."""
    if in_browser():
        return "pyodide_kernel" in sys.modules
    app = sys.modules.get("ipykernel.kernelapp")
    return app is not None and app.IPKernelApp.initialized()


def demo_size(interactive: int, graded: int) -> int:
    """`interactive` for a learner, the smaller `graded` under nbgrader (demo output is never graded)."""
    return graded if grading() else interactive
