"""The formgrader on a course graded by this grader: its Flagged? column, and its ⚡ Autograde button made harmless.

The button runs plain `nbgrader autograde`, which writes the hidden tests into the autograded notebook: feedback
made from it at once redacts them, and the next `python -m autograder grade` notices the rewritten file and
regrades it.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
from pathlib import Path

import nbformat
import pytest
import support
from lab_server import free_port, stop, wait_until_served
from nbgrader.api import Gradebook
from test_browser_lab import CHROMIUM_FLAGS, chromium  # noqa: F401  (the fixture: Chromium and Playwright, or skip)

NOTEBOOK = "01_derivatives"
STUDENTS = {"ada": ("Lovelace", "Ada"), "eve": ("Mallory", "Eve")}  # eve edits a locked test cell: FLAGGED
HIDDEN = ("BEGIN HIDDEN TESTS", "hidden=True")


def _edit_a_locked_test_cell(folder: Path) -> None:
    nb = nbformat.read(folder / f"{NOTEBOOK}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade") and c.metadata["nbgrader"].get("locked"))
    cell.source = "pass  # no test here\n"
    nbformat.write(nb, folder / f"{NOTEBOOK}.ipynb")


# One workbook notebook, two students with names, graded by this grader (conftest's `course`).
COURSE = support.CoursePlan([f"{NOTEBOOK}.ipynb"], [
    support.Learner(sid, name=names, edit=_edit_a_locked_test_cell if sid == "eve" else None) for sid, names in STUDENTS.items()])


def _autograded(c: support.Course, student: str) -> str:
    return (c.root / "autograded" / student / support.WORKBOOK / f"{NOTEBOOK}.ipynb").read_text()


def _flagged(c: support.Course) -> dict[str, bool]:
    with Gradebook(f"sqlite:///{c.root}/gradebook.db") as gb:
        return {s: gb.find_submission_notebook(NOTEBOOK, support.WORKBOOK, s).flagged for s in STUDENTS}


def _feedback_after_regrading(c: support.Course, student: str) -> str:
    second = c.grade()
    line = next(ln for ln in second.stdout.splitlines() if ln.startswith(student))
    assert "skipped" not in line, second.stdout  # the rewritten notebook was noticed
    assert not [h for h in HIDDEN if h in _autograded(c, student)]
    c.nbgrader("generate_feedback", support.WORKBOOK, "--force")
    return (c.root / "feedback" / student / support.WORKBOOK / f"{NOTEBOOK}.html").read_text()


@pytest.mark.slow
def test_flagged_notebook_ticks_the_gradebook_field_the_formgrader_shows(course):
    assert _flagged(course) == {"ada": False, "eve": True}


@pytest.mark.slow
def test_feedback_made_right_after_plain_autograde_shows_no_hidden_tests(course):
    course.nbgrader("autograde", support.WORKBOOK, "--force", "--student=ada")
    assert any(h in _autograded(course, "ada") for h in HIDDEN)  # plain nbgrader wrote them, and no regrade yet
    course.nbgrader("generate_feedback", support.WORKBOOK, "--force", "--student=ada")
    html = (course.root / "feedback" / "ada" / support.WORKBOOK / f"{NOTEBOOK}.html").read_text()
    assert "hidden tests: run by the grader, source not shown" in html and not [h for h in HIDDEN if h in html]


@pytest.mark.slow
def test_plain_autograde_over_our_grades_is_noticed_and_regraded_so_feedback_has_no_hidden_tests(course):
    # What the ⚡ button runs: NbGraderAPI.autograde(assignment, student, force=True)
    course.nbgrader("autograde", support.WORKBOOK, "--force", "--student=ada")
    assert any(h in _autograded(course, "ada") for h in HIDDEN)  # plain nbgrader wrote them
    html = _feedback_after_regrading(course, "ada")
    assert "✓" in html and not [h for h in HIDDEN if h in html]


# ---------------------------------------------------------------- in Chromium, through ./workbook instructor


@pytest.fixture(scope="module")
def instructor_lab(chromium, course, tmp_path_factory):  # noqa: F811
    """The repository's `./workbook instructor` (its nbgrader_config.py, this venv) on the test's course directory."""
    home = tmp_path_factory.mktemp("jupyter-home")
    env = {**course.env(), "WORKBOOK_VENV": str(Path(support.BIN).parent), "JUPYTER_CONFIG_DIR": str(home / "config"),
           "JUPYTER_DATA_DIR": str(home / "data"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "JUPYTERLAB_SETTINGS_DIR": str(home / "lab-settings"), "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
           "IPYTHONDIR": str(home / "ipython")}
    env.pop("NBGRADER_EXECUTION", None)
    port, token = free_port(), secrets.token_hex(16)
    cmd = ["bash", str(support.ROOT / "workbook"), "instructor", "--no-browser", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}"]
    log = home / "lab.log"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=home, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_served(f"{url}/api/status?token={token}", proc, log, what="./workbook instructor")
        yield url, token, log
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def page(chromium, instructor_lab, tmp_path_factory):  # noqa: F811
    from playwright.sync_api import sync_playwright

    url, token, _ = instructor_lab
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(str(tmp_path_factory.mktemp("chromium-profile")),
                                                       executable_path=str(chromium), headless=True, args=CHROMIUM_FLAGS)
        try:
            pg = context.new_page()
            # Log in with the form: the formgrader's pages call its API with the login cookie, not with the token.
            pg.goto(f"{url}/login")
            pg.fill("input[name=password]", token)
            pg.locator("#login_submit").click()
            pg.wait_for_load_state()
            yield pg
        finally:
            context.close()


@pytest.mark.slow
@pytest.mark.browser
def test_formgrader_lists_the_course_and_shows_the_flag(course, instructor_lab, page):
    url, _, log = instructor_lab
    page.goto(f"{url}/formgrader/gradebook/{support.WORKBOOK}/{NOTEBOOK}")
    rows = page.locator("#main-table tr", has=page.locator("td.flagged"))  # one per submission, from its API
    rows.first.wait_for(state="attached", timeout=120_000)
    page.get_by_text("Show All Names").click()  # the table shows "Submission #n" until asked
    rows.filter(has_text="Mallory").first.wait_for(timeout=30_000)
    assert rows.count() == len(STUDENTS)
    assert rows.filter(has_text="Mallory").locator("td.flagged .glyphicon-flag").count() == 1
    assert rows.filter(has_text="Lovelace").locator("td.flagged .glyphicon-flag").count() == 0
    assert "not a subdirectory of the notebook server root" not in log.read_text()


@pytest.mark.slow
@pytest.mark.browser
def test_formgrader_autograde_button_cannot_publish_hidden_tests(course, instructor_lab, page):
    url, _, _ = instructor_lab
    page.goto(f"{url}/formgrader/manage_submissions/{support.WORKBOOK}")
    row = page.locator("#main-table tr", has_text=re.compile(r"Mallory|\beve\b"))
    row.wait_for(timeout=120_000)
    row.locator("td.autograde a").click()
    page.locator("#success-modal").wait_for(timeout=180_000)  # plain nbgrader ran, in the server
    assert any(h in _autograded(course, "eve") for h in HIDDEN)
    html = _feedback_after_regrading(course, "eve")
    assert not [h for h in HIDDEN if h in html]
    assert _flagged(course)["eve"] is True  # regraded: still suspect, still flagged


def test_instructor_command_is_in_the_usage_line():
    r = subprocess.run(["bash", str(support.ROOT / "workbook"), "nonsense"], capture_output=True, text=True,
                       env={**os.environ, "WORKBOOK_VENV": "/nonexistent"})
    assert r.returncode == 2 and "./workbook instructor" in r.stderr
