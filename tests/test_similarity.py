"""The similarity report: planted copies rank first, independent learners stay below the threshold, handed-out code
is no evidence, learner content stays inert on the page and unread past its bounds, and the command fails in one line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
import similarity_class
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.cli import main
from autograder.grading.outputs.text import valid_text
from autograder.grading.pages import page_policy
from autograder.settings import Limits, Similarity, load_config
from autograder.similarity import command, compare, page, public
from autograder.similarity.handout import Exercise, SimilarityError, load_handout
from autograder.similarity.read import ClassBounds, read_class, read_notebook

ROOT = Path(__file__).resolve().parent.parent


def key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if b == similarity_class.MICROGRAD else tuple(sorted((a, b)))  # type: ignore[return-value]


def analysed(course: Path, **overrides) -> command.Report:
    config = load_config(course / "nbgrader_config.py")
    for name, value in overrides.items():
        setattr(config.Similarity, name, value)
    report, _ = command.run("workbook", config, str(course))
    return report


def assert_planted_first(synthetic: similarity_class.SyntheticClass, report: command.Report) -> None:
    planted = synthetic.planted
    ranked = [key(m.a, m.b) for m in report.ranking.matches]
    top = ranked[: len(planted)]
    assert set(top) == set(planted), f"missed: {set(planted) - set(top)}"
    flagged = {key(m.a, m.b) for m in report.flagged()}
    assert flagged == set(planted), f"flagged but not planted: {flagged - set(planted)}; planted, not flagged: {set(planted) - flagged}"
    assert {p for p, kind in planted.items() if kind == "micrograd"} <= flagged


@pytest.fixture(scope="module")
def small_class(tmp_path_factory: pytest.TempPathFactory) -> tuple[similarity_class.SyntheticClass, Path]:
    synthetic = similarity_class.make_class(60, seed=3, per_kind=1)
    return synthetic, synthetic.write(tmp_path_factory.mktemp("similarity") / "course")


@pytest.fixture(scope="module")
def small_report(small_class) -> command.Report:
    return analysed(small_class[1])


def test_planted_copies_rank_first_and_nothing_else_stands_out_in_a_small_class(small_class, small_report) -> None:
    assert_planted_first(small_class[0], small_report)


@pytest.mark.slow
def test_planted_copies_rank_first_and_nothing_else_stands_out_in_a_class_of_200(tmp_path: Path) -> None:
    synthetic = similarity_class.make_class(200, seed=0)
    assert set(synthetic.planted.values()) == {"verbatim", "renamed", "reordered", "ring", "micrograd"}
    assert_planted_first(synthetic, analysed(synthetic.write(tmp_path / "course")))


def test_the_synthetic_class_is_the_same_for_the_same_seed() -> None:
    a, b = similarity_class.make_class(40, seed=5, per_kind=1), similarity_class.make_class(40, seed=5, per_kind=1)
    assert [(x.id, x.cells) for x in a.learners] == [(x.id, x.cells) for x in b.learners] and a.planted == b.planted
    assert similarity_class.make_class(40, seed=6, per_kind=1).learners[0].cells != a.learners[0].cells


def test_the_synthetic_learners_differ_from_each_other_and_from_the_reference() -> None:
    synthetic = similarity_class.make_class(40, seed=5, per_kind=1)
    reference = similarity_class.solution_cells()
    answers = [json.dumps(x.cells, sort_keys=True) for x in synthetic.learners if x.id in synthetic.independent]
    assert len(set(answers)) == len(answers)
    for learner in synthetic.learners:
        changed = sum(text != reference[nb][gid] for nb, cells in learner.cells.items() for gid, text in cells.items())
        assert changed >= 3, f"{learner.id} wrote the reference almost everywhere"


def test_a_class_that_hands_in_the_reference_solution_has_no_evidence(tmp_path: Path) -> None:
    reference = similarity_class.solution_cells()
    learners = [similarity_class.Learner(f"s{i}", reference) for i in range(4)]
    similarity_class.write_course(tmp_path / "course", learners)
    report = analysed(tmp_path / "course")
    assert [m for m in report.ranking.matches if not m.public] == []
    assert report.flagged() == []


@pytest.mark.slow
def test_the_same_class_gives_the_same_page_and_csv_whatever_the_hash_seed(small_class, tmp_path: Path) -> None:
    _, course = small_class
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-m", "autograder", "similarity", "workbook", "--course", str(course),
                               "--config", str(course / "nbgrader_config.py")], capture_output=True, text=True, env=env, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        outputs.append([(course / "reports" / f"workbook-similarity.{ext}").read_text() for ext in ("html", "csv")])
    assert outputs[0] == outputs[1]


def test_learner_code_is_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    reference = similarity_class.solution_cells()
    evil = {nb: {gid: f"open({str(marker)!r}, 'w').write('x')\nimport os; os._exit(3)\n" + text for gid, text in cells.items()}
            for nb, cells in reference.items()}
    similarity_class.write_course(tmp_path / "course", [similarity_class.Learner("a", evil), similarity_class.Learner("b", evil)])
    report = analysed(tmp_path / "course")
    assert not marker.exists()
    assert report.works[0].cells  # read, compared, never executed


# ---------------------------------------------------------------- bounds: before parsing, and what is read at all

BOUNDS = ClassBounds(notebook_bytes=10_000, cells_per_notebook=3, cell_bytes=40, max_notebooks=100)
EX = Exercise("nb", "ex_1")


def cell(gid: str, source: object, cell_type: str = "code") -> dict:
    return {"cell_type": cell_type, "source": source, "metadata": {"nbgrader": {"grade_id": gid, "solution": True}}}


def test_only_the_exercises_code_cells_are_read_and_long_cells_are_cut() -> None:
    nb = {"cells": [cell("ex_1", "x" * 100), cell("ex_1", "second"), cell("other", "not an exercise")]}
    found, note = read_notebook(json.dumps(nb).encode(), {"ex_1": EX}, BOUNDS)
    assert found == {EX: "x" * 40} and "cut" in note


def test_cells_past_the_bound_are_not_looked_at() -> None:
    nb = {"cells": [cell("a", "1"), cell("b", "2"), cell("c", "3"), cell("ex_1", "hidden past the bound")]}
    found, note = read_notebook(json.dumps(nb).encode(), {"ex_1": EX}, BOUNDS)
    assert found == {} and "first 3 cells" in note


@pytest.mark.parametrize("data", [b"{not json", b"[" * 100_000 + b"]" * 100_000, b'{"cells": 3}', b"[]",
                                  json.dumps({"cells": [cell("ex_1", {"not": "text"}), "junk", None]}).encode()])
def test_a_broken_notebook_gives_a_note_or_nothing_never_an_exception(data: bytes) -> None:
    found, _ = read_notebook(data, {"ex_1": EX}, BOUNDS)
    assert found in ({}, {EX: ""})


def write_nb(folder: Path, name: str, nb: object) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(nb))


def test_too_big_linked_and_misnamed_submissions_are_left_out_with_a_note(tmp_path: Path) -> None:
    handout = command.Handout([EX])
    big, link, fine = tmp_path / "big", tmp_path / "link", tmp_path / "fine"
    write_nb(big, "nb.ipynb", {"cells": [cell("ex_1", "y" * 20_000)]})
    write_nb(fine, "nb.ipynb", {"cells": [cell("ex_1", "print(1)")]})
    link.mkdir()
    (link / "nb.ipynb").symlink_to(fine / "nb.ipynb")
    works, notes = read_class({"big": big, "link": link, "fine": fine, "bad\nname": fine}, handout, BOUNDS)
    assert {w.student: w.cells for w in works} == {"big": {}, "link": {}, "fine": {EX: "print(1)"}}
    assert any(n.startswith("big/nb.ipynb: ") and "10000 bytes" in n for n in notes)
    assert any(n.startswith("link/nb.ipynb: ") and "symbolic link" in n for n in notes)
    assert any("not printable" in n for n in notes) and all("\n" not in n for n in notes)


def test_more_notebooks_than_the_bound_are_refused_before_any_is_read(tmp_path: Path) -> None:
    folders = {f"s{i}": tmp_path / "missing" for i in range(101)}
    with pytest.raises(SimilarityError, match="max_notebooks"):
        read_class(folders, command.Handout([EX]), BOUNDS)


# ---------------------------------------------------------------- the pieces

def test_the_handout_gives_the_solution_cells_and_subtracts_release_reference_and_demo_code() -> None:
    handout = load_handout(ROOT / "solutions" / "workbook", ROOT / "notebooks" / "workbook")
    reference = similarity_class.solution_cells()
    assert [(e.notebook, e.grade_id) for e in handout.exercises] == [(nb, gid) for nb, cells in reference.items() for gid in cells]
    text = "\n".join(handout.boilerplate)
    assert "### BEGIN SOLUTION" not in text and "topo, visited = [], set()" in text  # the reference, markers dropped
    assert "raise NotImplementedError()" in text and "check(" in text  # the stubs and the check cells as released


def test_the_robust_baseline_is_median_and_scaled_deviation() -> None:
    base = compare.robust_baseline(np.array([1.0, 2.0, 3.0, 4.0, 100.0]))
    assert base.median == 3.0 and base.spread == pytest.approx(1.4826 * 1.0)
    assert base.z(3.0 + 2 * base.spread) == pytest.approx(2.0)
    mostly_zero = compare.robust_baseline(np.array([4.0]), total=4)  # MAD 0: the mean absolute deviation
    assert mostly_zero.median == 0.0 and mostly_zero.spread == pytest.approx(1.2533 * 1.0)


def test_groups_are_the_connected_components_of_the_flagged_pairs() -> None:
    names = ["a", "b", "c", "d", "e", "f"]
    assert compare.groups(names, [(0, 1), (1, 2), (4, 5)]) == [["a", "b", "c"], ["e", "f"]]


def test_a_public_engine_is_read_from_its_package_without_running_it_or_from_a_path(tmp_path: Path) -> None:
    src = public.load_source("micrograd")
    assert src.name.startswith("micrograd 0.1.0") and "def backward" in src.files["engine.py"] and "class MLP" in src.text
    (tmp_path / "eng.py").write_text("raise SystemExit('imported')\nclass Value: pass\n")
    assert "class Value" in public.load_source(str(tmp_path / "eng.py")).text
    with pytest.raises(SimilarityError, match="neither a path nor an installed package"):
        public.load_source("no_such_engine_package")


def test_matches_are_shown_only_where_the_evidence_is(small_report) -> None:
    report = small_report
    copy = next(m for m in report.flagged() if not m.public)
    items = command.evidence(report, copy)
    assert items and all(len(i.left.slices[0]) and len(i.right.slices[0]) for i in items)
    pasted = next(m for m in report.flagged() if m.public)
    shown = command.evidence(report, pasted)
    assert any("build_topo" in i.right.text[int(a):int(b)] for i in shown for a, b in zip(*i.right.slices))


# ---------------------------------------------------------------- the page: inert whatever a learner writes

ALLOWED = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4", "p", "strong", "table", "thead", "tbody",
           "tr", "th", "td", "ul", "ol", "li", "section", "div", "pre", "mark"}


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(html_text: str) -> Tags:
    p = Tags()
    p.feed(html_text)
    p.close()
    return p


def assert_inert(html_text: str) -> Tags:
    p = parsed(html_text)
    assert {t for t, _ in p.tags} <= ALLOWED, {t for t, _ in p.tags} - ALLOWED
    attrs = {(t, k) for t, a in p.tags for k in a}
    assert attrs <= {("html", "lang"), ("meta", "charset"), ("meta", "http-equiv"), ("meta", "content"), ("table", "id"),
                     ("ul", "id"), ("ol", "id"), ("p", "id"), ("p", "class"), ("tr", "class"), ("div", "class"),
                     ("section", "class"), ("section", "id")}, attrs
    csp = [a for t, a in p.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp == [{"http-equiv": "Content-Security-Policy", "content": page_policy.POLICY}]  # the grader's one policy
    assert "<meta http-equiv=\"Content-Security-Policy\"" in html_text.split("<body>")[0]
    return p


hostile = st.lists(st.text(max_size=12) | st.sampled_from(
    ["<script>alert(1)</script>", "</pre>", "<mark>", "\"'", "&amp;", "\x00", "\ud800", "\n", "<!--", "]]>"]), max_size=6).map("".join)


@settings(max_examples=150, deadline=None)
@given(a=hostile, b=hostile, code=hostile, starts=st.lists(st.integers(0, 80), max_size=4))
def test_the_page_escapes_whatever_a_learner_names_or_writes(a: str, b: str, code: str, starts: list[int]) -> None:
    slices = np.array([starts, [s + 7 for s in starts]]) if starts else np.array([[], []])
    ev = page.Evidence("nb/ex", page.Side(f"{a}: nb/ex", code, slices), page.Side(b, code, slices))
    row = {"a": a, "b": b, "z": 99.0, "threshold": 60.0, "score": 3.0, "exercises": ["nb/ex"], "flag": True}
    html_text = page.render("workbook", [("students", "2")], [f"{a}: a note"], [row], [[a, b]], [(row, [ev])])
    p = assert_inert(html_text)
    text = "".join(p.text)
    assert valid_text(a) in text and valid_text(b) in text
    pres = re.findall(r"<pre>(.*?)</pre>", html_text, re.S)
    assert len(pres) == 2
    for pre in pres:
        assert re.sub(r"</?mark>", "", pre).replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace(
            "&#x27;", "'").replace("&amp;", "&") == valid_text(code)


def test_a_long_text_shows_only_the_lines_around_its_marks_with_every_mark_closed() -> None:
    text = "".join(f"line {i}\n" for i in range(200))
    start = text.index("line 100")
    out = page.highlighted(text, np.array([[start], [text.index("line 103")]]))
    assert "line 10\n" not in out and "line 99" in out and "line 104" in out and "…" in out
    assert out.count("<mark>") == out.count("</mark>") >= 1


def test_the_real_page_of_a_hostile_class_is_inert(tmp_path: Path) -> None:
    reference = similarity_class.solution_cells()
    evil = {nb: {gid: text + "\n# </pre><script>alert('x')</script>\nshown = [str(v) for v in ('<img src=x onerror=alert(1)>', "
                 "'</pre><script>alert(2)</script>')]\nprint(shown, len(shown), sorted(shown))\n"
                 for gid, text in cells.items()} for nb, cells in reference.items()}
    names = ["<img src=x onerror=alert(1)>", "o'neil\"&<b>"]  # (a folder name holds no '/')
    similarity_class.write_course(tmp_path / "course", [similarity_class.Learner(n, evil) for n in names])
    config = load_config(tmp_path / "course" / "nbgrader_config.py")
    config.Similarity.flag_z = 0.0  # show every pair side by side
    config.Similarity.common_floor = 2
    _report, paths = command.run("workbook", config, str(tmp_path / "course"))
    html_text = paths[0].read_text()
    assert_inert(html_text)
    assert "<script" not in html_text and "<img" not in html_text and "<b>" not in html_text
    assert "&lt;img src=x onerror=alert(1)&gt;" in html_text and "o&#x27;neil&quot;&amp;&lt;b&gt;" in html_text
    assert "&lt;/pre&gt;&lt;script&gt;" in html_text
    assert "Evidence, not a verdict." in html_text


# ---------------------------------------------------------------- the command line

def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["similarity", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_command_prints_the_top_and_writes_the_page_and_csv(small_class, capsys) -> None:
    synthetic, course = small_class
    code, out, err = run_cli(capsys, "workbook", "--course", str(course), "--config", str(course / "nbgrader_config.py"))
    assert code == 0, err
    assert f"{len(synthetic.learners)} students" in out and "evidence to read, not a verdict" in out
    assert f"wrote {course / 'reports' / 'workbook-similarity.html'}" in out
    rows = (course / "reports" / "workbook-similarity.csv").read_text().splitlines()
    assert rows[0] == "z,threshold,score,student,with,public_engine,exercises" and len(rows) > len(synthetic.planted)


@pytest.mark.parametrize(("setup", "args", "message"), [
    ("course", ["nope"], "no notebooks in the assignment's source"),
    ("course", ["workbook/../x"], "is not an assignment name"),
    ("empty", ["workbook"], "no submissions of 'workbook'"),
    ("one", ["workbook"], "a comparison needs two"),
    ("course", ["workbook", "--course", "/nonexistent/course"], "does not exist"),
    ("badconfig", ["workbook"], "Similarity.noise (40) must be at least 1 and at most Similarity.guarantee (30)"),
    ("nomicrograd", ["workbook"], "public engine 'not_installed_engine' is neither a path nor an installed package"),
])
def test_errors_are_one_line_exit_2_and_leave_nothing_behind(tmp_path: Path, capsys, setup: str, args: list[str],
                                                             message: str) -> None:
    course = tmp_path / "course"
    reference = similarity_class.solution_cells()
    learners = {"course": 2, "empty": 0, "one": 1, "badconfig": 2, "nomicrograd": 2}[setup]
    similarity_class.write_course(course, [similarity_class.Learner(f"s{i}", reference) for i in range(learners)])
    (course / "submitted").mkdir(exist_ok=True)
    extra = {"badconfig": "c.Similarity.noise = 40\n", "nomicrograd": "c.Similarity.public_engines = ['not_installed_engine']\n"}
    with open(course / "nbgrader_config.py", "a") as f:
        f.write(extra.get(setup, ""))
    before = sorted(p.relative_to(course) for p in course.rglob("*"))
    if "--course" not in args:
        args = [*args, "--course", str(course)]
    code, out, err = run_cli(capsys, *args, "--config", str(course / "nbgrader_config.py"))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("autograder: error: ") and message in err, err
    assert sorted(p.relative_to(course) for p in course.rglob("*")) == before


def test_without_copydetect_the_error_names_the_extra(small_class, capsys, monkeypatch) -> None:
    _, course = small_class
    for name in [m for m in sys.modules if m.startswith(("autograder.similarity", "copydetect"))]:
        parent, _, last = name.rpartition(".")
        if parent in sys.modules and hasattr(sys.modules[parent], last):
            # the re-import below binds a new module on its parent: put the old one back after, as sys.modules is
            monkeypatch.setattr(sys.modules[parent], last, getattr(sys.modules[parent], last))
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "copydetect", None)
    code, _out, err = run_cli(capsys, "workbook", "--course", str(course), "--config", str(course / "nbgrader_config.py"))
    assert code == 2 and err.count("\n") == 1 and "pip install 'autograd-workbook[similarity]'" in err, err


def test_settings_are_read_from_the_course_config(small_class) -> None:
    _, course = small_class
    assert analysed(course, flag_z=1e9, flag_public_z=1e9).flagged() == []
    assert Similarity().flag_z == 60.0 and Limits().notebook_mb == 20
