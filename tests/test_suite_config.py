"""The suite's own settings (pyproject.toml): a test that hangs fails, named, and the rest of the run goes on; the
suite's timeout is above every limit a test gives its own subprocesses."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

HANGS = '''
import time

from autograder.probes.safe import time_limit


def test_before():
    pass


def test_hangs_after_a_check():
    with time_limit(5):  # a check run in-process sets its own alarm first: the runner's deadline must outlive it
        pass
    time.sleep(120)


def test_after():
    pass
'''


@pytest.mark.slow  # a pytest run of its own (~8 s)
def test_a_hanging_test_fails_named_with_its_line_and_the_others_still_run(tmp_path: Path) -> None:
    (tmp_path / "test_hangs.py").write_text(HANGS)
    # the project's own pytest settings (xdist, loadfile, the timeout's method), with a deadline of 3 s for the trial
    done = subprocess.run([sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path),
                           "-p", "no:cacheprovider", "-o", "timeout=3", str(tmp_path / "test_hangs.py")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "FAILED test_hangs.py::test_hangs_after_a_check" in out, out
    assert ">       time.sleep(120)\nE       Failed: Timeout (>3.0s) from pytest-timeout." in out, out  # where it hung
    assert "2 passed" in out and "1 failed" in out and "crashed" not in out, out  # once, and the module went on


# the calls whose `timeout=` is in seconds and bounds a subprocess or a server a test waits for (Playwright's
# `wait_for(timeout=...)` counts milliseconds and is bounded by the test's own timeout anyway)
WAITS = {"run", "communicate", "wait", "check_output", "wait_until_served", "workbook_test"}


def test_the_suite_timeout_is_above_every_limit_a_test_gives_its_own_subprocesses() -> None:
    # so that a subprocess past its limit fails first, with its own log, as docs/contributing.md says
    suite = int(re.search(r"^timeout = (\d+)$", (ROOT / "pyproject.toml").read_text(), re.M).group(1))  # (3.10: no tomllib)
    limits = {}
    for path in (ROOT / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", getattr(node.func, "id", ""))
                for kw in node.keywords:
                    if name in WAITS and kw.arg == "timeout" and isinstance(kw.value, ast.Constant):
                        limits[f"{path.relative_to(ROOT)}:{node.lineno}"] = kw.value.value
    assert len(limits) > 20 and max(limits.values()) >= 1800  # (it finds them: the longest is 1800 s today)
    assert {where: s for where, s in limits.items() if s >= suite} == {}
