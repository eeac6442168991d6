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


GRADING_SIZE = "(grading-size run: {graded} here, {interactive} in your own run; not this demo's real result, no grade depends on it)"
_labelled: set[int] = set()  # the cells (IPython's execution counts) whose grading-size run has been said so


def _cell() -> int | None:
    """The running cell's execution count in an IPython shell (a kernel, the grading worker), else None."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "execution_count", None)


def demo_size(interactive: int, graded: int) -> int:
    """`interactive` for a learner, the smaller `graded` under nbgrader (demo output is never graded).

    Under nbgrader the cell says so in one line (once per cell), so that its feedback is not read as the demo's
    result (notebook 6's net trained for one step on 8 points does not separate the moons).
    """
    if not grading():
        return interactive
    cell = _cell()
    if cell is None or cell not in _labelled:
        if cell is not None:
            _labelled.add(cell)
        print(GRADING_SIZE.format(graded=graded, interactive=interactive))
    return graded
