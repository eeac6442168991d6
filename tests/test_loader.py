"""The loader runs a file's definitions, records (never raises) what went wrong, and skips non-definition cells."""

import subprocess
import sys

import nbformat
import pytest

from autograder.loader import UnreadableFile, calls_check, is_definition_cell, load, strip_magics


def notebook(tmp_path, *cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    return path


def test_check_cells_are_recognised_by_their_call():
    assert calls_check("from autograder import check\ncheck('add_forward')")
    assert not calls_check("def check_me():\n    pass")
    assert not calls_check("x = (")  # a syntax error is a definition cell's problem, recorded at load time


@pytest.mark.parametrize(("meta", "source", "runs"), [
    ({}, "x = 1", True),
    ({"nbgrader": {"solution": True, "grade": False}}, "x = 1", True),
    ({"nbgrader": {"solution": True, "grade": True}}, "x = 1", True),  # autograded answer cell
    ({"nbgrader": {"solution": False, "grade": True}}, "x = 1", False),  # test cell
    ({"tags": ["demo"]}, "x = 1", False),
    ({"tags": ["plot"]}, "x = 1", False),
    ({"tags": ["test"]}, "x = 1", False),
    ({"tags": ["skip-import"]}, "x = 1", False),
    ({}, "check('add_forward')", False),
])
def test_definition_cells_are_solution_and_setup_cells_only(meta, source, runs):
    assert is_definition_cell(nbformat.v4.new_code_cell(source, metadata=meta)) is runs


def test_markdown_cells_never_run():
    assert not is_definition_cell(nbformat.v4.new_markdown_cell("x = 1"))


def test_magics_and_shell_escapes_are_stripped():
    assert strip_magics("%matplotlib inline\n!pip install x\nx = 1\n  %time y = 2") == "x = 1"


def test_a_failing_cell_is_recorded_and_later_cells_still_run(tmp_path):
    path = notebook(tmp_path, nbformat.v4.new_code_cell("a = 1"), nbformat.v4.new_code_cell("1 / 0"),
                    nbformat.v4.new_code_cell("raise NotImplementedError()"), nbformat.v4.new_code_cell("def f(:"),
                    nbformat.v4.new_code_cell("import sys; sys.exit(2)"), nbformat.v4.new_code_cell("b = a + 1"))
    loaded = load(path)
    assert loaded.namespace["b"] == 2
    assert loaded.problems == ["cell 2: ZeroDivisionError: division by zero", "cell 3: raises NotImplementedError (not done yet)",
                               "cell 4: SyntaxError at line 1: invalid syntax", "cell 5: SystemExit: 2"]


def test_a_looping_cell_hits_the_cell_time_limit(tmp_path):
    path = notebook(tmp_path, nbformat.v4.new_code_cell("while True:\n    pass"), nbformat.v4.new_code_cell("done = 1"))
    loaded = load(path, cell_timeout=0.2)
    assert loaded.namespace["done"] == 1 and "did not finish within 0.2 s" in loaded.problems[0]


def test_a_cell_that_loops_after_a_check_of_its_own_still_hits_the_cell_time_limit(tmp_path):
    # the check's time limit nests in the cell's and used to cancel it: `python -m autograder check` then never ended
    path = notebook(tmp_path, nbformat.v4.new_code_cell(
        "from autograder.probes.safe import time_limit\nwith time_limit(5):  # what check() does\n    pass\nwhile True:\n    pass"),
        nbformat.v4.new_code_cell("done = 1"))
    code = (f"from autograder.loader import load\nloaded = load({str(path)!r}, cell_timeout=0.2)\n"
            "print(loaded.namespace['done'], loaded.problems)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)  # (in a process of
    assert done.returncode == 0, done.stderr  # its own: without the cell's limit the loop would never end)
    assert done.stdout.startswith("1 ") and "cell 1: " in done.stdout and "did not finish within 0.2 s" in done.stdout


def test_learner_output_while_loading_is_swallowed(tmp_path, capsys):
    path = tmp_path / "noisy.py"
    path.write_text("import sys\nprint('hello')\nprint('oops', file=sys.stderr)\n")
    load(path)
    assert capsys.readouterr() == ("", "")


def test_a_recursion_limit_set_by_the_learner_is_undone(tmp_path):
    before = sys.getrecursionlimit()
    path = tmp_path / "limit.py"
    path.write_text("import sys\nsys.setrecursionlimit(50)\n")
    load(path)
    assert sys.getrecursionlimit() == before


def test_an_unreadable_path_raises_one_line(tmp_path):
    with pytest.raises(UnreadableFile, match="no such file"):
        load(tmp_path / "missing.py")
