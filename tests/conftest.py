"""Shared fixtures, and the support modules' folders on sys.path (every test module imports them by name)."""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENGINES = Path(__file__).resolve().parent / "engines"
# tests/checks (the catalogue's: engine_corpus, mistakes, twins, notebook_corpus, ...) and tests/workbook (the
# notebooks': nbgrader_mode), for the test modules of every folder
SUPPORT = [str(ROOT / "tests" / folder) for folder in ("checks", "workbook")]
sys.path[1:1] = [p for p in SUPPORT if p not in sys.path]


@pytest.fixture(scope="session")
def graded(tmp_path_factory: pytest.TempPathFactory):
    """The workbook course graded by plain nbgrader and by this grader, once per session (tests/support.py)."""
    from support import grade_workbook_course

    return grade_workbook_course(tmp_path_factory.mktemp("workbook-course"))


@pytest.fixture(scope="module")
def course(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The requesting module's course, its `COURSE` (a support.CoursePlan): checked out, submitted and graded once."""
    plan = getattr(request.module, "COURSE", None)
    if plan is None:
        pytest.fail(f"{request.module.__name__} uses the `course` fixture but declares no COURSE = support.CoursePlan(...)",
                    pytrace=False)
    return plan.build(tmp_path_factory.mktemp(request.module.__name__.removeprefix("test_")))


@pytest.fixture
def engine_path():
    """Path of a test engine by module name (tests/engines/NAME.py)."""

    def path(name: str) -> Path:
        return ENGINES / f"{name}.py"

    return path


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Inside the fresh-clone test's own `./workbook test`, skip that test: no endless recursion."""
    if os.environ.get("WORKBOOK_FRESH_CLONE_INNER") == "1":
        skip = pytest.mark.skip(reason="inside the fresh-clone test's own run of ./workbook test (no recursion)")
        for item in items:
            if "fresh_clone" in item.keywords:
                item.add_marker(skip)
