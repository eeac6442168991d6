"""Late submissions: due date, extension, timestamp.txt and a custom LateSubmissionPlugin, both graders row by row."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
import support
from nbgrader.api import Gradebook

DUE = "2025-01-15 12:00:00 UTC"
# student: (submitted at, solution cells filled in); a day is 86400 s late
STUDENTS = {
    "on_time": ("2025-01-15 11:59:59.000000 UTC", ["derivatives", "engine"]),
    "late": ("2025-01-17 12:30:00.000000 UTC", ["derivatives", "engine"]),  # 2 d 30 min late: 3 started days
    "extended": ("2025-01-17 12:30:00.000000 UTC", ["derivatives", "engine"]),  # within its 3-day extension
    "very_late": ("2025-02-15 12:00:00.000000 UTC", ["derivatives", "engine"]),  # 31 days: more than the score
    "late_stub": ("2025-01-16 12:00:00.000000 UTC", []),  # late with 0 points: penalty clamped to 0
}
# A course's own rule, named in the config the way nbgrader documents (AssignLatePenalties.plugin_class).
POLICY = '''import math

from nbgrader.plugins import LateSubmissionPlugin


class PointPerStartedDay(LateSubmissionPlugin):
    """One point off per started day late."""

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        return float(math.ceil(total_seconds_late / 86400))
'''
LATE_CONFIG = 'c.AssignLatePenalties.plugin_class = "latepolicy.PointPerStartedDay"\n'


def _submit(root, student: str, when: str, solved: list[str]) -> None:
    support.submit(root, student, support.submission(root, solved, []))
    (root / "submitted" / student / support.ASSIGNMENT / "timestamp.txt").write_text(when)


def _rows(root) -> dict[str, dict]:
    """Everything nbgrader keeps about lateness and scores, per student, from the course's gradebook."""
    out = {}
    with Gradebook(f"sqlite:///{root}/gradebook.db") as gb:
        for s in STUDENTS:
            sub = gb.find_submission(support.ASSIGNMENT, s)
            nb = gb.find_submission_notebook(support.NOTEBOOK, support.ASSIGNMENT, s)
            out[s] = {"timestamp": sub.timestamp, "extension": sub.extension, "seconds_late": sub.total_seconds_late,
                      "penalty": nb.late_submission_penalty, "score": nb.score,
                      "grades": {g.name: g.auto_score for g in nb.grades}}
    return out


@pytest.fixture(scope="module")
def courses(tmp_path_factory):
    """One course graded by plain `nbgrader autograde` and a copy graded by ours, due date and extension set first."""
    base = tmp_path_factory.mktemp("late")
    plain = support.make_course(base / "plain")
    (plain / "latepolicy.py").write_text(POLICY)
    with open(plain / "nbgrader_config.py", "a") as f:
        f.write(LATE_CONFIG)
    for student, (when, solved) in STUDENTS.items():
        _submit(plain, student, when, solved)
    result = support.nbgrader(plain, "db", "assignment", "add", support.ASSIGNMENT, f"--duedate={DUE}")
    assert "not recognized" not in result.stderr
    ext = subprocess.run([sys.executable, "-m", "autograder", "extension", support.ASSIGNMENT, "extended", "--days", "3",
                          "--config", str(plain / "nbgrader_config.py")], cwd=plain, env=support.env(), text=True, capture_output=True)
    assert ext.returncode == 0, ext.stderr
    ours = base / "ours"
    shutil.copytree(plain, ours)
    (ours / "nbgrader_config.py").write_text(support.CONFIG.format(root=str(ours), assignment=support.ASSIGNMENT) + LATE_CONFIG)
    graded = support.grade_ours(ours)
    assert graded.returncode == 0, graded.stderr
    support.nbgrader(plain, "autograde", support.ASSIGNMENT)
    return {"plain": plain, "ours": ours, "stdout": graded.stdout}


@pytest.mark.slow
def test_late_penalties_rows_are_plain_nbgrader_rows(courses):
    plain, ours = _rows(courses["plain"]), _rows(courses["ours"])
    assert ours == plain
    # and they are what the course's rule says, so the comparison above is not between two graders that ignore it
    assert plain["on_time"]["penalty"] is None and plain["extended"]["penalty"] is None
    assert plain["late"]["penalty"] == 3.0 and plain["late"]["score"] == 7.0
    assert plain["very_late"]["penalty"] == 7.0  # 31 points asked, clamped to the score
    assert plain["late_stub"]["penalty"] == 0.0  # late, but nothing to take
    assert plain["extended"]["seconds_late"] == 0 and plain["late"]["seconds_late"] == 2 * 86400 + 1800


@pytest.mark.slow
def test_nbgrader_export_is_the_same_for_both_graders(courses):
    exports = {}
    for name in ("plain", "ours"):
        root = courses[name]
        support.nbgrader(root, "export", "--to", str(root / "grades.csv"))
        exports[name] = (root / "grades.csv").read_text()
    assert exports["ours"] == exports["plain"]
    assert ",late,,,,7.0,3.0,4.0,7.0" in exports["ours"]  # raw score, penalty, score, max


@pytest.mark.slow
def test_summary_names_the_lateness_and_the_penalty(courses):
    line = next(ln for ln in courses["stdout"].splitlines() if ln.startswith("late "))
    assert "late by 2 d: penalty 3" in line


@pytest.mark.slow
def test_an_extension_granted_after_grading_lifts_the_penalty_without_regrading(courses, tmp_path):
    ours = tmp_path / "ours"
    shutil.copytree(courses["ours"], ours)
    config = ours / "nbgrader_config.py"
    config.write_text(support.CONFIG.format(root=str(ours), assignment=support.ASSIGNMENT) + LATE_CONFIG)
    ext = subprocess.run([sys.executable, "-m", "autograder", "extension", support.ASSIGNMENT, "late", "--days", "2", "--hours", "1",
                          "--config", str(config)], cwd=ours, env=support.env(), text=True, capture_output=True)
    assert ext.returncode == 0, ext.stderr
    again = support.grade_ours(ours)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("skipped (unchanged)") == len(STUDENTS)
    rows = _rows(ours)
    assert rows["late"]["penalty"] is None and rows["late"]["score"] == 7.0
    assert rows["very_late"]["penalty"] == 7.0  # the others keep theirs


def test_extension_for_an_assignment_not_in_the_gradebook_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "nbgrader_config.py").write_text(f"c = get_config()\nc.CourseDirectory.root = {str(tmp_path)!r}\n")
    r = subprocess.run([sys.executable, "-m", "autograder", "extension", "nope", "alice", "--days", "1"], cwd=tmp_path,
                       env=support.env(), text=True, capture_output=True)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["autograder: error: assignment 'nope' is not in the gradebook: "
                                             "run `nbgrader generate_assignment nope` first"]


def test_extension_for_a_student_neither_on_the_roster_nor_submitted_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "nbgrader_config.py").write_text(f"c = get_config()\nc.CourseDirectory.root = {str(tmp_path)!r}\n")
    with Gradebook(f"sqlite:///{tmp_path}/gradebook.db") as gb:
        gb.update_or_create_assignment("workbook")
        gb.update_or_create_student("alice")
    (tmp_path / "submitted" / "bob" / "workbook").mkdir(parents=True)  # collected, not on the roster: fine
    run = [sys.executable, "-m", "autograder", "extension", "workbook"]
    mistyped = subprocess.run([*run, "alcie", "--days", "1"], cwd=tmp_path, env=support.env(), text=True, capture_output=True)
    assert mistyped.returncode == 2 and len(mistyped.stderr.strip().splitlines()) == 1
    assert "student 'alcie' is not in the gradebook and has no submission" in mistyped.stderr
    for student in ("alice", "bob"):
        ok = subprocess.run([*run, student, "--days", "1"], cwd=tmp_path, env=support.env(), text=True, capture_output=True)
        assert ok.returncode == 0, ok.stderr
    with Gradebook(f"sqlite:///{tmp_path}/gradebook.db") as gb:
        assert sorted(s.id for s in gb.students) == ["alice", "bob"]
