"""The learner's browser: notebook 03 in a learner's JupyterLab in Debian's Chromium.

A half-done "Run All" reaches the summary; stubs solved show green ✓s; a mistake shows its red ✗ diagnosis; Validate.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from browser_support import (
    CHROMIUM_FLAGS,  # noqa: F401  (tests/test_course_formgrader.py takes it from here)
    NOTEBOOKS,
    RELEASE,
    ROOT,
    Console,
    Lab,
    artifacts,
    browser,
    docs_shot,
    filled,
    jupyter_lab,
    require_chromium,
    shot,
    workbook,
)
from browser_support import Notebook as LearnerNotebook

from autograder.loader import calls_check

# The exercise the Validate test drives: the `_backward` of `+`, checked for accumulation (`+=`, not `=`) by its own
# check cell; and a check the half-done notebook leaves unfinished (backward() is still a stub).
TARGET_CHECK = "add_local_backward"
UNFINISHED_CHECK = "backward_accumulates"
DOCS_NOTEBOOK = "04_bricks"  # whose check cell, with a ✓ beside its ✗, the README shows (browser_support.DOCS_PICTURES)

pytestmark = [pytest.mark.browser, pytest.mark.slow]


# ---------------------------------------------------------------- the notebook under test


@dataclass
class Exercise:
    """A learner notebook, its solutions cell by cell, and which stub and check cell the test drives."""

    lab_root: Path  # a copy of notebooks/ the server may write to
    notebook: str  # path relative to lab_root
    solutions: dict[int, str]  # learner cell index -> the stub cell's source with the solution filled in
    checks: list[int]  # every check cell
    stub: int  # the `+` exercise, whose `_backward` must accumulate
    check: int  # the check cell that runs TARGET_CHECK
    unfinished: int  # the check cell that runs UNFINISHED_CHECK

    def mistake(self) -> str:
        """The classic mistake in the stub: assign each gradient (`=`) where it must accumulate (`+=`)."""
        wrong, n = re.subn(r"(\.grad\s*)\+=", r"\1=", self.solutions[self.stub])
        assert n > 0, "the solution of the stub cell has no `.grad +=` to get wrong"
        return wrong


def exercise_from(learner: Path, source: Path, lab_root: Path) -> Exercise:
    """Pair a learner notebook with its nbgrader source by grade_id; find the `+` stub and the accumulation check."""
    lnb, snb = nbformat.read(learner, as_version=4), nbformat.read(source, as_version=4)
    by_id = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in snb.cells}
    solutions: dict[int, str] = {}
    for i, cell in enumerate(lnb.cells):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("solution"):
            assert meta.get("grade_id") in by_id, f"{learner.name}: stub cell {meta.get('grade_id')!r} has no source cell"
            assert "NotImplementedError" in cell.source, f"{learner.name}: cell {meta['grade_id']!r} is not a stub"
            solutions[i] = filled(by_id[meta["grade_id"]].source)
    checks = [i for i, c in enumerate(lnb.cells) if c.cell_type == "code" and calls_check(c.source)]
    target = [i for i in checks if TARGET_CHECK in lnb.cells[i].source]
    assert target, f"{learner.name}: no check cell runs {TARGET_CHECK!r}"
    stubs = [i for i in solutions if i < target[0] and ".grad +=" in solutions[i]]
    assert stubs, f"{learner.name}: no stub above the {TARGET_CHECK!r} check whose solution accumulates `.grad +=`"
    stub = next((i for i in stubs if "def __add__" in solutions[i]), stubs[0])
    unfinished = next(i for i in checks if UNFINISHED_CHECK in lnb.cells[i].source)
    return Exercise(lab_root, str(learner.relative_to(lab_root)), solutions, checks, stub, target[0], unfinished)


@pytest.fixture(scope="module")
def exercise(tmp_path_factory: pytest.TempPathFactory) -> Exercise:
    """Notebook 03 (the automatic backward), in a temporary copy of the learner notebooks."""
    learner = sorted((ROOT / "notebooks" / "workbook").glob("03_*.ipynb"))
    assert learner, "notebooks/workbook/ has no 03_*.ipynb (the backward notebook)"
    source = ROOT / "solutions" / "workbook" / learner[0].name
    assert source.exists(), f"{source.relative_to(ROOT)} is missing"
    lab_root = tmp_path_factory.mktemp("lab") / "notebooks"
    shutil.copytree(ROOT / "notebooks", lab_root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return exercise_from(lab_root / "workbook" / learner[0].name, source, lab_root)


# ---------------------------------------------------------------- JupyterLab and Chromium


@pytest.fixture(scope="module")
def chromium() -> Path:
    """Debian's Chromium and Playwright, checked before anything is started."""
    return require_chromium()


@pytest.fixture(scope="module")
def lab(chromium: Path, exercise: Exercise, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A learner's `jupyter lab` (the learner's Lab configuration, nothing of the test's own) on 127.0.0.1."""
    with jupyter_lab(exercise.lab_root, tmp_path_factory.mktemp("jupyter-home")) as server:
        yield server


@pytest.fixture(scope="module")
def console() -> Console:
    return Console()


@pytest.fixture(scope="module")
def page(chromium: Path, lab: Lab, console: Console, tmp_path_factory: pytest.TempPathFactory):
    """A page in Debian's Chromium with a fresh user data dir, driven by Playwright."""
    with browser(tmp_path_factory.mktemp("chromium-profile")) as context:
        pg = context.new_page()
        console.watch(pg)
        yield pg


class Notebook(LearnerNotebook):
    """The shared learner's actions, plus nbgrader's Validate button and this module's screenshots."""

    def __init__(self, page, shots: Path) -> None:
        super().__init__(page)
        self.shots = shots

    def open(self, lab: Lab, path: str) -> None:  # type: ignore[override]
        super().open(lab.notebook_url(path))

    def validate(self):
        """Press nbgrader's Validate button (it saves the notebook first) and return the results dialog."""
        self.page.get_by_role("button", name="Validate").click()
        dialog = self.page.locator(".jp-Dialog").filter(has_text="Validation Results")
        dialog.wait_for(timeout=120_000)
        return dialog

    def close_dialog(self) -> None:
        self.page.locator(".jp-Dialog").get_by_role("button", name="Ok").click()
        self.page.locator(".jp-Dialog").wait_for(state="detached")

    def shot(self, name: str, show=None) -> Path:
        """Screenshot the page, scrolled (inside JupyterLab's own panel) so that `show` is in view."""
        return shot(self.page, self.shots / f"{name}.png", show=show)


@pytest.fixture(scope="module")
def shots() -> Path:
    return artifacts("lab")


@pytest.fixture
def notebook(page, shots: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture) -> Iterator[Notebook]:
    nb = Notebook(page, shots)
    try:
        yield nb
    finally:
        nb.shot(f"last-{request.node.name}")  # the state at the end, or at the failure
        with capsys.disabled():
            print(f"\nbrowser test screenshots: {shots}")


NEWS_PROMPT = "official Jupyter news"  # JupyterLab's "Would you like to get notified about official Jupyter news?"


def test_the_learners_lab_asks_nothing_about_jupyter_news(lab: Lab, exercise: Exercise, notebook: Notebook):
    import json
    import urllib.request

    from playwright.sync_api import expect

    notebook.open(lab, exercise.notebook)
    url = f"{lab.url}/lab/api/settings/@jupyterlab/apputils-extension:notification?token={lab.token}"
    with urllib.request.urlopen(url, timeout=30) as r:
        doc = json.load(r)  # the learner's configuration sets the defaults; the user settings are left empty
    effective = {k: doc["settings"].get(k, p.get("default")) for k, p in doc["schema"]["properties"].items()}
    assert effective["fetchNews"] == "false" and effective["checkForUpdates"] is False, effective
    notebook.page.wait_for_timeout(3000)  # the prompt is a toast JupyterLab raises shortly after start-up
    expect(notebook.page.get_by_text(NEWS_PROMPT)).to_have_count(0)
    notebook.shot("00-learners-lab-on-open")


def test_half_done_run_all_reaches_the_summary_in_a_learners_lab(lab: Lab, exercise: Exercise, notebook: Notebook):
    from playwright.sync_api import expect

    notebook.open(lab, exercise.notebook)
    expect(notebook.page.get_by_role("button", name="Validate")).to_be_visible()
    expect(notebook.page.get_by_text(NEWS_PROMPT)).to_have_count(0)
    # nbgrader's instructor tools and exchange-bound lists are not in a learner's Lab
    expect(notebook.page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader")).to_have_count(0)
    expect(notebook.page.locator("#create_assignment_widget, .nbgrader-CreateAssignmentWidget")).to_have_count(0)
    notebook.type_into(exercise.stub, exercise.solutions[exercise.stub])  # only `+` is done
    notebook.run_all_from_menu()
    summary = notebook.output(notebook.cells.count() - 1)
    expect(summary).to_contain_text("Not done yet: ", timeout=120_000)
    expect(summary).to_contain_text("✓ add_local_backward")
    expect(summary).to_contain_text(f"⋯ {UNFINISHED_CHECK}: not done yet")  # unfinished: a quiet line, not a ✗
    expect(summary.locator(".autograder-todo").first).to_have_css("color", "rgb(87, 96, 106)")  # grey, not red
    expect(summary).to_contain_text("Points as nbgrader will score them")
    expect(notebook.page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")).to_have_count(0)
    expect(notebook.cells.nth(exercise.unfinished).locator(".autograder-check")).to_contain_text(f"✗ {UNFINISHED_CHECK}")
    notebook.shot("0-half-done-run-all-reaches-summary", show=summary)
    notebook.save()


def test_learner_fills_stub_sees_check_and_mistake_then_validates(lab: Lab, exercise: Exercise, notebook: Notebook):
    from playwright.sync_api import expect

    notebook.open(lab, exercise.notebook)
    out = notebook.output(exercise.check)
    for index, solution in exercise.solutions.items():
        notebook.type_into(index, solution)
    notebook.run_all_from_menu()
    expect(out).to_contain_text(f"✓ {TARGET_CHECK}", timeout=120_000)
    for i in exercise.checks:  # every check cell of the solved notebook answers ✓, none ✗
        expect(notebook.output(i)).to_contain_text("✓")
        expect(notebook.output(i)).not_to_contain_text("✗")
        expect(notebook.output(i)).not_to_contain_text("Traceback")
    expect(out.locator(".autograder-check span").first).to_have_css("color", "rgb(26, 127, 55)")  # a green ✓
    notebook.shot("1-solution-passes", show=out)

    notebook.type_into(exercise.stub, exercise.mistake())
    notebook.run(exercise.stub)
    notebook.run(exercise.check)
    expect(out).to_contain_text(f"✗ {TARGET_CHECK}", timeout=60_000)
    expect(out).to_contain_text("accumulate `grad += ...`")  # the diagnosis names the misconception
    expect(out).not_to_contain_text("Traceback")
    expect(out.locator(".autograder-check span").first).to_have_css("color", "rgb(207, 34, 46)")  # a red ✗
    # one order: the method and the misconception's sentence on the red ✗ line, the numbers, then the folded repro
    expect(out.locator(".autograder-lead").first).to_contain_text("accumulate `grad += ...`")
    expect(out.locator(".autograder-lead").first).to_contain_text("Value.__add__")
    assert out.inner_text().index("grad += ...") < out.inner_text().index("seen:") < out.inner_text().index("reproduce")
    expect(out).not_to_contain_text("tested alone")
    expect(out.locator("details")).not_to_have_attribute("open", "")  # the reproduce block starts folded
    expect(out.locator("details summary")).to_have_css("display", "list-item")  # with its disclosure triangle
    notebook.shot("2-mistake-diagnosed", show=out)

    dialog = notebook.validate()  # the saved notebook still holds the mistake: validation must fail
    expect(dialog).not_to_contain_text("Success!")
    expect(dialog).to_contain_text("The following cell failed")
    expect(dialog).to_contain_text(f"✗ {TARGET_CHECK}: ")  # the one-line diagnosis, not "printed above"
    notebook.shot("3-validate-fails-on-mistake")
    docs_shot(dialog, "validate-fails.png")
    notebook.close_dialog()

    notebook.type_into(exercise.stub, exercise.solutions[exercise.stub])
    notebook.run(exercise.stub)
    notebook.run(exercise.check)
    expect(out).to_contain_text(f"✓ {TARGET_CHECK}", timeout=60_000)
    dialog = notebook.validate()
    expect(dialog).to_contain_text("Success! Your notebook passes all the tests.")
    notebook.shot("4-validate-succeeds")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_each_notebook_untouched_then_a_mistake_then_solved_in_a_learners_lab(name: str, lab: Lab, notebook: Notebook,
                                                                             console: Console):
    from playwright.sync_api import expect

    book = workbook(name)
    shutil.copy(RELEASE / f"{name}.ipynb", lab.root / "workbook")  # untouched, whatever an earlier test saved
    console.take()
    notebook.open(lab, f"workbook/{name}.ipynb")
    summary = notebook.last_output()
    expect(notebook.page.locator(".jp-StatusBar-Item", has_text="| Idle")).to_be_visible()
    assert not notebook.dirty(), "the notebook shows as modified as soon as it opens"

    notebook.run_all_from_menu()  # untouched: Run All reaches the summary, every check not done yet
    expect(summary).to_contain_text("Not done yet: ", timeout=120_000)
    shot(notebook.page, notebook.shots / f"{name}-0-untouched-run-all.png", show=summary,
         expect=("Points as nbgrader will score them",), console=console)
    if name == DOCS_NOTEBOOK:
        docs_shot(summary, "summary-untouched.png")

    for index, solution in book.solutions.items():  # everything solved, but one classic mistake
        notebook.type_into(index, book.mistake if index == book.mistake_cell else solution)
    notebook.run_all_from_menu()
    expect(summary).to_contain_text("Failing: ", timeout=120_000)
    wrong = notebook.output(book.check)
    expect(wrong).to_contain_text(book.sentence)
    for i in book.checks:
        if i < book.check:
            expect(notebook.output(i)).not_to_contain_text("✗")
    shot(notebook.page, notebook.shots / f"{name}-1-mistake.png", show=wrong, expect=("✗", book.sentence), console=console)
    if name == DOCS_NOTEBOOK:  # the README's picture: one check cell, a ✓ beside a ✗ and its diagnosis
        expect(wrong).to_contain_text("✓")
        docs_shot(wrong, "check-cell.png")

    notebook.type_into(book.mistake_cell, book.solutions[book.mistake_cell])
    notebook.run_all_from_menu()
    expect(summary).to_contain_text("this notebook is done", timeout=120_000)
    for i in book.checks:
        expect(notebook.output(i)).to_contain_text("✓")
        expect(notebook.output(i)).not_to_contain_text("✗")
    missing_alt = notebook.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea img:not([alt])")
    assert missing_alt.count() == 0, "an image in the notebook has no alternative text"
    shot(notebook.page, notebook.shots / f"{name}-2-solved.png", show=notebook.output(book.check), expect=("✓",),
         console=console)
    shot(notebook.page, notebook.shots / f"{name}-3-solved-summary.png", show=summary, expect=("this notebook is done",))
    if name == DOCS_NOTEBOOK:
        docs_shot(summary, "summary-solved.png")
    notebook.save()
