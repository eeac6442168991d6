"""`./workbook`: its long set-up phases say what they are doing, how long they take, and when they are done.

The script runs in a copy of the checkout whose `.venv/bin/python` is a stand-in that records its arguments, so the
test takes no minute of pip; what it checks is what a user reads on stderr.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAND_IN = """#!/bin/sh
echo "$@" >>"$(dirname "$0")/calls.log"
case "$1" in -c) echo 3.11.0 ;; esac
exit 0
"""


def checkout(tmp_path: Path) -> Path:
    """The script and pyproject.toml in a folder of their own, with a stand-in venv Python."""
    shutil.copy(ROOT / "workbook", tmp_path / "workbook")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(STAND_IN)
    python.chmod(0o755)
    return tmp_path


def workbook(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "WORKBOOK_VENV")}
    return subprocess.run(["./workbook", *args], cwd=folder, env=env, text=True, capture_output=True, timeout=60)


def test_the_install_says_what_it_does_how_long_it_takes_and_when_it_is_done(tmp_path):
    folder = checkout(tmp_path)
    first = workbook(folder, "test")
    assert first.returncode == 0, first.stderr
    lines = first.stderr.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("workbook: installing .[dev] into .venv with pip"))
    assert "about 2 minutes" in lines[start]
    assert re.fullmatch(r"workbook: installed \.\[dev\] in \d+ s", lines[start + 1]), lines
    assert any(ln.startswith("workbook: running the whole test suite") for ln in lines[start + 2:]), lines
    calls = (folder / ".venv" / "bin" / "calls.log").read_text()
    assert "-m pip install --quiet --disable-pip-version-check -e .[dev]" in calls  # and it did install
    again = workbook(folder, "test", "-q")  # set-up skipped; a run with arguments is not the whole suite
    assert again.returncode == 0 and again.stderr == "", again.stderr
