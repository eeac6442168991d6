"""Every page a person opens is inert in Chromium (issue 33): with the network open to a canary server on 127.0.0.1,
no request reaches it, no script runs and no learner element covers the grader's verdict.

Each defence is proved on its own, then together on a real course:
- the policy alone (page_policy.POLICY): every attack of tests/adversarial/page_attacks.py that fetches or runs
  script, written into a page *uncleaned*, does nothing once the page carries the policy, and trips the canary or the
  script flag without it;
- containment alone (page_policy.NOTEBOOK_CSS): a full-window `position: fixed` overlay in a learner's output, left
  in by a sanitiser that missed it, stays inside its output box on nbgrader's real feedback page;
- all together: mallory hands in notebook 02 untouched (0 of 5) with every attack added, and is graded by this
  grader; her feedback page (served over http, as Jupyter serves it, so that `/\\host` resolves as a browser reads
  it), the formgrader's view of her submission (a real `./workbook instructor` server) and the class report are
  opened: nothing reaches the canary or the page's own server, nothing runs, the verdict is the element at its own
  place, and the formgrader's own scripts still work.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
import support
from adversarial.page_attacks import ATTACKS, OVERLAY_STYLE, OVERLAY_TEXT, hostile_cells
from browser_support import Canary, Console, browser, require_chromium, verdict_uncovered, what_the_page_did
from nbgrader.api import Gradebook
from test_browser_lab import chromium  # noqa: F401  (the fixture: Chromium and Playwright, or skip)
from test_course_formgrader import instructor_lab  # noqa: F401  (`./workbook instructor` on the course fixture's folder)

from autograder.grading.pages import page_policy

pytestmark = pytest.mark.browser
NOTEBOOK = "02_values"
# the grader's verdict in nbgrader's feedback page: the notebook's score, its contents, each test cell's checks
FEEDBACK_VERDICT = ("div.panel-heading > h4", "#toc", ".autograder-check")
# ... and in the formgrader's view: each cell's score box and heading, the bar at the top
FORMGRADER_VERDICT = ("input.score", ".nbgrader_cell > .panel-heading", "nav.navbar")

_CANARY: list[Canary] = []


def the_canary() -> Canary:
    """One canary server for the module, started when first needed (the course's submission already names it)."""
    if not _CANARY:
        _CANARY.append(Canary())
    return _CANARY[0]


def _hand_in_every_attack(folder: Path) -> None:
    nb = nbformat.read(folder / f"{NOTEBOOK}.ipynb", as_version=4)
    for cell in hostile_cells(the_canary().url):
        if cell.cell_type == "code":  # the grader runs the code that displays each attack: its own outputs
            cell.outputs, cell.execution_count = [], None
        nb.cells.append(cell)
    nbformat.write(nb, folder / f"{NOTEBOOK}.ipynb")


def _feedback(c: support.Course) -> None:
    done = c.nbgrader("generate_feedback", support.WORKBOOK, "--force")
    c.outputs["feedback"] = done.stdout + done.stderr


# mallory: notebook 02 as released (0 of 5) with every page attack; ada: solved (the class report has two rows)
COURSE = support.CoursePlan([f"{NOTEBOOK}.ipynb"], [support.Learner("mallory", solve=False, edit=_hand_in_every_attack),
                                                    support.Learner("ada")], after_grading=_feedback)


@pytest.fixture(scope="module")
def canary() -> Iterator[Canary]:
    yield the_canary()
    _CANARY.pop().close()


@pytest.fixture(scope="module")
def context(tmp_path_factory: pytest.TempPathFactory):
    require_chromium()
    with browser(tmp_path_factory.mktemp("chromium-profile")) as ctx:
        yield ctx


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[Path, Canary]]:
    """A folder served over http on 127.0.0.1 (another origin than the canary), its requests recorded."""
    server = Canary(tmp_path)
    yield tmp_path, server
    server.close()


def _open(context, url: str) -> tuple:
    page = context.new_page()
    console = Console()
    console.watch(page)
    page.goto(url)
    page.wait_for_load_state("load")
    return page, console


def _raw_attacks(canary: Canary, which) -> str:
    """The attacks as they are, in one page; those that swallow the rest of the page (an unclosed <style>) last."""
    chosen = sorted((a for a in ATTACKS if which(a)), key=lambda a: "mutation" in a.name)
    return "\n".join(f"<div>{a.text(canary.url)}</div>" for a in chosen)


# ---------------------------------------------------------------- each defence alone


def test_without_the_policy_the_canary_and_the_script_flag_see_the_attacks(context, canary: Canary, site) -> None:
    folder, server = site
    (folder / "raw.html").write_text("<!DOCTYPE html><html><head></head><body>"
                                     + _raw_attacks(canary, lambda a: not a.navigates) + "</body></html>")
    before = len(canary.requests)
    page, _ = _open(context, f"{server.url}/raw.html")
    seen = what_the_page_did(page, canary)
    reached = {re.match(r"/(\w*)", p).group(1) for p in canary.requests[before:]}  # each path starts with its attack
    # the detector works: backslash and control-character URLs, CSS escapes and image-set fetch; handlers run
    assert {"img_backslash_slash", "img_leading_controls", "style_image_set", "style_escape_u72l"} <= reached, reached
    assert {"img_onerror", "svg_script"} <= set(seen["pwned"] or []), seen["pwned"]
    page.close()


def test_the_policy_alone_stops_every_fetch_and_script_a_sanitiser_might_miss(context, canary: Canary, site) -> None:
    folder, server = site
    raw = _raw_attacks(canary, lambda a: not a.navigates)  # a navigation is the sanitiser's (no meta, no form)
    (folder / "policy.html").write_text(page_policy.inert_page(f"<!DOCTYPE html><html><head></head><body>{raw}</body></html>"))
    before = len(canary.requests)
    page, console = _open(context, f"{server.url}/policy.html")
    seen = what_the_page_did(page, canary)
    assert canary.requests[before:] == [] and seen["pwned"] is None
    assert server.requests == ["/policy.html"]  # not even the page's own server is asked for anything
    assert any("Content Security Policy" in e for e in console.errors)  # it was the policy that refused them
    page.close()


def _feedback_page(learner_html: str, verdict: list[dict]) -> str:
    """nbgrader's feedback page, with the project's exporter and templates but no sanitiser, of a notebook holding a
    test cell (the grader's verdict) and a learner's cell whose output is `learner_html`."""
    from nbgrader.server_extensions.formgrader import handlers
    from traitlets.config import Config

    from autograder.grading.pages.feedback_page import FeedbackExporter

    test = nbformat.v4.new_code_cell('check("add_forward")', outputs=[nbformat.from_dict(o) for o in verdict], metadata={
        "nbgrader": {"grade": True, "solution": False, "grade_id": "check_02_add", "points": 1, "score": 0}})
    mine = nbformat.v4.new_code_cell("show()", outputs=[nbformat.v4.new_output("display_data", data={"text/html": learner_html})])
    config = Config()
    config.HTMLExporter.template_name = "feedback"
    config.HTMLExporter.extra_template_basedirs = page_policy.template_basedirs()
    config.HTMLExporter.extra_template_paths = [os.path.join(handlers.static_path, "node_modules", "bootstrap", "dist", "css")]
    resources = {"nbgrader": {"notebook": NOTEBOOK, "score": 0, "max_score": 5, "late_penalty": 0}}
    nb = nbformat.v4.new_notebook(cells=[mine, test])
    return FeedbackExporter(config=config).from_notebook_node(nb, resources=resources)[0]


def test_containment_alone_keeps_a_fixed_overlay_inside_its_own_output(context, site) -> None:
    from autograder import notebook
    from autograder.checks.base import CheckResult

    folder, server = site
    verdict = notebook.check_outputs([CheckResult("add_forward", ("__add__",), 0.0, 1.0, "wrong", status="failed")], False)
    overlay = f'<div class="autograder-check" style="{OVERLAY_STYLE}">{OVERLAY_TEXT}</div>'
    boxed = _feedback_page(overlay, verdict)
    assert page_policy.NOTEBOOK_CSS in boxed and f'style="{OVERLAY_STYLE}"' in boxed  # no sanitiser: the style is there
    (folder / "boxed.html").write_text(boxed)
    (folder / "unboxed.html").write_text(boxed.replace(page_policy.NOTEBOOK_CSS, ""))
    for name, covered in (("unboxed", True), ("boxed", False)):
        page, _ = _open(context, f"{server.url}/{name}.html")
        for selector in FEEDBACK_VERDICT:
            found = verdict_uncovered(page, selector + ":not([style*=fixed])")
            assert found["seen"] > 0, (name, selector)
            assert bool(found["covered"]) is covered, (name, selector, found)
        page.close()


# ---------------------------------------------------------------- a graded course: every defence together


def _assert_inert(page, console: Console, canary: Canary, before: int, verdict: tuple[str, ...]) -> None:
    """Nothing ran, nothing points at the canary, nothing reached it since `before` requests, the verdict is
    uncovered, and the page reported no error (a refused request would be one)."""
    seen = what_the_page_did(page, canary)
    assert seen == {"pwned": None, "found": []}, seen
    assert canary.requests[before:] == [], canary.requests[before:]
    for selector in verdict:
        found = verdict_uncovered(page, selector)
        assert found["seen"] > 0 and found["covered"] == [], (selector, found)
    assert page.locator("[id='top'], [name='top']").count() <= 1  # no learner anchor takes the page's own
    errors = console.take()
    assert not errors, errors


@pytest.mark.slow
def test_the_feedback_of_a_hostile_submission_is_inert(course, context, canary: Canary) -> None:
    from playwright.sync_api import expect

    server = Canary(course.root / "feedback")  # as Jupyter's /files/ serves it: relative URLs resolve over http
    try:
        path, before = f"/mallory/{support.WORKBOOK}/{NOTEBOOK}.html", len(canary.requests)
        page, console = _open(context, server.url + path)
        expect(page.locator("div.panel-heading > h4")).to_contain_text("Score: 0.0 / 5.0")
        expect(page.locator("body")).to_contain_text(OVERLAY_TEXT)  # the learner's text is there, as text
        _assert_inert(page, console, canary, before, FEEDBACK_VERDICT)
        assert server.requests == [path], server.requests  # nothing else, not even from the page's own server
        page.close()
    finally:
        server.close()


@pytest.mark.slow
def test_the_formgraders_view_of_a_hostile_submission_is_inert_and_its_own_scripts_work(course, instructor_lab,  # noqa: F811
                                                                                      context, canary: Canary) -> None:
    from playwright.sync_api import expect

    url, token, _ = instructor_lab
    page = context.new_page()
    page.goto(f"{url}/login")
    page.fill("input[name=password]", token)
    page.locator("#login_submit").click()
    page.wait_for_load_state()
    with Gradebook(f"sqlite:///{course.root}/gradebook.db") as gb:
        submission = gb.find_submission_notebook(NOTEBOOK, support.WORKBOOK, "mallory").id
    console, before = Console(), len(canary.requests)
    console.watch(page)
    response = page.goto(f"{url}/formgrader/submissions/{submission}/?index=0")
    page.locator(".nbgrader_cell").first.wait_for(timeout=120_000)
    assert "frame-ancestors 'self'" in response.headers["content-security-policy"]  # the server's header, kept
    # the formgrader's own scripts ran (nonce): they put each autograded score into its box (as the placeholder of a
    # manual score) from the formgrader's API, and the name toggle works
    expect(page.locator("input.score").first).to_have_attribute("placeholder", re.compile(r"^\d"), timeout=60_000)
    page.locator("span.glyphicon-eye-open").click()
    expect(page.locator("a.name-shown")).to_be_visible()
    _assert_inert(page, console, canary, before, FORMGRADER_VERDICT)
    page.close()


@pytest.mark.slow
def test_the_class_report_is_inert(course, context, canary: Canary) -> None:
    server, before = Canary(course.root / "reports"), len(canary.requests)
    try:
        page, console = _open(context, f"{server.url}/{support.WORKBOOK}.html")
        assert page.locator("svg.histogram").count() > 0 and page.locator("#students").count() == 1
        _assert_inert(page, console, canary, before, ("h1", "#students"))
        assert server.requests == [f"/{support.WORKBOOK}.html"], server.requests
        page.close()
    finally:
        server.close()


@pytest.mark.slow
def test_the_similarity_page_of_a_hostile_class_is_inert(context, canary: Canary, tmp_path: Path) -> None:
    """Learners named and writing every page attack (in their code, comments and strings) are compared and shown side
    by side: the page `python -m autograder similarity` writes does nothing in Chromium."""
    import similarity_class

    from autograder.settings import load_config
    from autograder.similarity import command

    attacks = [a.text(canary.url) for a in ATTACKS]
    added = "\n" + "".join(f"# {line}\n" for text in attacks for line in text.splitlines()) + f"shown = {attacks!r}\n"
    evil = {nb: {gid: text + added for gid, text in cells.items()} for nb, cells in similarity_class.solution_cells().items()}
    names = ['<img src=x onerror="window.__pwned=1">', "<svg onload=alert(1)>", "o'neil\"&<b>"]  # (a folder name: no '/')
    similarity_class.write_course(tmp_path / "course", [similarity_class.Learner(n, evil) for n in names])
    config = load_config(tmp_path / "course" / "nbgrader_config.py")
    config.Similarity.flag_z = 0.0  # every pair stands out: each shown side by side
    config.Similarity.common_floor = len(names)  # what all of them share is evidence here, not "what every answer is"
    _report, paths = command.run(similarity_class.ASSIGNMENT, config, str(tmp_path / "course"))
    html_page = next(p for p in paths if p.suffix == ".html")
    assert all(a.text(canary.url) not in html_page.read_text() for a in ATTACKS if "<" in a.text(canary.url))  # escaped
    server, before = Canary(html_page.parent), len(canary.requests)
    try:
        page, console = _open(context, f"{server.url}/{html_page.name}")
        assert page.locator("section.pair").count() == 3  # every pair side by side, the attacks in them as text
        assert "onerror" in page.locator("#ranking").inner_text()
        _assert_inert(page, console, canary, before, ("h1", ".verdict", "#ranking"))
        assert server.requests == [f"/{html_page.name}"], server.requests
        page.close()
    finally:
        server.close()


@pytest.mark.slow
def test_the_class_reports_score_change_section_of_hostile_verdicts_is_inert(context, canary: Canary,
                                                                              tmp_path: Path) -> None:
    """A regrade's verdict sentences quote learner code: every page attack as a student's name, a grade cell and the
    sentence of a changed verdict, in the class report's score-change section, does nothing in Chromium."""
    from autograder.grading.outputs import class_report, score_changes
    from autograder.grading.types import Row, Status

    attacks = [a.text(canary.url) for a in ATTACKS]
    changes = score_changes.ScoreChanges(1, [score_changes.Change(f"s{i}-{text}", "02_values", text, 3.0, 0.0, 3.0,
                                                                  "add_backward", text)
                                             for i, text in enumerate(attacks)], len(attacks))

    rows = [Row(c.student, c.notebook, 0.0, 3.0, Status.GRADED) for c in changes.changes]
    path = class_report.page_path(tmp_path, support.WORKBOOK)
    class_report.write(path, support.WORKBOOK, rows, [score_changes.section(changes)])
    server, before = Canary(path.parent), len(canary.requests)
    try:
        page, console = _open(context, f"{server.url}/{path.name}")
        assert "onerror" in page.locator("#score-changes").inner_text()  # the attacks are there, as text
        _assert_inert(page, console, canary, before, ("h1", "#score-changes"))
        assert server.requests == [f"/{path.name}"], server.requests
        page.close()
    finally:
        server.close()
