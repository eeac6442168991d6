"""Run All as a learner does it, in a real Jupyter kernel: a half-done notebook reaches its summary.

JupyterLab's "Run All" stops at the first cell that ends in an error, so these run with `allow_errors=False`:
any error fails the test. Then nbgrader's Validate runs on the same half-done file and must still fail.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from nbgrader_mode import nbgrader_execution

from autograder.checks.messages import hint

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "solutions" / "workbook"
RELEASE = ROOT / "notebooks" / "workbook"
NAMES = sorted(p.stem for p in SOURCE.glob("*.ipynb"))
SOLUTION_MARKER = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")

pytestmark = pytest.mark.slow


def run_all(nb: nbformat.NotebookNode, folder: Path) -> nbformat.NotebookNode:
    """Execute every cell in a fresh kernel as a learner's "Run All" (NBGRADER_EXECUTION unset); stop at an error."""
    with nbgrader_execution(None):
        NotebookClient(nb, kernel_name="python3", timeout=180, allow_errors=False,
                       resources={"metadata": {"path": str(folder)}}).execute()
    return nb


def text(cell: nbformat.NotebookNode) -> str:
    """Everything a cell shows as text: printed lines and the plain-text form of displayed results."""
    parts = []
    for o in cell.get("outputs", []):
        if o["output_type"] == "stream":
            parts.append(o["text"])
        elif o["output_type"] in ("display_data", "execute_result"):
            parts.append(o["data"].get("text/plain", ""))
    return "".join(parts)


def summary_cell(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    cells = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("summary(")]
    assert len(cells) == 1
    return cells[0]


def solutions_by_grade_id(name: str) -> dict[str, str]:
    """Each solution cell of the instructor source as a learner who solved it has it (markers removed)."""
    nb = nbformat.read(SOURCE / f"{name}.ipynb", as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: "\n".join(ln for ln in c.source.splitlines() if not SOLUTION_MARKER.match(ln))
            for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")}


def half_done_03() -> nbformat.NotebookNode:
    """Notebook 03 with `+` solved, `*` written with its operands unswapped, and backward() not started."""
    nb = nbformat.read(RELEASE / "03_backward.ipynb", as_version=4)
    solved = solutions_by_grade_id("03_backward")
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid == "ex_03_add":
            cell.source = solved[gid]
        elif gid == "ex_03_mul":
            wrong = solved[gid].replace("self.grad += other.data", "self.grad += self.data")
            cell.source = wrong.replace("other.grad += self.data", "other.grad += other.data")
            assert wrong != solved[gid]
    return nb


@pytest.fixture(scope="module")
def half_done(tmp_path_factory: pytest.TempPathFactory) -> tuple[nbformat.NotebookNode, Path]:
    folder = tmp_path_factory.mktemp("half-done")
    nb = half_done_03()
    path = folder / "03_backward.ipynb"
    nbformat.write(nb, path)
    return run_all(nb, folder), path


def listed(summary: str) -> dict[str, list[str]]:
    """The summary's closing lines: {"Not done yet": [...], "Failing": [...]}."""
    return {head: names.rstrip(".").split(", ") for line in summary.splitlines()
            for head, sep, names in [line.partition(": ")] if sep and head in ("Not done yet", "Failing")}


def test_run_all_of_a_half_done_notebook_reaches_the_summary_listing_exactly_what_is_left(half_done):
    nb, _ = half_done
    out = text(summary_cell(nb))
    checks = ["add_local_backward", "mul_local_backward", "backward_seeds_root", "backward_through_add", "backward_through_mul",
              "backward_chain_order", "backward_topological_order", "backward_once_per_node", "backward_equal_data",
              "backward_accumulates"]
    assert re.findall(r"✓ (\w+)", out) == ["add_local_backward"]
    left = listed(out)
    assert sorted(n for names in left.values() for n in names) == sorted(checks[1:])  # each exactly once
    assert "mul_local_backward" in left["Failing"]  # the real mistake, apart from what is merely unfinished
    assert "1 of 8 points; 1 of 10 checks pass." in out


def test_in_a_half_done_run_failing_checks_show_their_diagnosis_and_demos_say_what_is_missing(half_done):
    nb, _ = half_done
    mul_check = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "check_03_mul")
    assert "✗ mul_local_backward" in text(mul_check) and "unswapped" in text(mul_check)
    html = "".join(o["data"].get("text/html", "") for o in mul_check.outputs if o["output_type"] == "display_data")
    assert "✗ mul_local_backward</span>" in html
    notices = [text(c) for c in nb.cells if c.cell_type == "code" and "⋯ not done yet" in text(c)]
    assert notices and all(t.count("\n") == 1 and "backward still raises NotImplementedError" in t for t in notices)


def test_validate_still_fails_on_the_half_done_notebook_and_shows_the_diagnosis(half_done):
    _, path = half_done
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("NBGRADER_EXECUTION", None)
    done = subprocess.run(["nbgrader", "validate", str(path)], cwd=path.parent, env=env, capture_output=True, text=True,
                          timeout=600)
    out = done.stdout + done.stderr
    assert "VALIDATION FAILED" in out, out
    assert "✗ mul_local_backward: " in out and "✗ backward_accumulates: " in out, out
    # every word of the diagnosis shows, the method and its misconception first (validate cuts lines at its width)
    words = " ".join(out.split())
    assert f"✗ mul_local_backward: Value.__mul__: {' '.join(hint('mul.unswapped', 'a').split()).rstrip('.')}. Seen:" in words
    errors = [part.split("=" * 20)[0] for part in out.split("The error was:")[1:]]
    assert errors and not any(ln.endswith("...") for part in errors for ln in part.splitlines()), out


@pytest.mark.parametrize("name", NAMES)
def test_run_all_of_an_untouched_notebook_reaches_a_summary_of_zero_points(name: str, tmp_path: Path):
    nb = run_all(nbformat.read(RELEASE / f"{name}.ipynb", as_version=4), tmp_path)
    out = text(summary_cell(nb))
    assert re.search(r"^0 of \d+ points?; 0 of \d+ checks pass\.$", out, re.M), out
    left = [n for names in listed(out).values() for n in names]
    checks = re.findall(r"[✓✗⋯] (\w+)", out)
    assert sorted(left) == sorted(checks) and "✓" not in out, out  # every check is listed as left to do
    assert "Failing" not in listed(out), out  # as not done yet: an untouched exercise is no mistake
    assert "✗" not in out and out.count("raise NotImplementedError()") <= 1, out  # quiet lines, the instruction once
    notices = [text(c) for c in nb.cells if c.cell_type == "code" and "⋯ not done yet" in text(c)]
    assert all(t.count("\n") == 1 for t in notices), notices  # a demo needing an exercise says so in one line only
    for cell in nb.cells:
        assert "Traceback" not in text(cell) and "NotImplementedError()" not in text(cell).replace(
            "replace the `raise NotImplementedError()` line", "")


PLOTS = re.compile(r"\bplot_\w+\(")


@pytest.mark.parametrize("name", ["01_derivatives", "06_neural_net"])
def test_without_matplotlib_every_plot_cell_says_so_in_one_line_and_run_all_reaches_a_full_summary(name: str, tmp_path: Path):
    from autograder.aids.plots import NO_MATPLOTLIB

    nb = nbformat.read(SOURCE / f"{name}.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = "\n".join(ln for ln in cell.source.splitlines() if not SOLUTION_MARKER.match(ln))
    # a kernel where matplotlib cannot be imported: a JupyterLite site on Pyodide's core
    nb.cells.insert(0, nbformat.v4.new_code_cell('import sys\nsys.modules["matplotlib"] = None'))
    run_all(nb, tmp_path)
    plot_cells = [c for c in nb.cells if c.cell_type == "code" and PLOTS.search(c.source)]
    assert plot_cells, f"{name} has no cell that plots"
    for cell in plot_cells:
        shown = text(cell)
        assert shown.count(NO_MATPLOTLIB) == 1, (cell.source, shown)  # once, even where a cell draws two plots
        assert shown.splitlines()[0] != NO_MATPLOTLIB, f"the numbers come first:\n{shown}"
    assert "this notebook is done" in text(summary_cell(nb))


def learner_runs(name: str) -> dict[str, nbformat.NotebookNode]:
    """Every way the corpus has a learner's notebook `name` go wrong: each mistake, each exercise left unfinished."""
    from notebook_corpus import DIAGNOSED, MISTAKES, learner_notebook

    bugs = {**MISTAKES, **{k: d.variant for k, d in DIAGNOSED.items()}}
    runs = {k: learner_notebook(name, v) for k, v in sorted(bugs.items()) if v.notebook == name}
    exercises = [c.metadata["nbgrader"]["grade_id"] for c in nbformat.read(RELEASE / f"{name}.ipynb", as_version=4).cells
                 if c.metadata.get("nbgrader", {}).get("solution")]
    runs.update({f"{gid} unfinished": learner_notebook(name, unfinished=gid) for gid in exercises})
    return runs


# Demos at their grading size: what is proved is that no error stops Run All, not the size of a demo's run.
SMALL_DEMOS = "import autograder.workbook\nautograder.workbook.demo_size = lambda interactive, graded: graded"


@pytest.mark.parametrize("name", NAMES)
def test_run_all_reaches_the_summary_whatever_mistake_or_unfinished_exercise_the_notebook_holds(name: str, tmp_path: Path):
    """One kernel per notebook, reset between runs (as Restart & Run All leaves it): any cell error is listed."""
    runs = learner_runs(name)
    assert len(runs) >= 3, runs.keys()
    stopped, lines = {}, []
    client = NotebookClient(nbformat.v4.new_notebook(), kernel_name="python3", timeout=180, allow_errors=False,
                            resources={"metadata": {"path": str(tmp_path)}})
    with nbgrader_execution(None), client.setup_kernel():
        for label, nb in runs.items():
            cells = [nbformat.v4.new_code_cell("%reset -f"), nbformat.v4.new_code_cell(SMALL_DEMOS), *nb.cells]
            client.nb = nbformat.v4.new_notebook(cells=cells, metadata=nb.metadata)
            try:
                for i, cell in enumerate(cells):
                    if cell.cell_type == "code":
                        client.execute_cell(cell, i)
            except CellExecutionError as exc:
                stopped[label] = f"cell {i}: {cell.source[:60]!r}: {str(exc).strip().splitlines()[-1]}"
                continue
            out = text(summary_cell(client.nb))
            if "checks pass" not in out:
                stopped[label] = f"summary: {out[:200]!r}"
            lines += [t for c in cells if c.cell_type == "code" for o in c.outputs if o.get("name") == "stdout"
                      for t in o["text"].splitlines() if "this demo needs" in t]
    assert not stopped, "\n".join(f"{k}: {v}" for k, v in stopped.items())
    odd = [t for t in lines if not (t.startswith("⋯ this demo needs ") and t.count(" — see ") == 1)]
    assert not odd, odd  # one line each, naming the method, pointing to its check (where a mistake breaks a demo)
