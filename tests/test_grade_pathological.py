"""Pathological submissions against the grader's own work on them (bounded.py): reading the notebook, making it safe to
show, writing it. Each step ends within its deadline in a helper process, never in the grader's thread; past a bound the
notebook is refused (read) or its cells shown as plain text (render), flagged, and the grader goes on. Deadlines here
are ceilings for termination on a loaded 2-core machine, not timings."""

from __future__ import annotations

import copy
import csv
import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
import support
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nbformat import v4

from autograder.grading.discover.submission import Refused, Unreadable
from autograder.grading.grade import bounded
from autograder.grading.grade.sanitize import shape_problem
from autograder.grading.pages import safe_html
from autograder.settings import HTML_DEPTH, NOTEBOOK_DEPTH, Limits

CEILING = 240.0  # seconds any one step may take here before the test calls it a hang (the bounds are far below)


@pytest.fixture(scope="module", autouse=True)
def helpers() -> Iterator[None]:
    bounded.HELPERS.warm()
    yield
    bounded.HELPERS.close()


def ends(step: Any, *args: Any) -> Any:
    """`step(*args)` in a thread of its own, which must end within CEILING: its result, or what it raised."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = step(*args)
        except BaseException as exc:  # (the caller asserts what it was)
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(CEILING)
    assert not t.is_alive(), f"{step.__name__} did not end within {CEILING} s"
    return out


def raw_notebook(cells: str, metadata: str = "{}") -> bytes:
    return f'{{"nbformat": 4, "nbformat_minor": 5, "metadata": {metadata}, "cells": [{cells}]}}'.encode()


def honest_cells() -> list[Any]:
    return [v4.new_markdown_cell("# Title\n\nSome *emphasis* and `code`."),
            v4.new_code_cell("1 + 1", outputs=[v4.new_output("execute_result", {"text/plain": "2", "text/html": "<b>2</b>"},
                                                             execution_count=1)])]


# ---------------------------------------------------------------- reading: bounded before and while it runs


def test_320000_cells_are_refused_on_the_bytes_before_any_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = raw_notebook(",".join(['{"cell_type": "raw", "metadata": {}, "source": ""}'] * 320_000))
    assert len(raw) > 14 * 2**20
    monkeypatch.setattr(bounded.HELPERS, "helper", lambda: pytest.fail("a helper was asked to parse it"))
    with pytest.raises(Refused, match="more than 10000 cells"):
        bounded.read(raw, Limits())


@pytest.mark.parametrize("raw, refused, why", [
    (raw_notebook(",".join(["{}"] * 10_001)), True, "it has 10001 cells, more than the limit of 10000"),
    (raw_notebook("", '{"x": ' + "[" * 100 + "]" * 100 + "}"), True, f"nested more than {NOTEBOOK_DEPTH} levels deep"),
    (raw_notebook("", '{"x": [' + ",".join(["0"] * 1_100_000) + "]}"), True, "more than 1000000 JSON values"),
    (raw_notebook("", '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}"), False, "not valid JSON"),
], ids=["cells-without-cell_type", "deep-metadata", "a-million-values", "100000-deep"])
def test_a_notebook_past_a_bound_on_its_shape_is_refused_in_the_helper(raw: bytes, refused: bool, why: str) -> None:
    out = ends(bounded.read, raw, Limits())
    assert type(out["error"]) is (Refused if refused else Unreadable) and why in str(out["error"])


def test_reading_past_its_deadline_is_refused_and_the_next_notebook_is_read() -> None:
    raw = raw_notebook(",".join(['{"cell_type": "raw", "metadata": {}, "source": "x"}'] * 10_000))  # within the bounds
    out = ends(bounded.read, raw, Limits(read_timeout=0.05))
    assert isinstance(out["error"], Refused) and "took more than 0.05 s" in str(out["error"])
    assert len(ends(bounded.read, nbformat.writes(v4.new_notebook(cells=honest_cells())).encode(), Limits())["value"].cells) == 2


def test_reading_past_its_memory_cap_is_refused_and_a_notebook_within_it_is_read() -> None:
    limits = Limits(helper_memory_mb=220)  # a helper holds ~100 MiB of address space before it reads anything
    honest = nbformat.writes(v4.new_notebook(cells=[c for _ in range(200) for c in honest_cells()])).encode()
    assert len(ends(bounded.read, honest, limits)["value"].cells) == 400
    raw = raw_notebook("", '{"x": [' + ",".join(["[]"] * 3_000_000) + "]}")  # 9 MB of bytes, ~170 MB once parsed
    out = ends(bounded.read, raw, limits)
    assert isinstance(out["error"], Refused) and "stopped its helper process (more than 220 MiB" in str(out["error"])


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max([_depth(v) for v in value.values()], default=0)
    if isinstance(value, list):
        return 1 + max([_depth(v) for v in value], default=0)
    return 0


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = [*value.keys(), *value.values()] if isinstance(value, dict) else value if isinstance(value, list) else []
    return [t for v in items for t in _texts(v)]


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=12),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
                    max_leaves=40)


@given(metadata=JSON, cells=st.integers(0, 6), depth=st.integers(1, 8), text=st.integers(0, 12))
@settings(max_examples=300, deadline=None)
def test_the_shape_bounds_refuse_exactly_what_is_past_them(metadata: Any, cells: int, depth: int, text: int) -> None:
    data = {"cells": [{"source": "s"}] * cells, "metadata": metadata}
    problem = shape_problem(data, max_cells=3, max_depth=depth, max_text=text)
    past = cells > 3 or _depth(data) > depth or any(len(t) > text for t in _texts(data))
    assert (problem is not None) == past, problem


# ---------------------------------------------------------------- rendering and writing: bounded while they run


def _render(nb: Any, **limits: Any) -> tuple[Any, bytes, str, list[str]]:
    """The notebook as its file holds it once rendered, the file, its digest, the flags."""
    out = ends(bounded.render, nb, Limits(**limits))
    assert "error" not in out, out.get("error")
    data, digest, flags = out["value"]
    return nbformat.reads(data.decode(), as_version=4), data, digest, flags


def test_adversarial_markdown_past_the_deadline_is_plain_text_and_the_rest_is_rendered() -> None:
    nb = v4.new_notebook(cells=[*honest_cells(), v4.new_markdown_cell("*_" * 2_000_000)])  # ~25 s of rendering here
    safe, _, _, flags = _render(nb, render_timeout=2.0)
    assert safe.cells[0].source.startswith('<div><h1>Title')  # rendered in time
    assert "<b>2</b>" in safe.cells[1].outputs[0].data["text/html"]
    assert "not shown as it was written" in safe.cells[2].source and "<pre>*_*_" in safe.cells[2].source
    assert len(safe.cells[2].source) < 3 * 2000 + 500  # the stand-in is cut, never the whole cell
    assert flags == ["shown as plain text in the autograded notebook, cell 3: not made safe to show in time: the grader's "
                     "helper took more than 2 s (Limits.render_timeout)"]
    assert [c.cell_type for c in safe.cells] == ["markdown", "code", "markdown"]


@pytest.mark.parametrize("where", ["markdown", "raw", "text/html", "text/markdown", "image/svg+xml"])
def test_nesting_deeper_than_nh3_can_clean_in_time_is_plain_text_at_once(where: str) -> None:
    deep = ("<svg>" + "<g>" * 200_000) if where == "image/svg+xml" else "<div>" * 190_000  # under the 1 MB output cap
    if where in ("markdown", "raw"):
        cell = v4.new_markdown_cell(deep) if where == "markdown" else v4.new_raw_cell(deep)
    else:
        cell = v4.new_code_cell("x", outputs=[v4.new_output("display_data", {where: deep, "text/plain": "<IPython>"})])
    nb = v4.new_notebook(cells=[*honest_cells(), cell])
    safe, _, _, flags = _render(nb, render_timeout=60.0)
    assert flags == [f"shown as plain text in the autograded notebook, cell 3: it could not be made safe to show "
                     f"(HTML nested more than {HTML_DEPTH} elements deep)"]
    shown = json.dumps(safe.cells[2])
    assert "<div><div>" not in shown and "<g><g>" not in shown  # the markup is gone; its text, or text/plain, is shown
    assert ("&lt;div&gt;&lt;div&gt;" in shown) if where in ("markdown", "raw") else ("<IPython>\\n[not shown" in shown)
    assert safe.cells[0].source.startswith('<div><h1>Title')


def test_deep_html_never_reaches_nh3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safe_html.nh3, "clean", lambda *a, **k: pytest.fail("nh3 was given the deep HTML"))
    for deep in ("<div>" * 200_000, "<blockquote><span>" * 600, "<ul><li>" * 1001):
        with pytest.raises(safe_html.TooDeep):
            safe_html.clean_html(deep)


TAGS = ["div", "span", "section", "blockquote", "ul", "table", "em", "a", "svg", "g"]


@given(tags=st.lists(st.sampled_from(TAGS), min_size=0, max_size=40), repeat=st.integers(1, 60),
       closed=st.integers(0, 40), attrs=st.sampled_from(["", ' class="x"', " title='a>b'"]))
@settings(max_examples=200, deadline=None)
def test_the_depth_guard_counts_open_elements(tags: list[str], repeat: int, closed: int, attrs: str) -> None:
    opened = (tags or ["div"]) * repeat
    html = "".join(f"<{t}{attrs}>" for t in opened) + "".join(f"</{t}>" for t in reversed(opened[len(opened) - closed:]))
    depth = len(opened)
    limit = 300
    if depth > limit:
        with pytest.raises(safe_html.TooDeep):
            safe_html.guard_depth(html, limit)
    else:
        safe_html.guard_depth(html, limit)


@given(n=st.integers(1_001, 5_000), tag=st.sampled_from(["li", "p", "td", "tr", "option", "br", "img", "hr"]))
@settings(max_examples=20, deadline=None)
def test_siblings_and_void_elements_are_no_nesting(n: int, tag: str) -> None:
    safe_html.guard_depth(f"<{tag}>x" * n)


@given(text=st.text(max_size=300), html=st.text(alphabet=st.sampled_from(list("<>/divspan ab=\"'*_`[]()!#&;\n")), max_size=300))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_any_text_renders_to_a_notebook_of_the_same_cells(text: str, html: str) -> None:
    nb = v4.new_notebook(cells=[v4.new_markdown_cell(text), v4.new_raw_cell(html), v4.new_code_cell(
        "x", outputs=[v4.new_output("display_data", {"text/html": html, "text/markdown": text, "text/plain": "p"})])])
    safe, data, _, flags = _render(nb)
    assert [c.cell_type for c in safe.cells] == ["markdown", "raw", "code"] and flags == []
    assert "<script" not in data.decode().lower()


@pytest.mark.slow  # a helper renders ~1 MB of adversarial markdown per output until the deadline
def test_huge_markdown_and_html_outputs_under_the_caps_end_within_the_deadline() -> None:
    outputs = [v4.new_output("display_data", {"text/markdown": "*_" * 450_000}),  # ~0.9 MB each: under both caps
               v4.new_output("display_data", {"text/markdown": "[a](" * 220_000}),
               v4.new_output("display_data", {"text/html": "<span>" * 150_000})]
    cells = [v4.new_code_cell(f"x{i}", outputs=[out]) for i, out in enumerate(outputs)]
    nb = v4.new_notebook(cells=[*honest_cells(), *cells, *[v4.new_markdown_cell("*_" * 32_000) for _ in range(64)]])
    safe, data, _, flags = _render(nb, render_timeout=10.0, rendered_chars=3_000_000)
    assert safe.cells[0].source.startswith('<div><h1>Title') and flags
    # what could not be made safe, in time or within the budget, is cut, never written whole: however fast the machine
    # (rendered, the 64 markdown cells alone would take ~14 MB)
    assert len(data) < 3_000_000 + 2**20


def paragraphs(n: int) -> str:
    """Markdown that renders to about three times its length: n paragraphs of one letter."""
    return "a\n\n" * n


@pytest.mark.parametrize("order", ["smallest first", "largest first"])
def test_cells_past_the_rendered_budget_are_plain_text_smallest_rendered_first(order: str) -> None:
    sizes = [1000 * k for k in range(1, 11)]  # rendered, ~9 kB to ~90 kB each: ~500 kB in all
    if order == "largest first":
        sizes.reverse()
    nb = v4.new_notebook(cells=[*honest_cells(), *[v4.new_markdown_cell(paragraphs(n)) for n in sizes]])
    safe, _, _, flags = _render(nb, rendered_chars=200_000)
    assert safe.cells[0].source.startswith('<div><h1>Title') and "<b>2</b>" in safe.cells[1].outputs[0].data["text/html"]
    rendered = {n for n, cell in zip(sizes, safe.cells[2:]) if "not shown as it was written" not in cell.source}
    assert rendered == {1000, 2000, 3000, 4000, 5000, 6000}  # ~9 + 18 + ... + 54 = ~189 kB fit in 200 kB; with 63 kB more, not
    assert sum(len(c.source) for n, c in zip(sizes, safe.cells[2:]) if n in rendered) <= 200_000
    assert all(len(c.source) >= 3 * len(paragraphs(n)) for n, c in zip(sizes, safe.cells[2:]) if n in rendered)  # (grown)
    standins = {len(c.source) for n, c in zip(sizes, safe.cells[2:]) if n not in rendered}
    assert len(standins) == 1 and standins.pop() < len(paragraphs(7000))  # each cut alike, never written whole
    cut = sorted(i + 3 for i, n in enumerate(sizes) if n not in rendered)
    assert flags == [f"shown as plain text in the autograded notebook, cells {', '.join(map(str, cut))}: made safe, the "
                     "notebook's cells would hold more than 200000 characters to render (Limits.rendered_chars)"]


@given(sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=12), budget=st.integers(0, 40_000))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_rendered_cells_fit_the_budget_and_are_the_smallest(sizes: list[int], budget: int) -> None:
    nb = v4.new_notebook(cells=[v4.new_markdown_cell(paragraphs(n)) for n in sizes])
    safe, _, _, flags = _render(nb, rendered_chars=budget)
    kept = {i for i, cell in enumerate(safe.cells) if "not shown as it was written" not in cell.source}
    assert sum(len(safe.cells[i].source) for i in kept) <= budget
    smallest_first = sorted(range(len(sizes)), key=lambda i: sizes[i])  # (a stable sort: equal sizes in file order)
    assert kept == set(smallest_first[:len(kept)])
    assert bool(flags) == (len(kept) < len(sizes))


# ---------------------------------------------------------------- a batch: the bounds hold, classmates never notice

# (the rendered budget out of reach, so that the slow markdown meets the deadline however fast the machine renders it)
BATCH_LIMITS = "c.Limits.render_timeout = 5.0\nc.Limits.read_timeout = 20.0\nc.Limits.rendered_chars = 10**9\n"
HONEST = {"correct_a": [], "mul_no_swap": support.EDITS["mul_no_swap"], "topo_not_reversed": support.EDITS["topo_not_reversed"]}


def _hostile(root: Path) -> dict[str, str]:
    """Each hostile submission of the batch, made in the course; what its row's flags or reason must say."""
    solved = support.submission(root, ["derivatives", "engine"], [])

    def with_cells(*cells: Any) -> Any:
        nb = copy.deepcopy(solved)
        nb.cells.extend(cells)
        return nb

    support.submit(root, "many_cells", raw_notebook(",".join(['{"cell_type": "raw", "metadata": {}, "source": ""}'] * 320_000)))
    support.submit(root, "deep_json", raw_notebook(",".join(json.dumps(c) for c in solved.cells),
                                                   '{"x": ' + "[" * 100 + "]" * 100 + "}"))
    support.submit(root, "star_markdown", with_cells(*[v4.new_markdown_cell("*_" * 32_000) for _ in range(64)]))
    support.submit(root, "deep_markdown", with_cells(v4.new_markdown_cell("<div>" * 200_000)))
    support.submit(root, "deep_output", with_cells(
        v4.new_code_cell("from IPython.display import HTML, display\ndisplay(HTML('<div>' * 190_000))"),
        v4.new_code_cell("from IPython.display import Markdown, display\ndisplay(Markdown('*_' * 450_000))")))
    folder = support.submit(root, "sparse_file", solved).parent
    with open(folder / "data.bin", "wb") as f:
        f.truncate(2 * 2**30)  # 2 GiB of apparent size, no blocks
    (folder / "small.csv").write_text("x,y\n1,2\n")
    folder = support.submit(root, "forged_name", solved).parent
    (folder / "notes\nzzz_forged     engine     5     5  graded\n").symlink_to("/etc/passwd")
    return {"many_cells": "more than 10000 cells", "deep_json": "nested more than 64 levels deep",
            "star_markdown": "Limits.render_timeout", "deep_markdown": "HTML nested more than 1000 elements deep",
            "deep_output": "shown as plain text", "sparse_file": "data.bin refused: it is 2147483648 bytes",
            "forged_name": "notes\\nzzz_forged"}


def _grade(root: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, dict[str, str]]]:
    r = subprocess.run([sys.executable, "-m", "autograder", "grade", support.ASSIGNMENT, "--course", str(root), "--config",
                        str(root / "nbgrader_config.py"), "--no-progress", "--jobs", "2", "--csv", str(root / "summary.csv")],
                       cwd=root, env=support.env(), text=True, capture_output=True, timeout=1500)
    with open(root / "summary.csv", encoding="utf-8", newline="") as f:
        return r, {row["student_id"]: row for row in csv.DictReader(f)}


@pytest.mark.slow  # two batches of the fixture course: the honest classmates alone, then with every hostile submission
def test_the_batch_ends_flags_each_hostile_notebook_and_grades_classmates_as_alone(tmp_path: Path) -> None:
    alone, mixed = (support.make_course(tmp_path / name) for name in ("alone", "mixed"))
    for root in (alone, mixed):
        with open(root / "nbgrader_config.py", "a") as f:
            f.write(BATCH_LIMITS)
        for student, edits in HONEST.items():
            support.submit(root, student, support.submission(root, ["derivatives", "engine"], edits))
    expected = _hostile(mixed)
    r_alone, rows_alone = _grade(alone)
    r, rows = _grade(mixed)
    assert r_alone.returncode == 0 and r.returncode == 0, r.stderr[-3000:]
    for student in HONEST:  # classmates never notice: the same score, status, flags and reason as graded alone
        assert {k: v for k, v in rows[student].items()} == rows_alone[student], student
    assert rows["correct_a"]["score"] == rows["correct_a"]["max_score"] == "7"
    for student, said in expected.items():
        assert said in rows[student]["flags"] + rows[student]["reason"], (student, rows[student])
    for student in ("star_markdown", "deep_markdown", "deep_output", "sparse_file", "forged_name"):  # scores stand
        assert rows[student]["score"] == "7", (student, rows[student])
    said_first, table = r.stdout.split("\nsandbox:")[0].split("\nstudent ", 1)  # why it grades, then the table
    assert said_first.splitlines() == [f"{len(rows)} notebooks: not graded before"]
    table = ("student " + table).splitlines()
    assert len(table) == 1 + len(rows) + 1 and not any("zzz_forged" in line.split()[0] for line in table)
    autograded = mixed / "autograded" / "sparse_file" / support.ASSIGNMENT
    assert (autograded / "small.csv").read_text() == "x,y\n1,2\n" and not (autograded / "data.bin").exists()


def test_a_helper_left_part_way_through_a_job_is_never_given_another() -> None:
    slow = v4.new_notebook(cells=[*honest_cells(), *[v4.new_markdown_cell("*_" * 20_000 + str(i)) for i in range(20)]])
    with bounded.HELPERS.helper() as helper:
        replies = helper.call("render", (slow, Limits().rendered_chars), 2048, 60.0)
        assert next(replies)[0] == "cells"  # the caller stops here (an interrupt): the rest of the job stays unread
    assert not helper.alive and helper not in bounded.HELPERS.idle
    assert _render(v4.new_notebook(cells=honest_cells()))[3] == []  # the next job gets a helper of its own


def test_a_grader_that_cannot_start_a_helper_says_it_is_its_own_fault(monkeypatch: pytest.MonkeyPatch) -> None:
    helpers = bounded.Helpers()  # (the batch's own stay as they are)

    def fails(self: bounded.Zygote) -> bounded.Helper:
        raise bounded.Exceeded("could not start a helper process (ConnectionResetError)")

    monkeypatch.setattr(bounded.Zygote, "fork", fails)
    monkeypatch.setattr(bounded, "HELPERS", helpers)
    try:
        with pytest.raises(bounded.NoHelper):  # a grader error for the row, never "not read; scored 0" and FLAGGED
            bounded.read(nbformat.writes(v4.new_notebook(cells=honest_cells())).encode(), Limits())
    finally:
        helpers.close()


def test_helpers_never_asked_for_are_not_waited_for_and_those_that_served_end_at_their_socket() -> None:
    unused = bounded.Zygote()  # still importing (a batch with nothing to grade): stopped, not waited for
    unused.close()
    assert unused.proc.returncode == -signal.SIGKILL
    used = bounded.Zygote()
    used.fork().kill()
    used.close()  # it forked a helper: it ends by itself at the end of its socket, as before
    assert used.proc.returncode == 0
