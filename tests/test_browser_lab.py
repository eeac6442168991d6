"""The learner's browser: notebook 03 in a learner's JupyterLab in Debian's Chromium.

A half-done "Run All" reaches the summary; stubs solved show green ✓s; a mistake shows its red ✗ diagnosis; Validate.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from lab_server import free_port, stop, wait_until_served

from autograder.loader import calls_check

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
# Flags for this kind of machine (root, no GPU, no network but package mirrors); never a browser download.
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
ARTIFACTS = ROOT / "test-artifacts" / "browser"
LEARNER_CONFIG = ROOT / "lab-config" / "learner"  # what `./workbook lab` adds to JUPYTER_CONFIG_PATH
IN_CI = os.environ.get("CI") == "true"
# The exercise this test drives: the `_backward` of `+` and `*`, checked for accumulation (`+=`, not `=`).
TARGET_CHECK = "backward_accumulates"
SOLUTION_MARKER = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _missing(reason: str) -> None:
    """In CI a missing piece of the browser test is a failure; elsewhere the test is skipped with the reason."""
    if IN_CI:
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


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

    def mistake(self) -> str:
        """The classic mistake in the stub: assign each gradient (`=`) where it must accumulate (`+=`)."""
        wrong, n = re.subn(r"(\.grad\s*)\+=", r"\1=", self.solutions[self.stub])
        assert n > 0, "the solution of the stub cell has no `.grad +=` to get wrong"
        return wrong


def filled(source_cell_source: str) -> str:
    """What a learner who solved the cell has: the instructor's source without the solution markers."""
    return "\n".join(ln for ln in source_cell_source.splitlines() if not SOLUTION_MARKER.match(ln))


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
    return Exercise(lab_root, str(learner.relative_to(lab_root)), solutions, checks, stub, target[0])


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


@dataclass
class Lab:
    url: str
    token: str


@pytest.fixture(scope="module")
def chromium() -> Path:
    """Debian's Chromium and Playwright, checked before anything is started."""
    if not CHROMIUM.exists():
        _missing(f"Debian's chromium is not installed at {CHROMIUM} (apt-get install chromium; "
                 "./workbook test installs it when CI=true)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _missing("playwright is not installed (it is in the dev extra: pip install -e '.[dev]')")
    return CHROMIUM


@pytest.fixture(scope="module")
def lab(chromium: Path, exercise: Exercise, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """`jupyter lab` from this environment on 127.0.0.1, a free port, a token, and throw-away Jupyter dirs."""
    # Throw-away Jupyter folders (empty: no settings of the test's own), and the learner's Lab configuration,
    # exactly as `./workbook lab` adds it: the test sees what a learner sees.
    home = tmp_path_factory.mktemp("jupyter-home")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_CONFIG_PATH": str(LEARNER_CONFIG),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "lab-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "IPYTHONDIR": str(home / "ipython"),
    }
    env.pop("NBGRADER_EXECUTION", None)
    port, token = free_port(), secrets.token_hex(16)
    cmd = [
        str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={exercise.lab_root}",
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = home / "lab.log"
    with log.open("w") as out:
        # cwd is the lab root: nbgrader's validate handler reads an nbgrader_config.py from the server's cwd.
        proc = subprocess.Popen(cmd, cwd=exercise.lab_root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_served(f"{url}/api/status?token={token}", proc, log)
        yield Lab(url, token)
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def page(chromium: Path, lab: Lab, tmp_path_factory: pytest.TempPathFactory):
    """A page in Debian's Chromium with a fresh user data dir, driven by Playwright."""
    from playwright.sync_api import sync_playwright
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile), executable_path=str(chromium), headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1400, "height": 1000},
        )
        try:
            yield context.new_page()
        finally:
            context.close()


# ---------------------------------------------------------------- the test


class Notebook:
    """What a learner does with the notebook in JupyterLab, through the page."""

    def __init__(self, page, shots: Path) -> None:
        self.page, self.shots = page, shots
        self.cells = page.locator(".jp-Notebook .jp-Cell")

    def open(self, lab: Lab, path: str) -> None:
        """Open the notebook and wait until its kernel is idle (the status bar says so)."""
        self.page.goto(f"{lab.url}/lab/tree/{path}?token={lab.token}")
        self.cells.first.wait_for(timeout=90_000)
        self.page.locator(".jp-StatusBar-Item", has_text="| Idle").wait_for(timeout=90_000)

    def type_into(self, index: int, text: str) -> None:
        """Select everything in the cell's editor and type the new code over it."""
        self.cells.nth(index).locator(".cm-content").click()
        self.page.keyboard.press("Control+a")
        self.page.keyboard.insert_text(text)

    def run(self, index: int) -> None:
        """Run one cell in place (Ctrl+Enter), as a learner does."""
        self.cells.nth(index).locator(".cm-content").click()
        self.page.keyboard.press("Control+Enter")

    def run_all_from_menu(self) -> None:
        """JupyterLab's own Run > Run All Cells, which stops at the first cell that ends in an error."""
        self.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        self.page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()

    def save(self) -> None:
        """Ctrl+S, so that the next test's page load meets no unsaved changes."""
        self.page.locator(".jp-Notebook .jp-CodeCell .cm-content").first.click()
        self.page.keyboard.press("Control+s")
        self.page.locator(".jp-mod-dirty").wait_for(state="detached", timeout=30_000)

    def output(self, index: int):
        return self.cells.nth(index).locator(".jp-OutputArea")

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
        if show is not None:
            show.scroll_into_view_if_needed()
        path = self.shots / f"{name}.png"
        self.page.screenshot(path=str(path))
        return path


@pytest.fixture(scope="module")
def shots() -> Path:
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    return ARTIFACTS


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
    expect(summary).to_contain_text("✗ backward_accumulates")
    expect(summary).to_contain_text("Points as nbgrader will score them")
    expect(notebook.page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")).to_have_count(0)
    expect(notebook.cells.nth(exercise.check).locator(".autograder-check")).to_contain_text("✗ backward_accumulates")
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
    notebook.close_dialog()

    notebook.type_into(exercise.stub, exercise.solutions[exercise.stub])
    notebook.run(exercise.stub)
    notebook.run(exercise.check)
    expect(out).to_contain_text(f"✓ {TARGET_CHECK}", timeout=60_000)
    dialog = notebook.validate()
    expect(dialog).to_contain_text("Success! Your notebook passes all the tests.")
    notebook.shot("4-validate-succeeds")
