"""The class report: per-assignment HTML (score histograms, most common misconceptions) and CSV, self-contained."""

from __future__ import annotations

import csv
import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import support

from autograder.checks.messages import MISCONCEPTIONS
from autograder.grading.outputs import class_report, misconceptions

CHROMIUM = Path("/usr/bin/chromium")


@dataclass
class Row:
    student: str
    notebook: str
    score: float
    max_score: float
    status: str = "graded"
    misconceptions: list[str] = field(default_factory=list)
    late: str = ""
    attempted: bool = True


ROWS = [
    Row("ada", "03_backward", 6, 8, misconceptions=["add.assigns_instead_of_accumulating"]),
    Row("bob", "03_backward", 2, 8, misconceptions=["add.assigns_instead_of_accumulating", "backward.forward_order"]),
    Row("cy<script>", "03_backward", 7, 8, misconceptions=["backward.forward_order"]),
    Row("ada", "04_bricks", 9, 11, misconceptions=["tanh.uses_input"]),
    Row("bob", "04_bricks", 7, 11, misconceptions=["tanh.uses_input", "add.assigns_instead_of_accumulating"]),
    Row("cy<script>", "04_bricks", 0, 11, status="not graded"),
]


def test_misconceptions_are_ranked_by_students_each_counted_once():
    common = misconceptions.common_misconceptions(ROWS)
    assert [(m.id, len(m.students)) for m in common] == [
        ("add.assigns_instead_of_accumulating", 2), ("backward.forward_order", 2), ("tanh.uses_input", 2)]
    assert common[0].students == ("ada", "bob") and common[0].method == "Value.__add__"
    assert common[0].sentence == MISCONCEPTIONS["add.assigns_instead_of_accumulating"].replace("{name}", "a node")


def test_csv_has_one_row_per_misconception_most_common_first():
    rows = list(csv.DictReader(io.StringIO(misconceptions.render_csv(ROWS))))
    assert [r["misconception"] for r in rows] == ["add.assigns_instead_of_accumulating", "backward.forward_order", "tanh.uses_input"]
    assert rows[0]["students"] == "2" and rows[0]["student_ids"] == "ada bob"


def test_the_misconceptions_csv_reads_back_as_written_line_ends_included(tmp_path):
    rows = [*ROWS, Row("eve\nmallory,5\r\u202e", "03_backward", 1, 8, misconceptions=["backward.forward_order"])]
    misconceptions.write(tmp_path / "reports" / "workbook-misconceptions.csv", rows)
    data = (tmp_path / "reports" / "workbook-misconceptions.csv").read_bytes().decode("utf-8")
    assert "\ufffd" not in data and data.endswith("\r\n")  # every line ends as csv wrote it, never in U+FFFD
    assert "\n" not in data.replace("\r\n", "") and "\r" not in data.replace("\r\n", "")
    with open(tmp_path / "reports" / "workbook-misconceptions.csv", encoding="utf-8", newline="") as f:
        back = list(csv.reader(f))
    assert back == list(csv.reader(io.StringIO(misconceptions.render_csv(rows), newline="")))
    assert back[1][:4] == ["backward.forward_order", "Value.backward", "3", "bob cy<script> eve\\nmallory,5\\r\\u202e"]


def test_page_is_self_contained_and_escapes_student_names():
    page = class_report.render_html("workbook", ROWS)
    assert page.count("<svg class='histogram'") == 2 and "<script>" not in page and "cy&lt;script&gt;" in page
    assert "http:" not in page and "https:" not in page and "<img" not in page  # no server, no link to fetch


def bars(svg: str) -> dict[str, tuple[int, float]]:
    """score -> (students, drawn height) of each bar of a histogram."""
    found = re.findall(r"data-score='([^']+)' data-students='(\d+)'[^>]* height='([\d.]+)'", svg)
    return {score: (int(n), float(h)) for score, n, h in found}


def centres(svg: str, kind: str = "bar") -> dict[str, float]:
    """score -> the x of the middle of its bar (kind "bar") or of its axis tick (kind "tick")."""
    if kind == "tick":
        return {s: float(x) for s, x in re.findall(r"class='tick' data-score='([^']+)' x1='([\d.]+)'", svg)}
    found = re.findall(r"class='bar' data-score='([^']+)'[^>]* x='([\d.]+)'[^>]* width='([\d.]+)'", svg)
    return {s: float(x) + float(w) / 2 for s, x, w in found}


def test_histogram_bars_count_students_per_score_with_heights_in_proportion():
    drawn = bars(class_report.histogram_svg([6, 2, 7, 7, 7.0, 0], 8, "03_backward"))
    assert {k: n for k, (n, _) in drawn.items()} == {"0": 1, "2": 1, "6": 1, "7": 3}
    assert abs(drawn["7"][1] - 3 * drawn["6"][1]) < 0.2 and drawn["6"][1] > 0


def test_histogram_places_scores_on_a_numeric_axis_from_0_to_the_notebooks_points():
    svg = class_report.histogram_svg([0, 1, 8, 8], 8, "03_backward")
    x = centres(svg)
    assert set(x) == {"0", "1", "8"}
    assert abs((x["8"] - x["1"]) - 7 * (x["1"] - x["0"])) < 0.5  # 0, 1 and 8 spaced as numbers are
    ticks = centres(svg, "tick")
    assert set(ticks) == {str(t) for t in range(9)}  # every point from 0 to the notebook's 8, none left out
    assert abs(ticks["8"] - x["8"]) < 0.5 and abs(ticks["0"] - x["0"]) < 0.5
    wide = centres(class_report.histogram_svg([3], 40, "big"), "tick")
    assert "0" in wide and "40" in wide and len(wide) <= 12  # a long axis keeps a readable number of ticks


def test_not_attempted_is_marked_in_the_histogram_caption_and_table():
    rows = [*ROWS, Row("dee", "03_backward", 0, 8, attempted=False), Row("dee", "04_bricks", 0, 11, attempted=False)]
    page = class_report.render_html("workbook", rows)
    assert "class='not-attempted' data-students='1'" in page and "not attempted (every solution cell as released)" in page
    assert "03_backward: mean 3.75 of 8; 1 not attempted" in page
    table = page[page.index("<table id='students'>"):]
    dee = table[table.index("<td>dee</td>"):].split("</tr>")[0]
    assert dee.count("not attempted") == 2


def test_lateness_is_shown_per_student_whatever_the_penalty():
    rows = [Row("ada", "03_backward", 6, 8, late="2 d 30 min"), Row("bob", "03_backward", 8, 8)]
    table = class_report.render_html("workbook", rows).split("<table id='students'>")[1]
    assert "<td>ada</td><td class=''>6 / 8</td><td>6 / 8</td><td class='late'>late by 2 d 30 min</td>" in table
    assert "<td>bob</td><td class=''>8 / 8</td><td>8 / 8</td><td class='late'>on time</td>" in table


@pytest.mark.browser
@pytest.mark.slow
def test_report_opens_in_chromium_with_its_histograms_and_table(tmp_path):
    if not CHROMIUM.exists():
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but /usr/bin/chromium is missing")
        pytest.skip("no /usr/bin/chromium")
    from playwright.sync_api import sync_playwright

    page_path = class_report.page_path(tmp_path, "workbook")
    class_report.write(page_path, "workbook", ROWS)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        try:
            page = browser.new_page()
            page.goto(page_path.as_uri())
            widths = page.eval_on_selector_all("#histograms svg", "svgs => svgs.map(s => s.getBoundingClientRect().width)")
            assert len(widths) == 2 and all(w > 100 for w in widths)
            heights = page.eval_on_selector_all("#histograms svg .bar", "rs => rs.map(r => r.getBBox().height)")
            assert sum(h > 0 for h in heights) == 6  # one bar per score someone got: 03's 2, 6, 7 and 04's 0, 7, 9
            rows = page.eval_on_selector_all("#misconceptions tbody tr", "rs => rs.map(r => r.innerText)")
            assert len(rows) == 3 and "add.assigns_instead_of_accumulating" in rows[0] and "ada, bob" in rows[0]
            assert page.title() == "Class report: workbook"
        finally:
            browser.close()


@pytest.mark.slow
def test_grade_writes_the_report_with_the_misconceptions_the_checks_named(tmp_path):
    root = support.make_course(tmp_path / "course")
    students = {"correct_a": [], "mul_no_swap": support.EDITS["mul_no_swap"], "relerr_min": support.EDITS["relerr_min"]}
    for s, edits in students.items():
        support.submit(root, s, support.submission(root, ["derivatives", "engine"], edits))
    done = support.grade_ours(root)
    assert done.returncode == 0, done.stderr
    page = (root / "reports" / f"{support.ASSIGNMENT}.html").read_text()
    rows = {r["misconception"]: r for r in csv.DictReader(
        (root / "reports" / f"{support.ASSIGNMENT}-misconceptions.csv").open())}
    assert rows["mul.unswapped"]["student_ids"] == "mul_no_swap"
    assert rows["relerr.min"]["student_ids"] == "relerr_min"
    assert page.count("<svg class='histogram'") == 1 and "mul.unswapped" in page
    again = support.grade_ours(root)  # unchanged submissions are skipped, and their misconceptions kept
    assert again.returncode == 0
    assert "mul.unswapped" in (root / "reports" / f"{support.ASSIGNMENT}.html").read_text()
