"""The workbook under real nbgrader: generated learner notebooks, full marks for solutions, zero for stubs.

One module-scoped nbgrader run (generate_assignment + autograde of two students in a temp course) feeds
most tests: `solution` submits the instructor sources, `blank` the untouched learner notebooks.
"""

from __future__ import annotations

import ast
import itertools
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from grading_corpus import WORKBOOK_MISTAKES, submit_workbook_with_mistakes
from nbclient import NotebookClient

from autograder import checks as catalog

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "solutions" / "workbook"
RELEASE = ROOT / "notebooks" / "workbook"
NAMES = sorted(p.stem for p in SOURCE.glob("*.ipynb"))
VENV_BIN = str(Path(sys.executable).parent)


@dataclass
class Graded:
    """What one nbgrader run left behind, and a copy of the same course graded by our batch grader."""

    course: Path
    release: Path
    seconds: dict[str, float]  # per notebook of the solution student, as autograde logged them
    ours: Path


def nbgrader(args: list[str], course: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run real nbgrader with this venv's bin on PATH (it shells out to alembic) in a temp course."""
    env = {**os.environ, "PATH": VENV_BIN + os.pathsep + os.environ.get("PATH", ""), "AUTOGRADER_COURSE_DIR": str(course)}
    env.pop("NBGRADER_EXECUTION", None)
    cmd = ["nbgrader", *args, f"--NbGrader.config_file={ROOT / 'grading_config.py'}"]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def autograde_timed(course: Path) -> dict[str, float]:
    """Autograde every submission in one run; time each solution notebook from the log lines announcing them."""
    env = {**os.environ, "PATH": VENV_BIN + os.pathsep + os.environ.get("PATH", ""), "AUTOGRADER_COURSE_DIR": str(course)}
    env.pop("NBGRADER_EXECUTION", None)
    cmd = ["nbgrader", "autograde", "workbook", "--force", f"--NbGrader.config_file={ROOT / 'grading_config.py'}"]
    proc = subprocess.Popen(cmd, cwd=course, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    marks: list[tuple[str, float]] = []
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if "Converting notebook" in line or "Setting destination file permissions" in line:
            path = Path(line.split()[-1])
            marks.append((f"{path.parent.parent.name}/{path.stem}", time.monotonic()))
    assert proc.wait(timeout=900) == 0, "".join(lines)
    spans = {name: end - start for (name, start), (_, end) in itertools.pairwise(marks)}
    return {name: spans[f"solution/{name}"] for name in NAMES if f"solution/{name}" in spans}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Graded:
    base = tmp_path_factory.mktemp("workbook-course")
    course, release = base / "course", base / "release"
    course.mkdir()
    gen = nbgrader(["generate_assignment", "workbook", "--force", f"--CourseDirectory.release_directory={release}"],
                   course, base)
    assert gen.returncode == 0, gen.stderr
    for student, folder in (("solution", SOURCE), ("blank", RELEASE)):
        shutil.copytree(folder, course / "submitted" / student / "workbook")
    submit_workbook_with_mistakes(course / "submitted" / "mistaken" / "workbook")
    ours = base / "ours"
    shutil.copytree(course, ours)  # before plain autograde touches the gradebook
    seconds = autograde_timed(course)
    env = {**os.environ, "PATH": VENV_BIN + os.pathsep + os.environ.get("PATH", ""), "AUTOGRADER_COURSE_DIR": str(ours)}
    env.pop("NBGRADER_EXECUTION", None)
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", "workbook", "--course", str(ours),
                           "--config", str(ROOT / "grading_config.py"), "--no-progress"],
                          cwd=base, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return Graded(course, release / "workbook", seconds, ours)


def scores(graded: Graded, student: str, course: Path | None = None) -> dict[str, dict[str, tuple[float, float]]]:
    """{notebook: {grade_id: (score, max_score)}} from the gradebook (plain nbgrader's, unless `course` is given)."""
    from nbgrader.api import Gradebook

    out: dict[str, dict[str, tuple[float, float]]] = {}
    with Gradebook(f"sqlite:///{(course or graded.course) / 'gradebook.db'}") as gb:
        for name in NAMES:
            nb = gb.find_submission_notebook(name, "workbook", student)
            out[name] = {g.name: (g.score, g.max_score) for g in nb.grades}
    return out


def autograded(graded: Graded, student: str, name: str) -> nbformat.NotebookNode:
    return nbformat.read(graded.course / "autograded" / student / "workbook" / f"{name}.ipynb", as_version=4)


def is_grade_cell(cell: nbformat.NotebookNode) -> bool:
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("grade"))


def errors(cell: nbformat.NotebookNode) -> list[str]:
    return [o["ename"] for o in cell.get("outputs", []) if o["output_type"] == "error"]


def stderr(cell: nbformat.NotebookNode) -> str:
    return "".join(o["text"] for o in cell.get("outputs", []) if o["output_type"] == "stream" and o["name"] == "stderr")


def test_there_are_six_notebooks_in_order():
    assert NAMES == ["01_derivatives", "02_values", "03_backward", "04_bricks", "05_pytorch", "06_neural_net"]
    assert sorted(p.stem for p in RELEASE.glob("*.ipynb")) == NAMES


@pytest.mark.slow
def test_committed_learner_notebooks_equal_what_generate_assignment_produces(graded):
    for name in NAMES:
        fresh = (graded.release / f"{name}.ipynb").read_text(encoding="utf-8")
        committed = (RELEASE / f"{name}.ipynb").read_text(encoding="utf-8")
        assert fresh == committed, f"notebooks/workbook/{name}.ipynb is stale: run nbgrader generate_assignment (see README)"


@pytest.mark.slow
def test_solution_notebooks_earn_full_marks(graded):
    for name, grades in scores(graded, "solution").items():
        assert grades, f"{name} has no grade cells"
        assert {g: s for g, (s, m) in grades.items() if s != m} == {}, name


@pytest.mark.slow
def test_untouched_learner_notebooks_earn_zero_in_every_grade_cell(graded):
    for name, grades in scores(graded, "blank").items():
        assert {g: s for g, (s, m) in grades.items() if s != 0} == {}, name
        assert all(m > 0 for _, m in grades.values()), name


@pytest.mark.slow
def test_mistaken_notebooks_lose_exactly_the_grade_cells_of_their_mistakes(graded):
    lost = {(name, g) for name, grades in scores(graded, "mistaken").items() for g, (s, m) in grades.items() if s != m}
    assert {name for name, _ in lost} == {name.removesuffix(".ipynb") for name in WORKBOOK_MISTAKES}
    kept = {(name, g) for name, grades in scores(graded, "mistaken").items() for g, (s, m) in grades.items() if s == m}
    assert kept, "the mistakes should cost some grade cells, not all"


@pytest.mark.slow
def test_batch_grader_gives_every_workbook_grade_cell_the_same_score_as_plain_nbgrader(graded):
    for student in ("solution", "blank", "mistaken"):
        assert scores(graded, student, graded.ours) == scores(graded, student), student


@pytest.mark.slow
def test_solution_notebooks_run_top_to_bottom_without_error_or_grade_cell_stderr(graded):
    for name in NAMES:
        for i, cell in enumerate(autograded(graded, "solution", name).cells):
            assert errors(cell) == [], f"{name} cell {i}: {cell.source[:80]!r}"
            if is_grade_cell(cell):
                assert stderr(cell) == "", f"{name} cell {i}"
                assert "✓" in "".join(o.get("text", "") for o in cell.outputs), f"{name} cell {i} printed no ✓"


@pytest.mark.slow
def test_learner_notebooks_fail_only_with_not_implemented_and_every_check_fails(graded):
    for name in NAMES:
        nb = autograded(graded, "blank", name)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            if is_grade_cell(cell):
                assert errors(cell) == ["CheckFailed"], f"{name} cell {i} passed on the untouched stub"
                assert "✗" in "".join(o.get("text", "") for o in cell.outputs if o["output_type"] == "stream")
            else:
                assert set(errors(cell)) <= {"NotImplementedError"}, f"{name} cell {i}: {errors(cell)}"


def test_every_solution_cell_becomes_a_stub_in_the_learner_notebook():
    for name in NAMES:
        source = nbformat.read(SOURCE / f"{name}.ipynb", as_version=4)
        learner = nbformat.read(RELEASE / f"{name}.ipynb", as_version=4)
        solutions = [c for c in source.cells if c.metadata.get("nbgrader", {}).get("solution")]
        stubs = [c for c in learner.cells if c.metadata.get("nbgrader", {}).get("solution")]
        assert len(solutions) == len(stubs) > 0
        for s in stubs:
            assert "raise NotImplementedError()" in s.source and "BEGIN SOLUTION" not in s.source
        assert not any("BEGIN HIDDEN TESTS" in c.source for c in learner.cells)


def check_calls(source: str) -> list[ast.Call]:
    """The statements of a grade cell, each required to be a `check("name", ...)` call."""
    calls = []
    for stmt in ast.parse(source).body:
        assert isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call), ast.unparse(stmt)
        call = stmt.value
        assert isinstance(call.func, ast.Name) and call.func.id == "check", ast.unparse(stmt)
        calls.append(call)
    return calls


def test_grade_cells_hold_only_check_calls_with_catalog_names():
    names = {c.name for c in catalog.CHECKS}
    for name in NAMES:
        nb = nbformat.read(SOURCE / f"{name}.ipynb", as_version=4)
        grade_cells = [c for c in nb.cells if is_grade_cell(c)]
        assert grade_cells, name
        for cell in grade_cells:
            meta = cell.metadata["nbgrader"]
            assert meta["locked"] and not meta["solution"] and meta["points"] > 0 and meta["grade_id"]
            for call in check_calls(cell.source):
                args = [a.value for a in call.args if isinstance(a, ast.Constant)]
                assert len(args) == len(call.args) and set(args) <= names, ast.unparse(call)
                assert all(k.arg == "hidden" and k.value.value is True for k in call.keywords), ast.unparse(call)


@pytest.mark.slow
def test_solution_notebooks_under_autograde_timing_is_reported(graded, record_property):
    # Measured, never asserted (the budget is 30 s per notebook on 2 cores).
    assert set(graded.seconds) == set(NAMES)
    for name, s in graded.seconds.items():
        record_property(f"autograde_seconds_{name}", round(s, 2))
    print("autograde seconds per solution notebook:", {k: round(v, 1) for k, v in graded.seconds.items()})


@pytest.mark.slow
def test_solution_notebooks_run_interactively_without_error():
    # As a learner runs them: NBGRADER_EXECUTION unset, so demos train for real (progress bar, plots).
    env_before = os.environ.pop("NBGRADER_EXECUTION", None)
    try:
        for name in NAMES:
            nb = nbformat.read(SOURCE / f"{name}.ipynb", as_version=4)
            NotebookClient(nb, kernel_name="python3", timeout=120, allow_errors=True,
                           resources={"metadata": {"path": str(SOURCE)}}).execute()
            for i, cell in enumerate(nb.cells):
                assert errors(cell) == [], f"{name} cell {i}: {cell.source[:80]!r}"
    finally:
        if env_before is not None:
            os.environ["NBGRADER_EXECUTION"] = env_before
