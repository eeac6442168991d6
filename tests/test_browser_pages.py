"""The instructor's and the student's pages in Debian's Chromium: a student's feedback, the class report, and the
formgrader's view of a submission, on a course of two students (one solved notebook 02, one with a classic mistake)
graded by this grader. Each page shows ✓ and ✗ as text (never by colour alone), every image carries alternative
text, the page reports no console error (offline: no page asks a CDN for MathJax), and a screenshot is kept in
test-artifacts/browser/pages/.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import support
from browser_support import Console, artifacts, browser, jupyter_lab, require_chromium, shot

from autograder.checks.messages import hint

pytestmark = [pytest.mark.browser, pytest.mark.slow]
NOTEBOOK = "02_values"
# bob records `*` as the op of `+`: add.wrong_op (tests/checks/notebook_corpus.py's add_records_star)
MISTAKE = {f"{NOTEBOOK}.ipynb": ("ex_02_add", '(self, other), "+")', '(self, other), "*")')}
STUDENTS = {"ada": ("Lovelace", "Ada"), "bob": ("Builder", "Bob")}
SENTENCE = " ".join(hint("add.wrong_op").split("{")[0].split()[:5])


def _feedback(c: support.Course) -> None:
    done = c.nbgrader("generate_feedback", support.WORKBOOK, "--force")
    c.outputs["feedback"] = done.stdout + done.stderr


# Notebook 02 released, ada's solved and bob's mistaken submission graded, feedback generated (conftest's `course`).
COURSE = support.CoursePlan([f"{NOTEBOOK}.ipynb"], [support.Learner(sid, name=names, mistakes=MISTAKE if sid == "bob" else None)
                                                   for sid, names in STUDENTS.items()], after_grading=_feedback)


@pytest.fixture(scope="module")
def shots() -> Path:
    return artifacts("pages")


@pytest.fixture(scope="module")
def page(course, tmp_path_factory: pytest.TempPathFactory):
    require_chromium()
    console = Console()
    with browser(tmp_path_factory.mktemp("chromium-profile")) as context:
        pg = context.new_page()
        console.watch(pg)
        yield pg, console


def no_image_without_alt(page) -> None:
    assert page.locator("img:not([alt]), img[alt='']").count() == 0, "an image has no alternative text"
    assert page.locator("svg[role='img']:not([aria-label])").count() == 0, "an SVG picture has no label"


def test_feedback_shows_the_mistake_as_text_with_alternative_text_on_every_image(course, page, shots: Path):
    from playwright.sync_api import expect

    pg, console = page
    assert "Alternative text is missing" not in course.outputs["feedback"]
    for student, marks in (("ada", ("✓",)), ("bob", ("✓", "✗", SENTENCE))):
        html = course.root / "feedback" / student / support.WORKBOOK / f"{NOTEBOOK}.html"
        pg.goto(html.as_uri())
        pg.wait_for_load_state("load")
        first = pg.get_by_text(marks[-1]).first  # the screenshot shows the mistake's diagnosis, or a ✓
        shot(pg, shots / f"feedback-{student}.png", show=first, console=console)  # no CDN, no error offline
        for mark in marks:
            expect(pg.locator("body")).to_contain_text(mark)
        no_image_without_alt(pg)
        assert pg.locator("img[src^='data:image/svg+xml']").count() > 0, "the graph pictures are missing"
        if student == "ada":
            assert "✗" not in pg.locator("body").inner_text()


def test_class_report_names_the_mistake_and_labels_its_histograms(course, page, shots: Path):
    pg, console = page
    report = course.root / "reports" / f"{support.WORKBOOK}.html"
    assert report.is_file(), f"{report} is missing"
    pg.goto(report.as_uri())
    pg.wait_for_load_state("load")
    shot(pg, shots / "class-report.png", expect=("add.wrong_op", "bob"), console=console)
    assert pg.locator("svg").count() > 0
    assert pg.locator("svg:not([aria-label])").count() == 0, "a histogram has no label"
    no_image_without_alt(pg)


def test_formgrader_shows_a_submission_with_its_check_marks_as_text(course, page, shots: Path, tmp_path: Path):
    from nbgrader.api import Gradebook
    from playwright.sync_api import expect

    pg, console = page
    with Gradebook(f"sqlite:///{course.root}/gradebook.db") as gb:
        submission = gb.find_submission_notebook(NOTEBOOK, support.WORKBOOK, "bob").id
    env = {**course.env(), "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_DATA_DIR": str(tmp_path / "data"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "lab-settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"), "IPYTHONDIR": str(tmp_path / "ipython")}
    env.pop("NBGRADER_EXECUTION", None)
    env.pop("JUPYTER_CONFIG_PATH", None)
    # as `./workbook instructor` runs it: the Lab root is the course folder, nbgrader_config.py from the checkout
    with jupyter_lab(course.root, tmp_path / "home", env=env, cwd=course.repo) as lab:
        pg.goto(f"{lab.url}/login")
        pg.fill("input[name=password]", lab.token)
        pg.locator("#login_submit").click()
        pg.wait_for_load_state()
        pg.locator(".jp-LabShell, #main").first.wait_for(timeout=120_000)  # the Lab after login, fully loaded
        pg.wait_for_load_state("networkidle")
        console.take()
        pg.goto(f"{lab.url}/formgrader/submissions/{submission}/?index=0")
        pg.locator(".cell, .jp-Cell").first.wait_for(timeout=120_000)
        shot(pg, shots / "formgrader-submission.png", show=pg.get_by_text(SENTENCE).first, console=console)
        for mark in ("✗", SENTENCE, "✓"):
            expect(pg.locator("body")).to_contain_text(mark)
        no_image_without_alt(pg)
