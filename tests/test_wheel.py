"""The package as users install it: a wheel, installed non-editable in a fresh virtual environment, used from elsewhere."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
import support

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "autograder"
DISTRIBUTION = "autograd-workbook"
# what a checkout may hold besides its sources: never part of a build
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv", "venv", "__pycache__", "*.egg-info", "build", "dist", "course",
                                    ".pytest_cache", ".ruff_cache", ".hypothesis", "test-artifacts", ".ipynb_checkpoints")

pytestmark = pytest.mark.slow


def run(args: list[str | Path], timeout: float = 600, **kw) -> subprocess.CompletedProcess[str]:
    """Run a command; fail the test with its output when it fails."""
    done = subprocess.run([str(a) for a in args], text=True, capture_output=True, timeout=timeout, **kw)
    assert done.returncode == 0, f"{' '.join(map(str, args))} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def outside_env(venv: Path) -> dict[str, str]:
    """The environment of a user of the installed package: its venv's bin first, no trace of this checkout's venv."""
    ours = Path(sys.executable).parent
    keep = {k: v for k, v in os.environ.items()
            if k not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "NBGRADER_EXECUTION", "AUTOGRADER_CONFIG",
                         "AUTOGRADER_COURSE_DIR"} and not k.startswith(("JUPYTER", "PYTEST"))}
    path = [p for p in keep.get("PATH", "").split(os.pathsep) if p and Path(p) != ours]
    return keep | {"PATH": os.pathsep.join([str(venv / "bin"), *path]), "VIRTUAL_ENV": str(venv)}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel `pip wheel` builds from a copy of this checkout (the build never writes into the repository)."""
    tmp = tmp_path_factory.mktemp("wheel")
    shutil.copytree(ROOT, tmp / "src", ignore=NOT_SOURCES)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--disable-pip-version-check",
         "-w", tmp / "dist", tmp / "src"])
    wheels = list((tmp / "dist").glob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment (no system site-packages) holding the wheel with its `course` extra (nbgrader, the
    grader's side) and their dependencies from the index."""
    venv = tmp_path_factory.mktemp("venv") / "venv"
    run([sys.executable, "-m", "venv", venv])
    run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check", f"{wheel}[course]"],
        timeout=1500)
    return venv


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working folder outside the repository, where `python -m` cannot find the checkout's package."""
    folder = tmp_path_factory.mktemp("elsewhere")
    assert ROOT not in folder.resolve().parents
    return folder


def source_version() -> str:
    """`__version__` as written in autograder/__init__.py (the one place the version is written)."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    return next(node.value.value for node in tree.body if isinstance(node, ast.Assign)
                and any(getattr(t, "id", None) == "__version__" for t in node.targets))


def test_the_wheel_holds_every_file_of_the_package(wheel: Path):
    in_repo = {p.relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*")
               if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {n for n in names if n.startswith("autograder/")} == in_repo
    assert "autograder/grading/batch.py" in names  # the subpackage a hand-written package list once left out
    name, version = wheel.name.split("-")[:2]
    assert {n.split("/")[0] for n in names} == {"autograder", f"{name}-{version}.dist-info"}, "only the package and its metadata"


def test_the_version_is_the_same_everywhere(wheel: Path, venv: Path, elsewhere: Path):
    version = source_version()
    name, wheel_version = wheel.name.split("-")[:2]
    assert (name, wheel_version) == (DISTRIBUTION.replace("-", "_"), version)
    env = outside_env(venv)
    script = "import autograder, importlib.metadata as m; print(autograder.__version__, m.version('autograd-workbook'))"
    assert run([venv / "bin" / "python", "-c", script], cwd=elsewhere, env=env).stdout.split() == [version, version]
    assert run([venv / "bin" / "python", "-m", "autograder", "--version"], cwd=elsewhere, env=env).stdout.strip() == (
        f"{DISTRIBUTION} {version}")


def test_the_installed_package_is_a_copy_not_the_checkout(venv: Path, elsewhere: Path):
    script = "import autograder, autograder.grading.batch as b; print(autograder.__file__); print(b.__file__)"
    files = run([venv / "bin" / "python", "-c", script], cwd=elsewhere, env=outside_env(venv)).stdout.split()
    for f in files:
        assert Path(f).resolve().is_relative_to(venv.resolve()), f"{f} is not inside the fresh venv"


def test_check_runs_on_a_notebook_from_a_folder_outside_the_repository(venv: Path, elsewhere: Path):
    # the last notebook holds the whole engine and the net: every check of the catalogue applies and passes
    shutil.copy(ROOT / "solutions" / "workbook" / "06_neural_net.ipynb", elsewhere / "mine.ipynb")
    done = subprocess.run([venv / "bin" / "python", "-m", "autograder", "check", "mine.ipynb"], cwd=elsewhere,
                          env=outside_env(venv), text=True, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "✓" in done.stdout and "✗" not in done.stdout
    assert re.search(r"^score: (\d+) / \1$", done.stdout, re.M), done.stdout[-500:]


def test_grade_grades_a_one_student_course_from_a_folder_outside_the_repository(venv: Path, elsewhere: Path):
    env = outside_env(venv)
    root = elsewhere / "course"
    shutil.copytree(support.FIXTURE_SOURCE, root / "source")
    (root / "nbgrader_config.py").write_text(support.CONFIG.format(root=str(root), assignment=support.ASSIGNMENT))
    run([venv / "bin" / "nbgrader", "generate_assignment", support.ASSIGNMENT, "--force"], cwd=root, env=env)
    support.submit(root, "learner", support.submission(root, ["derivatives", "engine"], []))

    done = run([venv / "bin" / "python", "-m", "autograder", "grade", support.ASSIGNMENT, "--course", root,
                "--config", root / "nbgrader_config.py", "--no-progress", "--jobs", "1", "--csv", elsewhere / "grades.csv"],
               cwd=elsewhere, env=env)
    assert "learner" in done.stdout

    source = nbformat.read(support.FIXTURE_SOURCE / support.ASSIGNMENT / f"{support.NOTEBOOK}.ipynb", as_version=4)
    points = {c.metadata.nbgrader["grade_id"]: c.metadata.nbgrader["points"] for c in source.cells
              if c.metadata.get("nbgrader", {}).get("grade")}
    assert support.grade_cells(root, ["learner"]) == {("learner", gid): p for gid, p in points.items()}  # full marks
    assert (root / "autograded" / "learner" / support.ASSIGNMENT / f"{support.NOTEBOOK}.ipynb").is_file()
    assert re.search(r"^learner,", (elsewhere / "grades.csv").read_text(), re.M)
