"""Tracebacks point at the learner's line (issue 34): once a notebook has run `from autograder import check`, every
cell runs under the learner kernel's guard (autograder.notebook.UnfinishedGuard), and an error of the learner's own
shows the same traceback as IPython shows without it: the same line, the same context, the caret where IPython puts
it. A kernel shows a cell's frame at the line it last ran, which the guard's `raise` used to be (line 7).
"""

from __future__ import annotations

import contextlib
import io
import re

import nbformat
import pytest
from nbclient import NotebookClient
from nbgrader_mode import nbgrader_execution

from autograder.notebook import UnfinishedGuard

# Errors at several lines, in `for`, `with`, `def` and the last expression, and a cell that ends in an expression
CELLS = {
    "line 5 of 7": "a = 1\nb = 2\nfor i in range(2):\n    c = i\nd = len(5)\ne = 3\nf = 4\n",
    "line 3 of 5": "a = 1\nb = 2\nc = b.nope\nd = 3\ne = 4\n",
    "line 1": "len(3)\nx = 1\n",
    "in a for": "a = 1\nfor i in range(3):\n    if i == 2:\n        c = 1 / (i - 2)\nd = 2\n",
    "in a with": "import contextlib\nwith contextlib.nullcontext():\n    x = 1\n    y = len(x)\nz = 1\n",
    "in a def": "def helper(x):\n    y = 1\n    return len(x)\n\nr = helper(3)\nq = 2\n",
    "in a def's body, called last": "def g(v):\n    return v.missing\n\ng(1)\n",
    "the last expression": "a = 1\nb = [1, 2]\nb[5]\n",
    "inside the last expression": "a = {'k': 1}\n[a['k'], a['nope'], 3]\n",
    "two statements on a line": "a = 1; b = a + 'x'; c = 2\n",
    "a long expression": "total = (1 +\n         2 +\n         len(4))\n",
}


def plain(text: str) -> str:
    """A traceback without colours and without the cell's number (which differs from run to run)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return re.sub(r"Cell In\[\d+\]", "Cell In[n]", text)


@pytest.fixture
def kernel_shell():
    """IPython's shell with ipykernel's compiler, as a kernel runs cells (the compiler is what shows the frame's
    line): its traceback for a cell, with the guard or without."""
    from ipykernel.compiler import XCachingCompiler
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    saved = shell.compile, list(shell.ast_transformers)
    shell.compile = XCachingCompiler()

    def traceback_of(cell: str, guarded: bool) -> str:
        shell.ast_transformers[:] = [UnfinishedGuard()] if guarded else []
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            shell.run_cell(cell, store_history=True)
        return plain(out.getvalue())

    yield traceback_of
    shell.compile, shell.ast_transformers[:] = saved[0], saved[1]


@pytest.mark.parametrize("where", sorted(CELLS))
def test_the_guard_shows_the_traceback_ipython_shows(kernel_shell, where):
    cell = CELLS[where]
    own = kernel_shell(cell, guarded=False)
    assert "Traceback" in own
    assert kernel_shell(cell, guarded=True) == own


def test_a_cell_that_raises_nothing_still_shows_its_last_expression(kernel_shell):
    shown = kernel_shell("x = 2\nx * 21\n", guarded=True)
    assert "Out[" in shown and "42" in shown and "Traceback" not in shown


@pytest.mark.slow
def test_in_a_real_kernel_the_traceback_after_importing_check_is_ipython_s_own(tmp_path):
    """The same cells in one kernel, before and after `from autograder import check` (which installs the guard in a
    learner's kernel): the same tracebacks."""
    cells = list(CELLS.values())
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in [*cells, "from autograder import check", *cells]]
    with nbgrader_execution(None):  # a learner's own kernel
        NotebookClient(nb, kernel_name="python3", timeout=120, allow_errors=True,
                       resources={"metadata": {"path": str(tmp_path)}}).execute()

    def shown(cell: nbformat.NotebookNode) -> str:
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert errors, cell.outputs
        return plain("\n".join(errors[0].traceback))

    before, after = nb.cells[: len(cells)], nb.cells[len(cells) + 1:]
    assert not any(o.output_type == "error" for o in nb.cells[len(cells)].outputs)
    for where, b, a in zip(CELLS, before, after):
        assert shown(a) == shown(b), where
