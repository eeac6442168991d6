"""The screens a new instructor and their learners meet after grading: the command's own lines, the feedback pages,
the class report; each checked for its text, then opened in Debian's Chromium and screenshotted.

One course of the real workbook (notebooks 03 and 06): ada made the `=`-instead-of-`+=` mistake in `__add__` and
handed in two days late (penalty `none`, nbgrader's default), bob handed in the notebooks untouched, cy solved
everything and has an extension; dee handed in ada's notebooks and was graded by plain nbgrader (the formgrader's
Autograde button), so the feedback of both graders is read.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
from pathlib import Path

import nbformat
import pytest
import support

from autograder.grading.pages.feedback_page import ABOVE, ShowEachFailureOnce, names_of_test_cells

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts" / "screens"
NOTEBOOKS = ["03_backward.ipynb", "06_neural_net.ipynb"]
DUE = "2025-01-15 12:00:00 UTC"
ADD_MISTAKE = ("ex_03_add", "self.grad += out.grad", "self.grad = out.grad")


def _extension(c: support.Course) -> None:
    c.outputs["extension"] = c.autograder("extension", support.WORKBOOK, "cy", "--days", "2").stdout


def _dee_by_plain_nbgrader_then_feedback(c: support.Course) -> None:
    support.Learner("dee", "2025-01-15 11:00:00.000000 UTC", mistakes={"03_backward.ipynb": ADD_MISTAKE}).submit(c)
    c.nbgrader("autograde", support.WORKBOOK, "--student=dee")  # plain nbgrader, as the formgrader's button runs it
    c.nbgrader("generate_feedback", support.WORKBOOK)


# conftest's `course`: ada 2 d 30 min late with a mistake, bob untouched, cy within its extension; dee after grading
COURSE = support.CoursePlan(NOTEBOOKS, [
    support.Learner("ada", "2025-01-17 12:30:00.000000 UTC", mistakes={"03_backward.ipynb": ADD_MISTAKE}),
    support.Learner("bob", "2025-01-15 11:00:00.000000 UTC", solve=False),
    support.Learner("cy", "2025-01-16 12:00:00.000000 UTC"),
], due=DUE, before_grading=_extension, grade=("--csv",), after_grading=_dee_by_plain_nbgrader_then_feedback)


def feedback(course: support.Course, student: str, notebook: str) -> str:
    return (course.root / "feedback" / student / support.WORKBOOK / f"{notebook}.html").read_text()


# ---------------------------------------------------------------- the instructor's command lines


@pytest.mark.slow
def test_extension_prints_the_new_deadline(course):
    assert course.outputs["extension"].strip() == (
        "cy: workbook now due 2025-01-17 12:00 UTC (2 days after the due date, 2025-01-15 12:00 UTC)")


@pytest.mark.slow
def test_grade_names_how_late_with_penalty_none_and_the_files_it_wrote(course):
    c, out = course, course.outputs["grade"]
    ada = [ln for ln in out.splitlines() if ln.startswith("ada ")]
    assert ada and all("late by 2 d: no penalty" in ln for ln in ada), out
    assert not any("late" in ln for ln in out.splitlines() if ln.startswith(("bob ", "cy ")))
    rows = list(csv.DictReader((c.root / f"{support.WORKBOOK}-summary.csv").open()))
    assert {r["reason"] for r in rows if r["student_id"] == "ada"} == {"late by 2 d: no penalty"}
    wrote = [ln.removeprefix("wrote ") for ln in out.splitlines() if ln.startswith("wrote ")]
    assert wrote == [str((c.root / f"{support.WORKBOOK}-summary.csv").resolve()), str(c.root / "reports" / f"{support.WORKBOOK}.html"),
                     str(c.root / "reports" / f"{support.WORKBOOK}-misconceptions.csv")]
    assert all(Path(p).is_file() for p in wrote)


@pytest.mark.slow
def test_the_report_shows_lateness_and_marks_the_untouched_submission(course):
    page = (course.root / "reports" / f"{support.WORKBOOK}.html").read_text()
    students = page[page.index("<table id='students'>"):]
    row = {s: students[students.index(f"<td>{s}</td>"):].split("</tr>")[0] for s in ("ada", "bob", "cy")}
    assert "late by 2 d" in row["ada"] and "on time" in row["cy"] and "on time" in row["bob"]
    assert row["bob"].count("not attempted") == 2 and "not attempted" not in row["ada"] + row["cy"]
    assert "class='not-attempted'" in page


# ---------------------------------------------------------------- feedback


@pytest.mark.slow
@pytest.mark.parametrize("student", ["ada", "dee"])  # graded by this grader, and by plain nbgrader
def test_feedback_shows_each_failure_once_with_a_real_reproduce_disclosure(course, student):
    page = feedback(course, student, "03_backward")
    sentence = "where it must accumulate `grad += ...`"
    assert page.count("✗ add_local_backward") == 1 and page.count(sentence) == 1  # once, where its check cell is
    assert page.count("<summary") == page.count("reproduce</summary>") == 1  # the reproduce block, in full once
    assert 'style="display:list-item;cursor:pointer">reproduce</summary>' in page
    # the later check cells judge backward() on the grader's + and *: they pass, pointing back at nothing (issue 34)
    assert "same cause as above" not in page and "✓ backward_seeds_root" in page
    assert f"({ABOVE})" in page and "Seen:" not in page  # CheckFailed's copy of the diagnosis is one line


@pytest.mark.slow
def test_feedback_names_every_test_cell_in_its_table_of_contents(course):
    page = feedback(course, "ada", "03_backward")
    toc = page[page.index('<div id="toc">'):page.index("</ol>", page.index('<div id="toc">'))]
    assert "Test cell" not in toc
    assert ">Test: add_local_backward (__add__ with its _backward)</a>" in toc
    assert ">Test: backward_accumulates (" in toc and ">Test: backward() (7 checks)</a>" in toc


@pytest.mark.slow
def test_feedback_labels_the_grading_size_demo(course):
    page = feedback(course, "cy", "06_neural_net")
    at = page.index("raise the number of steps")  # the prose under the demo
    demo = page.rindex("loss ", 0, at)
    label = page.rindex("(grading-size run: 8 here, 60 in your own run;", 0, demo)
    assert demo - label < 2000  # the label sits in the same cell, before the demo's numbers


def test_the_roster_in_the_checkout_is_git_ignored():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    import subprocess

    for name in ("roster.csv", "roster-2026.csv"):
        done = subprocess.run(["git", "check-ignore", "-q", name], cwd=ROOT)
        assert done.returncode == 0, f"{name} (names and emails) is not git-ignored"


def test_the_instructor_guide_documents_grading_several_learners_from_one_account():
    guide = " ".join((ROOT / "docs" / "instructor" / "one-machine.md").read_text().split())
    assert "--student=ID" in guide and "cheating attempt?" in guide and "ExchangeCollect.check_owner = False" in guide
    assert "fetch_feedback" in guide and "JUPYTER_DATA_DIR" in guide  # where one account bites, and the way out


def test_show_each_failure_once_leaves_one_line_of_checkfailed():
    from autograder.checks import CheckResult
    from autograder.notebook import check_outputs

    bad = CheckResult("add_local_backward", ("Value.__add__",), 0.0, 1.0,
                      "Value.__add__: got 1\n  hint: accumulate\n  reproduce:\n    print(1)", "failed",
                      "add.assigns_instead_of_accumulating")
    cell = nbformat.v4.new_code_cell("check('add_local_backward')", outputs=[nbformat.from_dict(o) for o in
                                                                           check_outputs([bad], hidden=False)])
    before = cell.outputs[1]["traceback"]
    assert len(before) > 1 and any("accumulate" in ln for ln in before)  # what Validate's dialog shows
    ShowEachFailureOnce().preprocess_cell(cell, {}, 0)
    assert cell.outputs[1]["traceback"] == [f"CheckFailed: 1 of 1 checks failed ({ABOVE})"]
    assert "accumulate" in cell.outputs[0]["data"]["text/html"]  # the diagnosis itself stays, once


def test_a_test_cell_is_named_after_its_checks_and_the_heading_above():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("### Exercise: `__mul__` with its `_backward`"),
                nbformat.v4.new_code_cell('check("mul_local_backward")\n### BEGIN HIDDEN TESTS\n'
                                          'check("mul_local_backward", hidden=True)\n### END HIDDEN TESTS',
                                          metadata={"nbgrader": {"grade": True, "solution": False,
                                                                 "grade_id": "check_03_mul", "points": 1}})]
    assert names_of_test_cells(nb) == {"check_03_mul": "Test: mul_local_backward (__mul__ with its _backward)"}


# ---------------------------------------------------------------- the screens in Chromium


def _chromium():
    if not CHROMIUM.exists():
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but /usr/bin/chromium is missing")
        pytest.skip("no /usr/bin/chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    return sync_playwright()


@pytest.mark.browser
@pytest.mark.slow
def test_feedback_and_report_in_chromium(course):
    c = course
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    with _chromium() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            page.goto((c.root / "feedback" / "ada" / support.WORKBOOK / "03_backward.html").as_uri())
            failure = page.locator(".autograder-check").filter(has_text="✗ add_local_backward").first
            failure.scroll_into_view_if_needed()
            summary = failure.locator("details summary")
            assert summary.evaluate("s => getComputedStyle(s).display") == "list-item"  # its triangle shows
            assert not failure.locator("details").evaluate("d => d.open")
            page.screenshot(path=str(ARTIFACTS / "feedback-03-failure.png"))
            summary.click()
            assert failure.locator("details").evaluate("d => d.open")
            assert "print(a.grad, b.grad)" in failure.locator("details pre").inner_text()
            page.screenshot(path=str(ARTIFACTS / "feedback-03-reproduce-open.png"))
            page.locator("#toc").scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "feedback-03-toc.png"))
            page.goto((c.root / "feedback" / "cy" / support.WORKBOOK / "06_neural_net.html").as_uri())
            page.get_by_text("raise the number of steps").scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "feedback-06-grading-size.png"))
            page.goto((c.root / "reports" / f"{support.WORKBOOK}.html").as_uri())
            ticks = page.eval_on_selector_all("#histograms svg .tick", "ts => ts.length")
            assert ticks >= 2 * 2  # two notebooks, each with its axis from 0 to its points
            page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
            assert re.search(r"late by 2 d", page.locator("#students").inner_text())
        finally:
            browser.close()
