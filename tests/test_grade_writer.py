"""Everything the grader writes after grading, unit by unit: linear redaction, submissions read as regular files only,
submission times that cannot be read, outputs written whole and encodable, learner content made inert for the
browser, grading_config.py however it is loaded, and every limit's default in one place.

The same classes, graded in one batch with honest classmates and opened in Chromium: test_grade_writer_batch.py.
"""

from __future__ import annotations

import csv
import os
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from traitlets.config.loader import PyFileConfigLoader

from autograder.grading import batch
from autograder.grading.discover.assignment import NotebookSpec
from autograder.grading.discover.fingerprint import submission_digest
from autograder.grading.discover.submission import Refused, Submission
from autograder.grading.finish import late
from autograder.grading.grade import pipeline
from autograder.grading.grade.bounded import notebook_file
from autograder.grading.grade.sanitize import notebook_bytes
from autograder.grading.outputs import class_report, summary
from autograder.grading.outputs.text import csv_text, valid_text
from autograder.grading.pages import safe_html
from autograder.grading.pages.hidden_tests import HIDDEN_NOTE, replace_hidden
from autograder.grading.pages.redaction import RedactHiddenTests
from autograder.grading.types import Code, Item, Reason, Row, Status, Task
from autograder.settings import Limits, Tolerance, load_config

ROOT = Path(__file__).resolve().parent.parent
# nbgrader's own pattern for a hidden-tests block, the one this project used before: the reference for small inputs
OLD_HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[^\n]*\n?", re.S | re.M)


# ---------------------------------------------------------------- redaction in linear time

LINES = st.sampled_from(["### BEGIN HIDDEN TESTS\n", "  ### BEGIN HIDDEN TESTS x\n", "\t### END HIDDEN TESTS\n",
                         "### END HIDDEN TESTS", "assert f(1) == 2\n", "x = 1\r\n", "# ### BEGIN HIDDEN TESTS\n", "\n", "y"])


@settings(max_examples=400, deadline=None)
@given(st.lists(LINES, max_size=12))
def test_redaction_finds_exactly_the_blocks_nbgraders_pattern_finds(lines: list[str]) -> None:
    source = "".join(lines)
    assert replace_hidden(source, HIDDEN_NOTE) == OLD_HIDDEN.sub(HIDDEN_NOTE, source)
    assert replace_hidden(source, "") == OLD_HIDDEN.sub("", source)


def _within(seconds: int, fn, *args):
    """fn(*args), or a failure if it takes longer than a generous `seconds` (the old regex took minutes)."""
    def expired(*_):
        raise TimeoutError(f"took more than {seconds} s")
    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        return fn(*args)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_a_hundred_thousand_unterminated_markers_are_redacted_in_one_pass() -> None:
    source = "### BEGIN HIDDEN TESTS\n" * 100_000 + "x = 1\n"
    assert _within(10, replace_hidden, source, HIDDEN_NOTE) == source  # unterminated: left as nbgrader leaves it
    nested = "### BEGIN HIDDEN TESTS\n" * 100_000 + "### END HIDDEN TESTS\nx = 1\n"
    assert _within(10, replace_hidden, nested, HIDDEN_NOTE) == HIDDEN_NOTE + "x = 1\n"
    cell = nbformat.v4.new_code_cell(source)
    out, _ = _within(10, RedactHiddenTests().preprocess_cell, cell, {}, 0)
    assert out.source == source


# ---------------------------------------------------------------- submissions are regular files


def _submission(tmp_path: Path) -> Path:
    folder = tmp_path / "submitted" / "eve" / "workbook"
    folder.mkdir(parents=True)
    (folder / "02_values.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
    (folder / "data.csv").write_text("x\n1\n")
    return folder


def test_links_fifos_devices_and_outside_hard_links_are_refused_and_named(tmp_path: Path) -> None:
    folder = _submission(tmp_path)
    secret = tmp_path / "instructor" / "solutions.ipynb"
    secret.parent.mkdir()
    secret.write_text("the instructor's solutions")
    (folder / "linked.ipynb").symlink_to(secret)
    (folder / "etc").symlink_to("/etc")
    os.link(secret, folder / "hard.txt")
    os.mkfifo(folder / "pipe.csv")
    os.link(folder / "data.csv", folder / "data-again.csv")  # both names inside the submission: fine
    try:
        os.mknod(folder / "zero", stat.S_IFCHR | 0o600, os.makedev(1, 5))
        device = True
    except PermissionError:
        device = False
    sub = Submission.scan(folder)
    assert set(sub.files) == {"02_values.ipynb", "data.csv", "data-again.csv"}
    assert sub.refused["linked.ipynb"] == "is a symbolic link" and sub.refused["etc"] == "is a symbolic link"
    assert sub.refused["hard.txt"] == "is a hard link to a file outside the submission"
    assert sub.refused["pipe.csv"] == "is a FIFO (named pipe)"
    if device:
        assert sub.refused["zero"] == "is a device"
    assert set(sub.other_files()) == {"data.csv", "data-again.csv"}
    flags = sub.flags()
    assert "submission file hard.txt refused: it is a hard link to a file outside the submission" in flags
    with pytest.raises(Refused, match=r"linked\.ipynb is refused: it is a symbolic link"):
        notebook_bytes(sub, "linked", 2**20)
    with pytest.raises(Refused):
        sub.read("pipe.csv", 10)  # refused before any open: a FIFO never blocks the grader
    assert notebook_bytes(sub, "02_values", 2**20).startswith(b"{")


def test_a_symlinked_submission_folder_is_refused_whole(tmp_path: Path) -> None:
    real = _submission(tmp_path)
    link = tmp_path / "submitted" / "mallory"
    link.symlink_to(real.parent)  # submitted/mallory -> submitted/eve: eve's work, or the instructor's
    sub = Submission.scan(link / "workbook")
    assert "is a symbolic link" in sub.problem
    with pytest.raises(Refused):
        notebook_bytes(sub, "02_values", 2**20)


def test_a_fifo_notebook_is_fingerprinted_and_refused_without_blocking(tmp_path: Path) -> None:
    folder = _submission(tmp_path)
    (folder / "02_values.ipynb").unlink()
    os.mkfifo(folder / "02_values.ipynb")
    fp = _within(5, submission_digest, folder / "02_values.ipynb")
    assert fp == submission_digest(folder / "02_values.ipynb")
    with pytest.raises(Refused, match="FIFO"):
        notebook_bytes(Submission.scan(folder), "02_values", 2**20)


def test_an_item_whose_notebook_is_refused_is_graded_zero_and_flagged(tmp_path: Path) -> None:
    folder = _submission(tmp_path)
    (folder / "02_values.ipynb").unlink()
    (folder / "02_values.ipynb").symlink_to(ROOT / "solutions" / "workbook" / "02_values.ipynb")
    task = Task(Item("eve", "02_values", folder / "02_values.ipynb"), "fp")
    spec = NotebookSpec("02_values")
    result = pipeline.grade(task, pipeline.Shared({"02_values": spec}, Limits(), Tolerance()))
    assert result.graded is None and result.why is not None and result.why.code is Code.UNREADABLE
    assert result.flags == [result.why.text] and "symbolic link" in result.flags[0]
    graded = pipeline.not_graded(tmp_path / "missing.ipynb", spec, result.why, result.flags)
    assert graded.ran is False and graded.cause is Code.UNREADABLE and graded.flags == result.flags


# ---------------------------------------------------------------- submission times


@pytest.mark.parametrize("content, problem", [
    (b"2025-01-15 10:00:00.000000 UTC", ""),
    (b"", ""),  # nbgrader: an empty file is no time
    (b"not a date", "holds 'not a date', not a date and time"),
    (b"99999-99-99 99:99", "not a date and time"),
    (b"\xff\xfe", "not UTF-8"),
    (b"2" * 10_000, "more than 4096 bytes"),
])
def test_an_unreadable_submission_time_is_no_time_and_says_why(tmp_path: Path, content: bytes, problem: str) -> None:
    folder = _submission(tmp_path)
    (folder / "timestamp.txt").write_bytes(content)
    time = late.submission_time(Submission.scan(folder))
    assert (time.when is not None) == (content.startswith(b"2025"))
    assert (problem in time.problem) if problem else time.problem == ""
    if problem:
        assert "graded as submitted on time" in time.problem


def test_a_fifo_or_linked_timestamp_is_refused_without_blocking(tmp_path: Path) -> None:
    folder = _submission(tmp_path)
    os.mkfifo(folder / "timestamp.txt")
    time = _within(5, late.submission_time, Submission.scan(folder))
    assert time.when is None and "FIFO" in time.problem
    (folder / "timestamp.txt").unlink()
    (folder / "timestamp.txt").symlink_to("/etc/hostname")
    assert "symbolic link" in late.submission_time(Submission.scan(folder)).problem


# ---------------------------------------------------------------- outputs written whole, from valid text


def test_text_no_writer_can_encode_is_replaced_and_formulas_are_quoted() -> None:
    assert valid_text("a\ud800b\x00c\td\n") == "a\ufffdb\ufffdc\td\n"
    assert csv_text(["=HYPERLINK(1)", "+1", "-2.5", "@x", "plain"]) == ["'=HYPERLINK(1)", "+1", "-2.5", "'@x", "plain"]


def _rows() -> list[Row]:
    return [Row("ada", "02_values", 5, 5, Status.GRADED),
            Row("eve\ud800", "02_values", 0, 5, Status.GRADED, ["lying object: \udcff"],
                [Reason(Code.NOTE, "raised Bad\ud83dName")], ["add.wrong"])]


def test_the_summary_csv_holds_every_row_even_with_unencodable_text(tmp_path: Path) -> None:
    path = tmp_path / "summary.csv"
    rows = _rows()
    for row in rows:
        batch.validate(row)
    summary.write_csv(rows, str(path), "workbook")
    data = path.read_bytes().decode("utf-8")  # csv's own line ends, \r\n, and no other line break
    assert data.endswith("\r\n") and "\n" not in data.replace("\r\n", "") and "\r" not in data.replace("\r\n", "")
    got = list(csv.DictReader(open(path, encoding="utf-8", newline="")))
    # a lone surrogate is shown as its escape (lines.one_line); a byte that was not UTF-8, as that byte
    assert [r["student_id"] for r in got] == ["ada", "eve\\ud800"] and got[1]["reason"] == "raised Bad\\ud83dName"
    assert got[1]["flags"] == "lying object: \\xff"


def test_a_writer_that_dies_leaves_the_previous_summary_and_report(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "summary.csv"
    summary.write_csv(_rows()[:1], str(path), "workbook")
    page = class_report.page_path(tmp_path, "workbook")
    class_report.write(page, "workbook", _rows()[:1])
    before = (path.read_bytes(), page.read_bytes())

    def dies(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", dies)  # the temp file is written, then the disk fails before the rename
    with pytest.raises(OSError):
        summary.write_csv(_rows(), str(path), "workbook")
    with pytest.raises(OSError):
        class_report.write(page, "workbook", _rows())
    assert (path.read_bytes(), page.read_bytes()) == before
    assert sorted(p.name for p in tmp_path.rglob("*.tmp")) == []


def test_the_class_report_escapes_and_encodes_whatever_the_rows_hold(tmp_path: Path) -> None:
    rows = [Row("<script>alert(1)</script>\ud800", "02_values", 0, 5, Status.GRADED, misconceptions=["x<img>"])]
    class_report.write(class_report.page_path(tmp_path, "workbook"), "workbook", rows)
    page = class_report.page_path(tmp_path, "workbook").read_text(encoding="utf-8")
    assert "<script>alert" not in page and "&lt;script&gt;" in page and "<img>" not in page


def test_a_notebook_with_a_lone_surrogate_in_an_output_is_written(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x", outputs=[
        nbformat.v4.new_output("stream", name="stdout", text="bad \ud800 text")])])
    (tmp_path / "nb.ipynb").write_bytes(notebook_file(nb)[0])  # the autograded file's bytes, as the writer stores them
    assert "bad \ufffd text" in (tmp_path / "nb.ipynb").read_text(encoding="utf-8")


# ---------------------------------------------------------------- inert learner content

CANARY = "http://127.0.0.1:9/canary"
XSS_HTML = (f"<script>window.pwned=1</script><img src=x onerror=\"window.pwned=1\"><img src='{CANARY}'>"
            "<a href='javascript:window.pwned=1'>x</a><iframe src='javascript:1'></iframe>"
            "<style>body{background:url(" + CANARY + ")}</style><b onclick='x()'>bold</b><table><tr><td>1</td></tr></table>")
XSS_SVG = "<svg xmlns='http://www.w3.org/2000/svg' onload='window.pwned=1'><script>window.pwned=1</script><rect width='3'/></svg>"


def hostile_notebook() -> nbformat.NotebookNode:
    outputs = [
        nbformat.v4.new_output("display_data", data={"text/html": XSS_HTML, "text/plain": "html"}),
        nbformat.v4.new_output("display_data", data={"application/javascript": "window.pwned=1"}),
        nbformat.v4.new_output("display_data", data={"image/svg+xml": XSS_SVG, "text/plain": "svg"}),
        nbformat.v4.new_output("display_data", data={"text/markdown": "<script>window.pwned=1</script>[x](javascript:y)"}),
        nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "png"},
                               metadata={"image/png": {"width": 10, "filenames": CANARY}}),
        nbformat.v4.new_output("display_data", data={"application/vnd.jupyter.widget-view+json": {"model_id": "x"}}),
    ]
    cells = [nbformat.v4.new_markdown_cell("# Mine\n<script>window.pwned=1</script>\n\n<img src=x onerror=alert(1)>\n\n"
                                           "[click](javascript:window.pwned=1) `a < b`\n\n```\nx = 1\n\ny = 2\n```"),
             nbformat.v4.new_code_cell("display(...)", outputs=outputs)]
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"widgets": {"application/vnd.jupyter.widget-state+json": {
        "state": {}, "x": "</script><script>window.pwned=1</script>"}}, "title": "<script>x</script>"})
    return nb


def _export(nb: nbformat.NotebookNode, template: str, tmp_path: Path | None = None) -> str:
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers
    from traitlets.config import Config

    config = Config()
    config.HTMLExporter.preprocessors = ["autograder.grading.pages.safe_export.SafeHTML"]  # as nbgrader_config.py sets it
    config.HTMLExporter.template_name = template
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    # as GenerateFeedback sets it: the page inlines bootstrap's CSS
    config.HTMLExporter.extra_template_paths = [os.path.join(handlers.static_path, "node_modules", "bootstrap", "dist", "css")]
    resources = {"nbgrader": {"notebook": "02_values", "score": 0, "max_score": 5, "late_penalty": 0}, "base_url": "",
                 "notebook_id": "02_values", "index": 0, "total": 1}
    exporter = HTMLExporter(config=config)
    if tmp_path is None:
        return exporter.from_notebook_node(nb, resources=resources)[0]
    path = tmp_path / "nb.ipynb"  # as nbgrader reads an autograded file: invalid fields (a cell id) only warn
    path.write_text(nbformat.v4.writes_json(nb))
    return exporter.from_filename(str(path), resources=resources)[0]


@pytest.mark.parametrize("template", ["feedback", "formgrade"])
def test_nbgraders_feedback_and_formgrade_pages_hold_no_learner_script(template: str, tmp_path: Path) -> None:
    html = _export(hostile_notebook(), template, tmp_path)
    assert "pwned" not in html and CANARY not in html and "onerror" not in html
    assert not re.search(r"""(href|src)\s*=\s*["']?\s*javascript:""", html, re.I)
    assert "widget-state" not in html
    assert "<b>bold</b>" in html and "<td>1</td>" in html and "<h1>Mine" in html  # harmless HTML still shows
    assert "x = 1\n<span></span>\ny = 2" in html  # a code block's blank line kept, inside one HTML block
    assert "[not shown by the grader: application/javascript output]" in html


def test_markdown_is_made_inert_the_same_whether_remembered_or_too_long_to_remember() -> None:
    hostile = hostile_notebook().cells[0].source
    short = safe_html.safe_markdown(hostile)
    assert safe_html.safe_markdown(hostile) == short  # the second time from the memo: the same text
    long = hostile + "\n\n" + "padding " * (safe_html.MEMO_MARKDOWN // 8)  # past the memo's bound: rendered each time
    for html in (short, safe_html.safe_markdown(long)):
        assert "pwned" not in html and "onerror" not in html and "<h1>Mine" in html


def test_a_cell_id_that_is_not_nbformats_is_replaced() -> None:
    nb = hostile_notebook()
    nb.cells[1].id = 'x" onmouseover="window.pwned=1'  # nbconvert would refuse the whole notebook (no feedback at all)
    assert safe_html.safe_notebook(nb).cells[1].id == "cell-1"
    nbformat.validate(nb)


def test_the_grader_escapes_what_it_writes_into_markdown() -> None:
    from autograder.grading.grade.runner import annotate

    nb = nbformat.v4.new_notebook()
    annotate(nb, ["lying object <img src=x onerror=alert(1)>"], ["cell 3 raised <script>alert(1)</script>"])
    html = _export(nb, "feedback")
    assert "<img" not in html and "<script>alert" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


# ---------------------------------------------------------------- grading_config.py however it is loaded


def test_grading_config_loaded_from_a_config_in_another_folder_sees_the_course_settings(tmp_path: Path) -> None:
    course_config = tmp_path / "elsewhere" / "nbgrader_config.py"
    course_config.parent.mkdir()
    course_config.write_text(f"c = get_config()\nload_subconfig({str(ROOT / 'grading_config.py')!r})\n"
                             "c.Limits.cell_timeout = 7.0\n")
    for config in (PyFileConfigLoader(course_config.name, path=str(course_config.parent)).load_config(),
                   load_config(course_config), load_config(ROOT / "grading_config.py")):
        assert config.CourseDirectory.source_directory == str(ROOT / "solutions")
        assert config.CourseDirectory.course_id == "autograd-workbook"
        assert config.HTMLExporter.preprocessors == ["autograder.grading.pages.safe_export.SafeHTML"]
    assert Limits(config=load_config(course_config)).cell_timeout == 7.0


@pytest.mark.slow  # two nbgrader start-ups
def test_nbgrader_reads_grading_config_through_its_config_file_flag(tmp_path: Path) -> None:
    code = ("import sys; from nbgrader.apps import NbGraderApp; a = NbGraderApp(); a.initialize(sys.argv[1:]); "
            "print(a.config.CourseDirectory.source_directory)")
    course_config = tmp_path / "course_config.py"
    course_config.write_text(f"c = get_config()\nload_subconfig({str(ROOT / 'grading_config.py')!r})\n")
    for flag in (ROOT / "grading_config.py", course_config):
        r = subprocess.run([sys.executable, "-c", code, f"--NbGrader.config_file={flag}"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
        assert r.stdout.strip().splitlines()[-1] == str(ROOT / "solutions"), r.stderr


# ---------------------------------------------------------------- one place for limits


def test_every_limit_default_is_settings_py_and_no_page_restates_one() -> None:
    from autograder.checks.run import LocalProber

    assert LocalProber({}).check_timeout == Limits().check_timeout
    text = (ROOT / "nbgrader_config.py").read_text()
    assert not re.search(r"^c\.(Limits|Tolerance|BatchGrading)\.", text, re.M), "nbgrader_config.py repeats a default"
    # the docs show each default as the configuration page reads it from Limits ({default} and {settings-reference})
    pages = [*(ROOT / "docs").rglob("*.md"), ROOT / "README.md"]
    for name in Limits.class_trait_names(config=True):
        for page in pages:
            said = re.search(rf"`(?:Limits\.)?{name}`\s*(?:[=:]|of|is)?\s*\d", page.read_text())
            assert not said, f"{page.relative_to(ROOT)} restates the default of Limits.{name} by hand: {said.group(0)}"
    assert "```{settings-reference}" in (ROOT / "docs" / "configuration.md").read_text()


def test_the_probes_take_the_time_limit_from_their_caller() -> None:
    import inspect

    from autograder import probes

    assert inspect.signature(probes.observe).parameters["check_timeout"].default is inspect.Parameter.empty
    assert "notebook_mb" not in (ROOT / "autograder" / "grading" / "grade" / "sanitize.py").read_text()
