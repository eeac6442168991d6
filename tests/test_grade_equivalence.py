"""End to end on a temporary course: plain `nbgrader autograde` and `python -m autograder grade` on the same corpus."""

from __future__ import annotations

import csv
import re
import shutil

import pytest
import support

pytestmark = pytest.mark.slow  # every test here grades a course built by nbgrader: minutes, not seconds


@pytest.fixture(scope="module")
def courses(tmp_path_factory):
    """One corpus graded twice: by plain nbgrader in one course copy, by ours in another (nbgrader once: ~40 s)."""
    base = tmp_path_factory.mktemp("grade")
    plain = support.make_course(base / "plain")
    honest = support.honest_corpus(plain)
    special = support.special_corpus(plain)
    ours = base / "ours"
    shutil.copytree(plain, ours)
    (ours / "nbgrader_config.py").write_text(support.CONFIG.format(root=str(ours), assignment=support.ASSIGNMENT))
    result = support.grade_ours(ours, "--csv", str(ours / "summary.csv"))
    assert result.returncode == 0, result.stderr
    support.nbgrader(plain, "autograde", support.ASSIGNMENT, check=False)  # exits 1: it cannot read the truncated notebook
    return {"plain": plain, "ours": ours, "honest": honest, "special": list(special), "stdout": result.stdout}


def test_corpus_has_at_least_twenty_honest_submissions_of_every_kind(courses):
    assert len(courses["honest"]) >= 20
    ours = support.grade_cells(courses["ours"], courses["honest"])
    totals = {s: sum(v for (st, _), v in ours.items() if st == s) for s in courses["honest"]}
    assert totals["correct_a"] == totals["correct_iterative"] == 7
    assert totals["stub"] == 0
    assert all(0 < totals[s] < 7 for s in support.EDITS if not s.startswith("correct"))
    assert 0 < totals["partly_engine"] < 7


def test_every_grade_cell_scores_as_plain_nbgrader_autograde(courses):
    plain = support.grade_cells(courses["plain"], courses["honest"])
    ours = support.grade_cells(courses["ours"], courses["honest"])
    assert len(plain) == 4 * len(courses["honest"])
    assert None not in plain.values()
    assert ours == plain


def test_stderr_warning_keeps_its_points_in_our_grader(courses):
    ours = support.grade_cells(courses["ours"], ["stderr_warning"])
    assert sum(ours.values()) == 7
    # Plain nbgrader zeroes a grade cell with any stderr output; whether the kernel forwards this fd-level write
    # while the grade cell still runs is a matter of timing (seen both ways), so its score is not asserted here.


def test_truncated_notebook_gets_zero_with_a_reason_and_the_rest_is_graded(courses):
    ours = support.grade_cells(courses["ours"], ["truncated_json"])
    assert ours and set(ours.values()) == {0.0}
    plain = support.grade_cells(courses["plain"], ["truncated_json"])
    assert set(plain.values()) <= {None}  # plain nbgrader records no grade for it
    line = next(ln for ln in courses["stdout"].splitlines() if ln.startswith("truncated_json"))
    assert "not graded" in line and "not valid JSON" in line
    rows = {r["student_id"]: r for r in csv.DictReader(open(courses["ours"] / "summary.csv"))}
    assert rows["truncated_json"]["score"] == "0" and "not valid JSON" in rows["truncated_json"]["reason"]
    assert rows["correct_a"]["score"] == "7" and rows["correct_a"]["status"] == "graded"


def test_feedback_html_shows_each_check_message_and_never_hidden_test_source(courses):
    ours = courses["ours"]
    support.nbgrader(ours, "generate_feedback", support.ASSIGNMENT, "--force")
    good = (ours / "feedback" / "correct_a" / support.ASSIGNMENT / f"{support.NOTEBOOK}.html").read_text()
    bad = (ours / "feedback" / "mul_no_swap" / support.ASSIGNMENT / f"{support.NOTEBOOK}.html").read_text()
    broken = (ours / "feedback" / "truncated_json" / support.ASSIGNMENT / f"{support.NOTEBOOK}.html").read_text()
    assert "✓ add_backward" in good and "✓ relative_error (hidden inputs)" in good
    assert "✗ mul_backward" in bad and "expected" in bad
    assert "could not be graded" in broken and "not valid JSON" in broken
    for html in (good, bad, broken):
        assert "hidden=True" not in html and "BEGIN HIDDEN TESTS" not in html
        assert not re.search(r"check\((&quot;|\")backward_topological_order", html)  # a hidden test's source


def test_plain_nbgrader_feedback_would_show_the_hidden_tests(courses):
    plain = courses["plain"]
    support.nbgrader(plain, "generate_feedback", support.ASSIGNMENT, "--force", "--student", "correct_a")
    html = (plain / "feedback" / "correct_a" / support.ASSIGNMENT / f"{support.NOTEBOOK}.html").read_text()
    assert "BEGIN HIDDEN TESTS" in html  # why ours redacts them in the autograded notebook


def test_nbgrader_export_writes_our_grades_to_csv(courses):
    ours = courses["ours"]
    support.nbgrader(ours, "export", "--to", str(ours / "grades.csv"))
    rows = {r["student_id"]: r for r in csv.DictReader(open(ours / "grades.csv"))}
    assert float(rows["correct_a"]["score"]) == 7.0
    assert float(rows["stub"]["score"]) == 0.0
    assert float(rows["mul_no_swap"]["score"]) == 4.0
    assert float(rows["truncated_json"]["score"]) == 0.0


def test_no_honest_submission_is_flagged(courses):
    rows = {r["student_id"]: r for r in csv.DictReader(open(courses["ours"] / "summary.csv"))}
    assert {s: rows[s]["flags"] for s in courses["honest"] if rows[s]["flags"]} == {}
