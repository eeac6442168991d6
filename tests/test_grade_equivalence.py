"""End to end on a temporary course: plain `nbgrader autograde` and `python -m autograder grade` on the same corpus."""

from __future__ import annotations

import csv
import re
import shutil

import grading_corpus as gc
import pytest

pytestmark = pytest.mark.slow  # every test here grades a course built by nbgrader: minutes, not seconds


@pytest.fixture(scope="module")
def courses(tmp_path_factory):
    """One corpus graded twice: by plain nbgrader in one course copy, by ours in another (nbgrader once: ~40 s)."""
    base = tmp_path_factory.mktemp("grade")
    plain = gc.make_course(base / "plain")
    honest = gc.honest_corpus(plain)
    special = gc.special_corpus(plain)
    ours = base / "ours"
    shutil.copytree(plain, ours)
    (ours / "nbgrader_config.py").write_text(gc.CONFIG.format(root=str(ours), assignment=gc.ASSIGNMENT))
    result = gc.grade_ours(ours, "--csv", str(ours / "summary.csv"))
    assert result.returncode == 0, result.stderr
    gc.nbgrader(plain, "autograde", gc.ASSIGNMENT, check=False)  # exits 1: it cannot read the truncated notebook
    return {"plain": plain, "ours": ours, "honest": honest, "special": list(special), "stdout": result.stdout}


def test_corpus_has_at_least_twenty_honest_submissions_of_every_kind(courses):
    assert len(courses["honest"]) >= 20
    ours = gc.grade_cells(courses["ours"], courses["honest"])
    totals = {s: sum(v for (st, _), v in ours.items() if st == s) for s in courses["honest"]}
    assert totals["correct_a"] == totals["correct_iterative"] == 7
    assert totals["stub"] == 0
    assert all(0 < totals[s] < 7 for s in gc.EDITS if not s.startswith("correct"))
    assert 0 < totals["partly_engine"] < 7


def test_every_grade_cell_scores_as_plain_nbgrader_autograde(courses):
    plain = gc.grade_cells(courses["plain"], courses["honest"])
    ours = gc.grade_cells(courses["ours"], courses["honest"])
    assert len(plain) == 4 * len(courses["honest"])
    assert None not in plain.values()
    assert ours == plain


def test_stderr_warning_keeps_its_points_in_our_grader(courses):
    ours = gc.grade_cells(courses["ours"], ["stderr_warning"])
    assert sum(ours.values()) == 7
    # Plain nbgrader zeroes a grade cell with any stderr output; whether the kernel forwards this fd-level write
    # while the grade cell still runs is a matter of timing (seen both ways), so its score is not asserted here.


def test_truncated_notebook_gets_zero_with_a_reason_and_the_rest_is_graded(courses):
    ours = gc.grade_cells(courses["ours"], ["truncated_json"])
    assert ours and set(ours.values()) == {0.0}
    plain = gc.grade_cells(courses["plain"], ["truncated_json"])
    assert set(plain.values()) <= {None}  # plain nbgrader records no grade for it
    line = next(ln for ln in courses["stdout"].splitlines() if ln.startswith("truncated_json"))
    assert "not graded" in line and "not valid JSON" in line
    rows = {r["student_id"]: r for r in csv.DictReader(open(courses["ours"] / "summary.csv"))}
    assert rows["truncated_json"]["score"] == "0" and "not valid JSON" in rows["truncated_json"]["reason"]
    assert rows["correct_a"]["score"] == "7" and rows["correct_a"]["status"] == "graded"


def test_feedback_html_shows_each_check_message_and_never_hidden_test_source(courses):
    ours = courses["ours"]
    gc.nbgrader(ours, "generate_feedback", gc.ASSIGNMENT, "--force")
    good = (ours / "feedback" / "correct_a" / gc.ASSIGNMENT / f"{gc.NOTEBOOK}.html").read_text()
    bad = (ours / "feedback" / "mul_no_swap" / gc.ASSIGNMENT / f"{gc.NOTEBOOK}.html").read_text()
    broken = (ours / "feedback" / "truncated_json" / gc.ASSIGNMENT / f"{gc.NOTEBOOK}.html").read_text()
    assert "✓ add_backward" in good and "✓ relative_error (hidden inputs)" in good
    assert "✗ mul_backward" in bad and "expected" in bad
    assert "could not be graded" in broken and "not valid JSON" in broken
    for html in (good, bad, broken):
        assert "hidden=True" not in html and "BEGIN HIDDEN TESTS" not in html
        assert not re.search(r"check\((&quot;|\")backward_topological_order", html)  # a hidden test's source


def test_plain_nbgrader_feedback_would_show_the_hidden_tests(courses):
    plain = courses["plain"]
    gc.nbgrader(plain, "generate_feedback", gc.ASSIGNMENT, "--force", "--student", "correct_a")
    html = (plain / "feedback" / "correct_a" / gc.ASSIGNMENT / f"{gc.NOTEBOOK}.html").read_text()
    assert "BEGIN HIDDEN TESTS" in html  # why ours redacts them in the autograded notebook


def test_nbgrader_export_writes_our_grades_to_csv(courses):
    ours = courses["ours"]
    gc.nbgrader(ours, "export", "--to", str(ours / "grades.csv"))
    rows = {r["student_id"]: r for r in csv.DictReader(open(ours / "grades.csv"))}
    assert float(rows["correct_a"]["score"]) == 7.0
    assert float(rows["stub"]["score"]) == 0.0
    assert float(rows["mul_no_swap"]["score"]) == 4.0
    assert float(rows["truncated_json"]["score"]) == 0.0
