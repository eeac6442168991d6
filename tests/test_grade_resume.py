"""Resume, --force, SIGKILL mid-run, and the course lock of `python -m autograder grade`."""

from __future__ import annotations

import csv
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import postgres_server
import pytest
import support

from autograder.grading.grade.sandbox.client import STAGING_PREFIX
from autograder.grading.store.files import LOCK_FILE, SECRET_FILE, course_lock
from autograder.grading.store.journal import JOURNAL_FILE, Journal

pytestmark = pytest.mark.slow  # every test here grades a course built by nbgrader: minutes, not seconds

STUDENTS = {"correct_a": 7, "mul_no_swap": 4, "relerr_min": 5, "no_seed": 4, "correct_iterative": 7, "forward_difference": 6}


def _course(root, db_url=None):
    root = support.make_course(root, db_url)
    for s in STUDENTS:
        support.submit(root, s, support.submission(root, ["derivatives", "engine"], support.EDITS[s]))
    return root


@pytest.fixture
def course(tmp_path):
    return _course(tmp_path / "course")


@pytest.fixture(params=["sqlite", "postgresql"])
def any_db_course(request, tmp_path):
    """The course with its gradebook on SQLite, then on a PostgreSQL server: (root, its gradebook's URL)."""
    if request.param == "sqlite":
        yield _course(tmp_path / "course"), None
        return
    with postgres_server.server() as url:  # (skips, saying why, outside CI when there is no server)
        yield _course(tmp_path / "course", url), url


def totals(root, db_url=None):
    cells = support.grade_cells(root, list(STUDENTS), db_url)
    return {s: sum(v or 0 for (st, _), v in cells.items() if st == s) for s in STUDENTS}


def grade_rows(root, db_url=None):
    from nbgrader.api import Gradebook
    from sqlalchemy import text

    with Gradebook(db_url or f"sqlite:///{root / 'gradebook.db'}") as gb:
        return tuple(gb.db.execute(text("select count(*), count(distinct notebook_id || '/' || cell_id) from grade")).one())


def journal(root):
    """The course's resume journal as the grader reads it."""
    return Journal(root, bytes.fromhex((root / SECRET_FILE).read_text().strip()))


def test_second_run_skips_unchanged_and_force_regrades(course):
    first = support.grade_ours(course)
    assert first.returncode == 0, first.stderr
    assert totals(course) == STUDENTS
    second = support.grade_ours(course)
    assert second.stdout.count("skipped (unchanged)") == len(STUDENTS)
    forced = support.grade_ours(course, "--force")
    assert "skipped (unchanged)" not in forced.stdout and f"{len(STUDENTS)} graded" in forced.stdout
    assert totals(course) == STUDENTS


def test_a_changed_submission_is_regraded(course):
    support.grade_ours(course)
    support.submit(course, "mul_no_swap", support.submission(course, ["derivatives", "engine"], []))
    out = support.grade_ours(course).stdout
    assert out.count("skipped (unchanged)") == len(STUDENTS) - 1
    assert totals(course)["mul_no_swap"] == 7


def test_killed_run_then_rerun_ends_with_every_grade_correct_and_no_duplicates(any_db_course):
    course, db_url = any_db_course
    cmd = [sys.executable, "-m", "autograder", "grade", support.ASSIGNMENT, "--course", str(course),
           "--config", str(course / "nbgrader_config.py"), "--no-progress", "--jobs", "1"]
    proc = subprocess.Popen(cmd, cwd=course, env=support.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    path = course / JOURNAL_FILE
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (path.exists() and path.stat().st_size):  # once a notebook is stored
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = len(journal(course).records)
    assert 0 < done_before < len(STUDENTS), "the run was not killed mid-run; nothing was tested"
    abandoned = list(Path(tempfile.gettempdir()).glob(f"{STAGING_PREFIX}{proc.pid}-*"))
    assert abandoned, "the killed grader left no staged worker code: the clean-up below proves nothing"
    rerun = support.grade_ours(course)
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.count("skipped (unchanged)") == done_before
    assert totals(course, db_url) == STUDENTS
    rows, distinct = grade_rows(course, db_url)
    assert rows == distinct == 4 * len(STUDENTS)
    assert not any(path.exists() for path in abandoned), "the next grader leaves a killed grader's staging in place"


def test_second_grader_on_the_same_course_refuses_with_one_line(course):
    with course_lock(course):
        result = support.grade_ours(course)
        assert (course / LOCK_FILE).exists()  # the refused grader leaves the holder's lock alone
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "another grader is already running" in result.stderr and "Traceback" not in result.stderr
    assert not (course / LOCK_FILE).exists()  # the holder removes it as it lets go: no stale lock file is left


def test_cli_errors_are_one_line_without_traceback(course):
    for args in (["nope"], [support.ASSIGNMENT, "--jobs", "-1"], [support.ASSIGNMENT, "--student", "correct_a", "--student", "nobdoy"]):
        result = subprocess.run([sys.executable, "-m", "autograder", "grade", *args, "--course", str(course),
                                 "--config", str(course / "nbgrader_config.py")], env=support.env(), text=True, capture_output=True)
        assert result.returncode == 2
        assert result.stderr.startswith("autograder: error:") and result.stderr.strip().count("\n") == 0
    assert f"no submission of '{support.ASSIGNMENT}' for nobdoy" in result.stderr
    with sqlite3.connect(course / "gradebook.db") as db:  # a mistyped id never becomes a student with zeros
        assert db.execute("select count(*) from student where id = 'nobdoy'").fetchone() == (0,)


@pytest.mark.slow
def test_an_edited_state_file_cannot_make_the_summary_or_csv_lie(course):
    assert support.grade_ours(course).returncode == 0
    path = course / JOURNAL_FILE
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    records = {key: body for key, body, _ in lines}
    forged_score = f"{support.ASSIGNMENT}/mul_no_swap/{support.NOTEBOOK}"
    forged_hash = f"{support.ASSIGNMENT}/no_seed/{support.NOTEBOOK}"
    support.submit(course, "no_seed", support.submission(course, ["derivatives", "engine"], []))  # now correct: a new hash
    records[forged_score]["score"] = 7.0  # full marks for a submission that earned 4
    records[forged_hash]["depends"]["submission"] = submission_now(course, "no_seed")  # "unchanged": skip the regrade
    records[forged_hash]["score"] = 0.0
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))  # the records edited in place, MACs kept
    rerun = support.grade_ours(course, "--csv", str(course / "summary.csv"))
    assert rerun.returncode == 0, rerun.stderr
    rows = {r["student_id"]: r for r in csv.DictReader(open(course / "summary.csv"))}
    gradebook = totals(course)
    assert {s: float(rows[s]["score"]) for s in STUDENTS} == gradebook == {**STUDENTS, "no_seed": 7}
    for student in ("mul_no_swap", "no_seed"):
        assert rows[student]["status"] == "graded" and "edited outside the grader" in rows[student]["reason"]
    assert rerun.stdout.count("skipped (unchanged)") == len(STUDENTS) - 2


def submission_now(course, student):
    """The digest the grader computes of a student's current submission (what a forger would write)."""
    from autograder.grading.discover.fingerprint import submission_digest

    return submission_digest(course / "submitted" / student / support.ASSIGNMENT / f"{support.NOTEBOOK}.ipynb")


def test_the_lock_goes_to_one_grader_at_a_time_even_while_its_file_is_removed(tmp_path):
    import threading

    from autograder.grading.types import GradingError

    holders, refused, inside = [], [], threading.Lock()

    def grader(n: int) -> None:
        for _ in range(200):
            try:
                with course_lock(tmp_path):
                    assert inside.acquire(blocking=False), "two graders held the course lock at once"
                    holders.append(n)
                    inside.release()
            except GradingError:
                refused.append(n)

    threads = [threading.Thread(target=grader, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(holders) + len(refused) == 800 and holders
    assert not (tmp_path / LOCK_FILE).exists()


@pytest.mark.slow
@pytest.mark.parametrize("cell", ['check("numerical_derivativ")', 'x = 1\ncheck("relu_backward", "no_such_check")'])
def test_a_grade_cell_naming_a_check_the_grader_lacks_refuses_the_run_in_one_line_and_writes_nothing(tmp_path, cell):
    # inside the sandbox check(...) only prints, so such a cell would otherwise pass for every notebook, blank ones too
    course = support.make_course(tmp_path / "course")
    source = course / "source" / support.ASSIGNMENT / f"{support.NOTEBOOK}.ipynb"
    nb = nbformat.read(source, as_version=4)
    target = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "check_derivative")
    target.source = cell
    nbformat.write(nb, source)
    support.nbgrader(course, "generate_assignment", support.ASSIGNMENT, "--force")
    support.submit(course, "blank", support.submission(course, [], []))
    before = sorted(p.relative_to(course) for p in course.rglob("*"))
    done = support.grade_ours(course)
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert done.stderr.count("\n") == 1 and "grade cell 'check_derivative' calls check" in done.stderr, done.stderr
    assert ("'numerical_derivativ'" if "derivativ\"" in cell else "'no_such_check'") in done.stderr
    assert sorted(p.relative_to(course) for p in course.rglob("*")) == before
