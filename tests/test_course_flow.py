"""The whole course on one machine, as the README's instructor guide runs it, against plain nbgrader row by row.

release -> learners fetch and submit (on time, late, late with an extension, one never submits) -> collect ->
`python -m autograder grade` (and, on a copy, plain `nbgrader autograde`) -> the formgrader's Autograde button for
one learner -> feedback -> learners fetch it -> export.
"""

from __future__ import annotations

import csv
import datetime
import shutil

import pytest
import support
from support import WORKBOOK_MISTAKES

from autograder.lms import CANVAS_IDENTITY, POINTS_POSSIBLE

NOTEBOOKS = ["01_derivatives.ipynb", "03_backward.ipynb"]  # two of six: each costs plain nbgrader a kernel per student
ROSTER = """id,first_name,last_name,email,lms_user_id
alice,Alice,Martin,alice@example.edu,1001
bob,Bob,Nguyen,bob@example.edu,1002
carol,Carol,Okafor,carol@example.edu,1003
dave,Dave,Smith,dave@example.edu,1004
"""
STUDENTS = ["alice", "bob", "carol", "dave"]  # alice on time, bob late, carol late but extended, dave never submits
HIDDEN = ("BEGIN HIDDEN TESTS", "hidden=True", "END HIDDEN TESTS")


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    base = tmp_path_factory.mktemp("course")
    c = support.make_checkout(base, NOTEBOOKS, 'c.LateSubmissionPlugin.penalty_method = "zero"\n')
    far = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=7)).strftime("%Y-%m-%d %H:%M:%S UTC")
    # 1. the assignment, the roster, the due date
    c.nbgrader("generate_assignment", support.WORKBOOK, "--force")
    assert sorted(p.name for p in (c.repo / "notebooks" / support.WORKBOOK).glob("*.ipynb")) == NOTEBOOKS
    (base / "roster.csv").write_text(ROSTER)
    c.nbgrader("db", "student", "import", str(base / "roster.csv"))
    c.nbgrader("db", "assignment", "add", support.WORKBOOK, f"--duedate={far}")
    # 2. hand out; learners fetch, work and submit
    c.nbgrader("release_assignment", support.WORKBOOK)
    for student in ["alice", "bob", "carol"]:
        c.learner(student, "fetch_assignment", support.WORKBOOK)
        support.solve(c.learners / student / support.WORKBOOK, {"03_backward.ipynb": WORKBOOK_MISTAKES["03_backward.ipynb"]}
                 if student == "carol" else None)
    c.learner("alice", "submit", support.WORKBOOK)
    between = datetime.datetime.now(datetime.timezone.utc)
    c.learner("bob", "submit", support.WORKBOOK)
    c.learner("carol", "submit", support.WORKBOOK)
    # Submission times are the real clock's, so the deadline is brought forward to fall between alice's and bob's.
    c.nbgrader("db", "assignment", "add", support.WORKBOOK, f"--duedate={between.strftime('%Y-%m-%d %H:%M:%S.%f UTC')}")
    c.autograder("extension", support.WORKBOOK, "carol", "--days", "1")
    # 3. collect; a copy of the course is graded by plain nbgrader
    c.nbgrader("collect", support.WORKBOOK)
    plain = base / "plain"
    shutil.copytree(c.root, plain)
    c.nbgrader("autograde", support.WORKBOOK, course=plain)
    # 4. grade, 5. feedback, learners fetch it, 6. export
    graded = c.grade("--csv")
    # the formgrader's ⚡ Autograde button pressed for alice (NbGraderAPI.autograde runs just this), feedback made
    # right after: plain nbgrader wrote the hidden tests into her autograded notebooks, and feedback must not show them
    c.nbgrader("autograde", support.WORKBOOK, "--force", "--student=alice")
    assert any(h in p.read_text() for p in (c.root / "autograded" / "alice").rglob("*.ipynb") for h in HIDDEN)
    c.nbgrader("generate_feedback", support.WORKBOOK)
    c.nbgrader("release_feedback", support.WORKBOOK)
    for student in ["alice", "bob", "carol"]:
        c.learner(student, "fetch_feedback", support.WORKBOOK)
    c.nbgrader("export", "--to", str(c.root / "grades.csv"))
    c.nbgrader("export", "--to", str(plain / "grades.csv"), course=plain)
    c.nbgrader("export", "--exporter=autograder.lms.CanvasExportPlugin", "--to", str(c.root / "canvas.csv"))
    return {"c": c, "plain": plain, "stdout": graded.stdout}


@pytest.mark.slow
def test_every_gradebook_row_is_plain_nbgrader_s_late_penalties_included(course):
    c = course["c"]
    ours, plain = support.gradebook_rows(c.root, STUDENTS), support.gradebook_rows(course["plain"], STUDENTS)
    assert ours == plain
    assert {s for s, _ in ours} == {"alice", "bob", "carol"}  # dave: no submission, no row, as in nbgrader
    full = {nb: ours[("alice", nb)]["score"] for _, nb in ours}
    assert all(full.values())
    for nb in full:
        assert ours[("alice", nb)]["penalty"] is None and ours[("carol", nb)]["penalty"] is None
        assert ours[("bob", nb)]["penalty"] == ours[("bob", nb)]["score"] == full[nb]  # penalty_method "zero"
    assert ours[("carol", "03_backward")]["score"] < full["03_backward"]  # her mistake, on time thanks to the extension


@pytest.mark.slow
def test_exports_match_plain_nbgrader_and_carry_the_roster(course):
    c = course["c"]
    ours = (c.root / "grades.csv").read_text()
    assert ours == (course["plain"] / "grades.csv").read_text()
    rows = {r["student_id"]: r for r in csv.DictReader(ours.splitlines())}
    assert rows["alice"]["last_name"] == "Martin" and rows["alice"]["email"] == "alice@example.edu"
    assert float(rows["bob"]["score"]) == 0.0 and float(rows["bob"]["raw_score"]) > 0
    assert float(rows["dave"]["score"]) == 0.0 and rows["dave"]["timestamp"] == ""


@pytest.mark.slow
def test_canvas_export_has_canvas_s_columns_and_scores_after_penalties(course):
    c = course["c"]
    lines = list(csv.reader((c.root / "canvas.csv").read_text().splitlines()))
    assert lines[0] == [*CANVAS_IDENTITY, support.WORKBOOK]
    assert lines[1][0] == POINTS_POSSIBLE
    nbgrader_rows = {r["student_id"]: r for r in csv.DictReader((c.root / "grades.csv").read_text().splitlines())}
    by_id = {ln[2]: ln for ln in lines[2:]}  # SIS User ID: the nbgrader student id
    assert set(by_id) == set(STUDENTS)
    assert by_id["alice"][:4] == ["Martin, Alice", "1001", "alice", "alice@example.edu"]
    assert float(lines[1][5]) == float(nbgrader_rows["alice"]["max_score"])
    for s in STUDENTS:
        assert float(by_id[s][5]) == float(nbgrader_rows[s]["score"])


@pytest.mark.slow
def test_learners_fetch_feedback_without_hidden_tests(course):
    c = course["c"]
    for student in ["alice", "bob", "carol"]:
        pages = list((c.learners / student / support.WORKBOOK / "feedback").glob("*/*.html"))
        assert sorted(p.stem for p in pages) == [n.removesuffix(".ipynb") for n in NOTEBOOKS]
        for page in pages:
            html = page.read_text()
            assert "✓" in html
            assert not [h for h in HIDDEN if h in html], page


@pytest.mark.slow
def test_summary_csv_lands_in_the_course_folder_with_the_late_note(course):
    c = course["c"]
    rows = list(csv.DictReader((c.root / f"{support.WORKBOOK}-summary.csv").read_text().splitlines()))
    assert {r["student_id"] for r in rows} == {"alice", "bob", "carol"}
    assert all("late by" in r["reason"] and "penalty" in r["reason"] for r in rows if r["student_id"] == "bob")
    assert not any("late" in r["reason"] for r in rows if r["student_id"] != "bob")
    assert not list(c.repo.glob("*.csv"))
