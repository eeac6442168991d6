"""Every line the grader prints or writes is one line: a learner string (a file name, a type or exception name, a path,
a message) reaches the summary, the CSVs, the class report, the notebook's notes, error lines and `check`'s report
through `lines.one_line`, with every control, format and separator character shown as a visible escape."""

from __future__ import annotations

import csv
import io
import unicodedata
from pathlib import Path

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder import cli, report
from autograder.checks.base import CheckResult
from autograder.grading import batch
from autograder.grading.discover.submission import Submission
from autograder.grading.finish import steps
from autograder.grading.grade import runner
from autograder.grading.outputs import class_report, misconceptions, summary
from autograder.grading.outputs.text import csv_text
from autograder.grading.pages.safe_html import escape_markdown
from autograder.grading.store import writer
from autograder.grading.types import Code, Reason, Row, Status
from autograder.lines import one_line

HIDDEN = {"Cc", "Cf", "Zl", "Zp", "Cs"}
NASTY = ["\n", "\r", "\t", "\x00", "\x1b", "\x1c", "\x1d", "\x1e", "\x85", "\x9b", "\x9d", "\u2028", "\u2029",
         "\u202e", "\u2066", "\u200b", "\ufeff", "\ud800", "\udcff", "\U000e0001"]
# any Unicode, lone surrogates included, with the characters that break or disguise a line drawn often
TEXT = st.text(st.one_of(st.characters(exclude_categories=()), st.sampled_from(NASTY), st.sampled_from("ab ;|,\"'=+-@")),
               max_size=40)


def hidden(text: str, allowed: str = "") -> list[str]:
    return [c for c in text if unicodedata.category(c) in HIDDEN and c not in allowed]


@pytest.mark.parametrize("text, shown", [
    ("notes\nalice  engine  5  5  graded", "notes\\nalice  engine  5  5  graded"),
    ("a\r\nb", "a\\r\\nb"), ("\x9b31mred", "\\x9b31mred"), ("abc\u202edef", "abc\\u202edef"),
    ("x\u2028y\x85z", "x\\u2028y\\x85z"), ("bad\udcffbyte", "bad\\xffbyte"), ("lone\ud800", "lone\\ud800"),
    ("tag\U000e0001", "tag\\U000e0001"), ("plain text, é ü 数 🙂", "plain text, é ü 数 🙂"),
])
def test_one_line_shows_each_hidden_character_as_its_escape(text: str, shown: str) -> None:
    assert one_line(text) == shown


@given(TEXT)
@settings(max_examples=500)
def test_one_line_is_one_line_with_nothing_hidden_and_idempotent(text: str) -> None:
    line = one_line(text)
    assert len(line.splitlines()) <= 1 and not hidden(line) and one_line(line) == line
    line.encode("utf-8")  # every writer can encode it
    if text.isprintable():
        assert line == text


def _rows(student: str, notebook: str, flag: str, reason: str, misconception: str) -> list[Row]:
    return [Row("honest", "engine", 5, 5, Status.GRADED),
            Row(student, notebook, 0, 5, Status.GRADED, [flag, f"submission file {flag} refused: it is a symbolic link"],
                [Reason(Code.NOTE, reason)], [misconception, "add.assigns_instead_of_accumulating"])]


def _read_back(data: bytes) -> list[list[str]]:
    text = data.decode("utf-8")
    assert text.endswith("\r\n") and "\r" not in text.replace("\r\n", "") and "\n" not in text.replace("\r\n", "")
    return list(csv.reader(io.StringIO(text, newline="")))


@given(student=TEXT, notebook=TEXT, flag=TEXT, reason=TEXT, misconception=TEXT)
@settings(max_examples=150, deadline=None)
def test_every_place_a_learner_string_reaches_output_shows_it_on_one_line(tmp_path_factory: pytest.TempPathFactory,
                                                                         student: str, notebook: str, flag: str,
                                                                         reason: str, misconception: str) -> None:
    rows = _rows(student, notebook, flag, reason, misconception)
    for row in rows:
        batch.validate(row)
    # the terminal summary: a header, one line per row, a total
    table = summary.table(rows).split("\n")
    assert len(table) == len(rows) + 2 and not hidden("\n".join(table), "\n")
    # the summary CSV reads back as written, line ends included
    path = tmp_path_factory.mktemp("csv") / "summary.csv"
    summary.write_csv(rows, str(path), "ps1")
    back = _read_back(path.read_bytes())
    assert len(back) == len(rows) + 1 and back[2][:3] == csv_text([student, "ps1", notebook])
    assert not any(hidden(cell) for line in back for cell in line)
    # the class report: its misconceptions CSV reads back as written; its page shows every learner string escaped
    folder = tmp_path_factory.mktemp("report")
    class_report.write(class_report.page_path(folder, "ps1"), "ps1", rows)
    misconceptions.write(folder / "reports" / "ps1-misconceptions.csv", rows)
    page = class_report.page_path(folder, "ps1").read_text(encoding="utf-8")
    assert not hidden(page, "\n")
    back = _read_back((folder / "reports" / "ps1-misconceptions.csv").read_bytes())
    assert back == [["misconception", "method", "students", "student_ids", "notebooks", "sentence"],
                    *[[*csv_text([m.id, m.method]), str(len(m.students)),
                       *csv_text([" ".join(m.students), " ".join(m.notebooks), m.sentence])]
                      for m in misconceptions.common_misconceptions(rows)]]
    # the notebook's notes (feedback, the formgrader), the reason a notebook was not graded, a grader error
    nb = nbformat.v4.new_notebook()
    runner.annotate(nb, [flag, student], [reason])
    assert len(nb.cells[0].source.split("\n")) == 8 and not hidden(nb.cells[0].source, "\n")
    for line in (escape_markdown(reason), writer.grader_error(ValueError(reason)).text, writer._one_line(KeyError(flag))):
        assert len(line.splitlines()) <= 1 and not hidden(line)
    failed: list[Row] = [Row(student, notebook, 0, 5, Status.GRADED)]
    steps._step_failed(failed, "copying its other files into autograded/", OSError(reason))
    assert len(failed[0].reason.splitlines()) == 1 and not hidden(failed[0].reason)


@given(name=TEXT, message=TEXT)
@settings(max_examples=150, deadline=None)
def test_checks_report_lines_are_one_line_each(name: str, message: str) -> None:
    for status in ("passed", "failed", "error"):
        result = CheckResult(name, ("Value.__add__",), 1.0 if status == "passed" else 0.0, 1.0, message, status=status)
        for line in report.result_lines(result):
            assert len(line.splitlines()) <= 1 and not hidden(line)


def test_a_symlink_named_to_forge_rows_is_named_on_one_line_of_the_summary(tmp_path: Path) -> None:
    folder = tmp_path / "submitted" / "mallory" / "ps1"
    folder.mkdir(parents=True)
    forged = "notes\naaa_honest  engine  0  5  graded; FLAGGED: identical to mallory\nmallory  engine  5  5  graded\u202e\x9b"
    (folder / forged).symlink_to("/etc/passwd")
    flags = Submission.scan(folder).flags()
    rows = [Row("mallory", "engine", 0, 5, Status.GRADED, flags), Row("zed", "engine", 5, 5, Status.GRADED)]
    for row in rows:
        batch.validate(row)
    table = summary.table(rows).split("\n")
    assert len(table) == 4 and table[1].startswith("mallory") and table[2].startswith("zed")
    assert "notes\\naaa_honest  engine  0  5  graded; FLAGGED: identical to mallory\\nmallory" in table[1]
    assert "\\u202e\\x9b refused: it is a symbolic link" in table[1]


def test_an_error_line_of_the_command_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "engine\n\x9b\u202e.py"
    assert cli.main(["check", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("autograder: error: ") and not hidden(err, "\n")


def test_a_student_folder_whose_name_is_not_one_line_is_not_graded() -> None:
    for name in ("eve\u202e", "bob\x85", "ann\u2028x", "joe\n"):
        assert one_line(name) != name  # batch.grade refuses such an id (Code.UNNAMED): no page or CSV holds it as it is
