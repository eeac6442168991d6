"""The install's shape: a kernel needs only the base package; the course tools say in one line that they need more."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = (ROOT / "pyproject.toml").read_text()
SERVER_SIDE = ("nbgrader", "jupyterlab", "notebook", "nbformat", "nbclient", "ipykernel")


def requirement_names(block: str) -> set[str]:
    return {re.match(r'\s*"([A-Za-z0-9_.-]+)', ln).group(1) for ln in block.splitlines() if re.match(r'\s*"[A-Za-z]', ln)}


def test_the_base_install_holds_nothing_server_side_and_the_course_extra_holds_it_all():
    base = requirement_names(PYPROJECT.split("\ndependencies = [", 1)[1].split("]", 1)[0])
    course = requirement_names(PYPROJECT.split("\ncourse = [", 1)[1].split("]", 1)[0])
    assert not base & set(SERVER_SIDE), base
    assert set(SERVER_SIDE) <= course


BLOCKED = ("import sys\nfor m in {mods}: sys.modules[m] = None  # as if not installed\n"
           "from autograder.cli import main\nsys.exit(main({argv}))")


@pytest.mark.parametrize("argv", [["grade", "workbook"], ["extension", "workbook", "ada", "--days", "1"], ["similarity", "workbook"]])
def test_a_course_command_without_the_course_extra_says_so_in_one_line(argv: list[str], tmp_path: Path):
    code = BLOCKED.format(mods=list(SERVER_SIDE), argv=argv)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "pip install 'autograd-workbook[course]'" in done.stderr


def test_the_notebook_side_imports_without_any_server_side_package():
    code = (f"import sys\nfor m in {list(SERVER_SIDE)}: sys.modules[m] = None\n"
            "from autograder import check\nfrom autograder.workbook import summary, draw_graph, make_moons, progress\n"
            "print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr
