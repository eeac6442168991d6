"""Resume, --force, SIGKILL mid-run, and the course lock of `python -m autograder grade`."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

import grading_corpus as gc
import pytest

from autograder.grading.store import LOCK_FILE, course_lock

pytestmark = pytest.mark.slow  # every test here grades a course built by nbgrader: minutes, not seconds

STUDENTS = {"correct_a": 7, "mul_no_swap": 4, "relerr_min": 5, "no_seed": 4, "correct_iterative": 7, "forward_difference": 6}


@pytest.fixture
def course(tmp_path):
    root = gc.make_course(tmp_path / "course")
    for s in STUDENTS:
        gc.submit(root, s, gc.submission(root, ["derivatives", "engine"], gc.EDITS[s]))
    return root


def totals(root):
    cells = gc.grade_cells(root, list(STUDENTS))
    return {s: sum(v or 0 for (st, _), v in cells.items() if st == s) for s in STUDENTS}


def grade_rows(root):
    with sqlite3.connect(root / "gradebook.db") as db:
        return db.execute("select count(*), count(distinct notebook_id || '/' || cell_id) from grade").fetchone()


def test_second_run_skips_unchanged_and_force_regrades(course):
    first = gc.grade_ours(course)
    assert first.returncode == 0, first.stderr
    assert totals(course) == STUDENTS
    second = gc.grade_ours(course)
    assert second.stdout.count("skipped (unchanged)") == len(STUDENTS)
    forced = gc.grade_ours(course, "--force")
    assert "skipped (unchanged)" not in forced.stdout and f"{len(STUDENTS)} graded" in forced.stdout
    assert totals(course) == STUDENTS


def test_a_changed_submission_is_regraded(course):
    gc.grade_ours(course)
    gc.submit(course, "mul_no_swap", gc.submission(course, ["derivatives", "engine"], []))
    out = gc.grade_ours(course).stdout
    assert out.count("skipped (unchanged)") == len(STUDENTS) - 1
    assert totals(course)["mul_no_swap"] == 7


def test_killed_run_then_rerun_ends_with_every_grade_correct_and_no_duplicates(course):
    cmd = [sys.executable, "-m", "autograder", "grade", gc.ASSIGNMENT, "--course", str(course),
           "--config", str(course / "nbgrader_config.py"), "--no-progress", "--jobs", "1"]
    proc = subprocess.Popen(cmd, cwd=course, env=gc.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    state = course / ".autograder-state.json"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not state.exists():  # kill once at least one notebook is stored
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = state.read_text().count('"fingerprint"') if state.exists() else 0
    assert done_before < len(STUDENTS), "the run finished before it was killed; nothing was tested"
    rerun = gc.grade_ours(course)
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.count("skipped (unchanged)") == done_before
    assert totals(course) == STUDENTS
    rows, distinct = grade_rows(course)
    assert rows == distinct == 4 * len(STUDENTS)


def test_second_grader_on_the_same_course_refuses_with_one_line(course):
    with course_lock(course):
        result = gc.grade_ours(course)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "another grader is already running" in result.stderr and "Traceback" not in result.stderr
    assert (course / LOCK_FILE).exists()


def test_cli_errors_are_one_line_without_traceback(course):
    for args in (["nope"], [gc.ASSIGNMENT, "--jobs", "-1"]):
        result = subprocess.run([sys.executable, "-m", "autograder", "grade", *args, "--course", str(course),
                                 "--config", str(course / "nbgrader_config.py")], env=gc.env(), text=True, capture_output=True)
        assert result.returncode == 2
        assert result.stderr.startswith("autograder: error:") and result.stderr.strip().count("\n") == 0
