"""The steps after grading (`finish.steps.finish`): submission times and late penalties filed in bulk, many students a
transaction, leave the gradebook nbgrader's own late-penalty step leaves (Autograde.init_assignment's time, then
AssignLatePenalties per submitted notebook), on SQLite and PostgreSQL; a kill part-way and a re-run leave it too."""

from __future__ import annotations

import datetime
import json
import shutil
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import nbformat
import postgres_server
import pytest
import support
from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from autograder.grading.discover.course import Course
from autograder.grading.finish.steps import finish
from autograder.grading.store.gradebook import GradebookWriter
from autograder.grading.types import Code, Row, Status

ASSIGNMENT, COURSE_ID = "ps1", "finish-course"
DUE = datetime.datetime(2025, 1, 15, 12)
NOTEBOOKS = {"a": {"a1": 2.0, "a2": 3.0}, "b": {"b1": 4.0}}  # notebook -> grade cell -> points
POLICY = '''import math
import os
import signal

from nbgrader.plugins import LateSubmissionPlugin


class PointPerStartedHour(LateSubmissionPlugin):
    """One point off per started hour late; the student named in $KILL_AT kills the process; "boom" breaks it."""

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        if student_id == os.environ.get("KILL_AT"):
            os.kill(os.getpid(), signal.SIGKILL)
        if student_id == "boom":
            raise RuntimeError("the course's policy broke")
        return float(math.ceil(total_seconds_late / 3600))
'''


def at(hours: float) -> str:
    """The time `hours` after the due date, as nbgrader writes timestamp.txt."""
    return (DUE + datetime.timedelta(hours=hours)).strftime("%Y-%m-%d %H:%M:%S.%f UTC")


# student: (timestamp.txt or None for no file, or a datetime for raw text; scores a1, a2, b1; notebooks submitted;
#           in the gradebook before: its time (hours after due), extension (hours), every notebook's stale penalty)
STUDENTS: dict[str, dict] = {
    "on_time": {"time": at(-1), "scores": (2, 3, 4), "before": {"time": 5, "penalty": 2.0}},
    "late_hours": {"time": at(3.5), "scores": (2, 1, 4)},  # 4 points off: a's 3 clamped at 3, b 4
    "very_late": {"time": at(240), "scores": (1, 0, 2)},  # more than the score: clamped
    "late_zero": {"time": at(2), "scores": (0, 0, 0)},  # nothing to take: 0
    "extended_within": {"time": at(20), "scores": (2, 3, 4), "before": {"extension": 48}},
    "extended_still_late": {"time": at(3), "scores": (2, 3, 4), "before": {"extension": 1}},  # 2 h late
    "no_time_file": {"time": None, "scores": (2, 3, 4), "before": {"time": 1.5}},  # the gradebook's time counts
    "empty_time_file": {"time": "", "scores": (2, 3, 4), "before": {"time": 30}},
    "other_zone": {"time": "2025-01-15 13:30:00.000000 +0100", "scores": (2, 3, 4)},  # 30 min late in UTC
    "missing_b": {"time": at(1), "scores": (2, 3, 0), "files": ["a"], "before": {"penalty": 1.5}},
    "no_row": {"time": at(5), "scores": None},  # no submission in the gradebook: made, as nbgrader makes it
    "no_folder": {"time": None, "scores": (2, 3, 4), "files": None, "before": {"time": 10, "penalty": 1.0}},
}
for i in range(6):  # enough students for several transactions when FINISH_STUDENTS is small
    STUDENTS[f"late_{i}"] = {"time": at(i + 0.5), "scores": (2, 3, 4), "before": {"time": 0, "penalty": 0.25}}


def make_course(root: Path, db_url: str, students: dict[str, dict]) -> Path:
    """A gradebook as grading leaves it (scores stored, some stale times and penalties) and the submitted folders."""
    (root / "submitted").mkdir(parents=True)
    (root / "latepolicy.py").write_text(POLICY)
    with Gradebook(db_url, COURSE_ID) as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SQLAlchemy's autoflush notes from inside nbgrader's add_submission
        gb.add_assignment(ASSIGNMENT, duedate=DUE)
        for nb, cells in NOTEBOOKS.items():
            gb.add_notebook(nb, ASSIGNMENT)
            for cell, points in cells.items():
                gb.add_grade_cell(cell, nb, ASSIGNMENT, max_score=points, cell_type="code")
                gb.add_solution_cell(f"{cell}_answer", nb, ASSIGNMENT)
        for student, case in students.items():
            gb.add_student(student)
            if case["scores"] is not None:
                before = case.get("before", {})
                when = DUE + datetime.timedelta(hours=before["time"]) if "time" in before else None
                gb.add_submission(ASSIGNMENT, student, timestamp=when)
                if "extension" in before:
                    gb.grant_extension(ASSIGNMENT, student, hours=before["extension"])
                scores = dict(zip(["a1", "a2", "b1"], case["scores"], strict=True))
                for nb, cells in NOTEBOOKS.items():
                    for cell in cells:
                        gb.find_grade(cell, nb, ASSIGNMENT, student).auto_score = float(scores[cell])
                    gb.find_submission_notebook(nb, ASSIGNMENT, student).late_submission_penalty = before.get("penalty")
                gb.db.commit()
            files = case.get("files", list(NOTEBOOKS))
            if files is None:
                continue
            folder = root / "submitted" / student / ASSIGNMENT
            folder.mkdir(parents=True)
            for nb in files:
                nbformat.write(nbformat.v4.new_notebook(), folder / f"{nb}.ipynb")
            if case["time"] is not None:
                (folder / "timestamp.txt").write_text(case["time"])
    return root


def config(root: Path, db_url: str) -> Config:
    return Config({"CourseDirectory": {"root": str(root), "db_url": db_url, "course_id": COURSE_ID},
                   "AssignLatePenalties": {"plugin_class": "latepolicy.PointPerStartedHour"}})


def rows_of(students: dict[str, dict]) -> list[Row]:
    """The rows a batch hands `finish`: every notebook of every student with a submission folder or a grade."""
    return [Row(s, nb, 0.0, 0.0, Status.GRADED) for s in students for nb in NOTEBOOKS]


def ours(root: Path, db_url: str, students: dict[str, dict]) -> list[Row]:
    rows = rows_of(students)
    course = Course.open(config(root, db_url), str(root))
    with GradebookWriter.open(course.coursedir.db_url, course.coursedir.course_id, ASSIGNMENT) as gradebook:
        finish(course, ASSIGNMENT, rows, gradebook)
    return rows


def nbgraders(root: Path, db_url: str, students: dict[str, dict]) -> None:
    """nbgrader's own way, one notebook at a time: Autograde.init_assignment's time, then AssignLatePenalties."""
    from nbgrader.preprocessors import AssignLatePenalties

    coursedir = CourseDirectory(config=config(root, db_url))
    for student in students:
        folder = root / "submitted" / student / ASSIGNMENT
        if not folder.is_dir():
            continue
        timestamp = coursedir.get_existing_timestamp(str(folder))
        with Gradebook(db_url, COURSE_ID) as gb, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if timestamp:
                gb.update_or_create_submission(ASSIGNMENT, student, timestamp=timestamp)
            else:
                gb.update_or_create_submission(ASSIGNMENT, student)
        for nb in NOTEBOOKS:
            if (folder / f"{nb}.ipynb").exists():
                step = AssignLatePenalties(config=coursedir.config)
                step.preprocess(nbformat.v4.new_notebook(), {"nbgrader": {
                    "notebook": nb, "assignment": ASSIGNMENT, "student": student, "db_url": db_url}})


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The course of STUDENTS on SQLite, made once (nbgrader's API commits each row: seconds) and copied per test."""
    root = tmp_path_factory.mktemp("finish") / "course"
    return make_course(root, f"sqlite:///{root / 'gradebook.db'}", STUDENTS)


def course_of(template: Path, root: Path, db_url: str) -> None:
    """The course of STUDENTS at `root`, its gradebook at `db_url`."""
    if db_url == f"sqlite:///{root / 'gradebook.db'}":
        shutil.copytree(template, root)
    else:
        make_course(root, db_url, STUDENTS)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def db(request, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Where our finish stores (SQLite, then a PostgreSQL server); nbgrader's reference is always on SQLite."""
    monkeypatch.syspath_prepend(str(tmp_path / "ours"))  # the course's plugin module, as its config names it
    monkeypatch.syspath_prepend(str(tmp_path / "plain"))
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'ours' / 'gradebook.db'}"
        return
    with postgres_server.server("finish") as url:  # (skips, saying why, outside CI when there is no server)
        yield url


def test_late_penalties_filed_in_bulk_equal_nbgrader_s_own_late_step(db: str, tmp_path: Path, template: Path) -> None:
    plain_url = f"sqlite:///{tmp_path / 'plain' / 'gradebook.db'}"
    course_of(template, tmp_path / "plain", plain_url)
    course_of(template, tmp_path / "ours", db)
    before = support.gradebook_tables(db, COURSE_ID)
    rows = ours(tmp_path / "ours", db, STUDENTS)
    nbgraders(tmp_path / "plain", plain_url, STUDENTS)
    after, reference = support.gradebook_tables(db, COURSE_ID), support.gradebook_tables(plain_url, COURSE_ID)
    assert after == reference
    assert after["submitted_notebook"] != before["submitted_notebook"]  # stale penalties were replaced
    penalty = {(s, nb): p for s, nb, _, p in after["submitted_notebook"]}
    assert penalty[("late_hours", "a")] == "3.0" and penalty[("late_hours", "b")] == "4.0"
    assert penalty[("extended_still_late", "a")] == "2.0" and penalty[("extended_within", "a")] == "NULL"
    assert penalty[("missing_b", "b")] == "1.5" and penalty[("no_folder", "a")] == "1.0"  # not submitted: untouched
    late = {(r.student, r.notebook): r.reason for r in rows}
    assert late[("late_hours", "a")] == "late by 3 h 30 min: penalty 3"
    assert late[("on_time", "a")] == "" and late[("missing_b", "b")] == ""


@pytest.mark.slow  # a course of its own (nbgrader's API commits each row)
def test_an_unreadable_time_is_on_time_and_flagged_and_a_failing_plugin_fails_only_its_student(tmp_path: Path,
                                                                                               monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path / "ours"))
    students = {"unreadable": {"time": "next tuesday", "scores": (2, 3, 4), "before": {"time": 50}},
                "boom": {"time": at(3), "scores": (2, 3, 4), "before": {"penalty": 0.5}},
                "late_hours": STUDENTS["late_hours"]}
    url = f"sqlite:///{tmp_path / 'ours' / 'gradebook.db'}"
    make_course(tmp_path / "ours", url, students)
    rows = {(r.student, r.notebook): r for r in ours(tmp_path / "ours", url, students)}
    tables = support.gradebook_tables(url, COURSE_ID)
    notebooks = {(s, nb): (flagged, p) for s, nb, flagged, p in tables["submitted_notebook"]}
    times = {s: t for s, t, _ in tables["submitted_assignment"]}
    # flagged, and as with no timestamp.txt the gradebook's time counts (50 h late: a's 5 points off)
    assert notebooks[("unreadable", "a")] == ("1", "5.0") and times["unreadable"] == "2025-01-17 14:00:00.000000"
    assert "submission time unreadable" in rows[("unreadable", "a")].flags[0]
    assert notebooks[("boom", "a")] == ("0", "0.5") and rows[("boom", "a")].has(Code.STEP_FAILED)
    assert times["boom"] == "NULL"  # nothing of the failed student is kept
    assert "the course's policy broke" in rows[("boom", "b")].reason
    assert notebooks[("late_hours", "a")] == ("0", "3.0") and not rows[("late_hours", "a")].has(Code.STEP_FAILED)


FINISH_IN_A_CHILD = '''import json, sys
from traitlets.config import Config
from autograder.grading.discover.course import Course
from autograder.grading.finish import steps
from autograder.grading.store.gradebook import GradebookWriter
from autograder.grading.types import Row, Status
steps.FINISH_STUDENTS = 2
root, url, course_id, assignment, pairs = json.loads(sys.argv[1])
config = Config({"CourseDirectory": {"root": root, "db_url": url, "course_id": course_id},
                 "AssignLatePenalties": {"plugin_class": "latepolicy.PointPerStartedHour"}})
course = Course.open(config, root)
with GradebookWriter.open(url, course_id, assignment) as gradebook:
    steps.finish(course, assignment, [Row(s, nb, 0.0, 0.0, Status.GRADED) for s, nb in pairs], gradebook)
'''


def finish_in_a_child(root: Path, url: str, kill_at: str | None) -> subprocess.CompletedProcess[str]:
    env = {**support.env(), "PYTHONPATH": str(root), **({"KILL_AT": kill_at} if kill_at else {})}
    pairs = [(r.student, r.notebook) for r in rows_of(STUDENTS)]
    return subprocess.run([sys.executable, "-c", FINISH_IN_A_CHILD, json.dumps([str(root), url, COURSE_ID, ASSIGNMENT, pairs])], env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow  # two child processes, each importing nbgrader
def test_a_finish_killed_part_way_then_run_again_leaves_nbgrader_s_gradebook(db: str, tmp_path: Path,
                                                                             template: Path) -> None:
    plain_url = f"sqlite:///{tmp_path / 'plain' / 'gradebook.db'}"
    course_of(template, tmp_path / "plain", plain_url)
    course_of(template, tmp_path / "ours", db)
    nbgraders(tmp_path / "plain", plain_url, STUDENTS)
    reference = support.gradebook_tables(plain_url, COURSE_ID)
    killed = finish_in_a_child(tmp_path / "ours", db, kill_at="late_3")  # in the transaction of late_2 and late_3
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    partly = {(s, nb): p for s, nb, _, p in support.gradebook_tables(db, COURSE_ID)["submitted_notebook"]}
    assert partly[("late_0", "a")] == "1.0" and partly[("late_1", "a")] == "2.0"  # an earlier transaction: filed
    assert partly[("late_2", "a")] == partly[("late_5", "a")] == "0.25"  # the killed one and later ones: not yet
    again = finish_in_a_child(tmp_path / "ours", db, kill_at=None)
    assert again.returncode == 0, again.stderr
    assert support.gradebook_tables(db, COURSE_ID) == reference

