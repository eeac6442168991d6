"""The workbook with nothing installed: `./workbook lite --local-pyodide`'s site in Debian's Chromium, offline.

Chromium and the site's static server run in a network namespace of their own with nothing but a loopback, so any
request that would leave the machine fails (and fails the test). In each of the six notebooks the Pyodide kernel
starts, Run All of the untouched notebook reaches the summary, a classic mistake gets its ✗ diagnosis while every
other check passes, and the fix gets its ✓. Screenshots go to test-artifacts/browser/lite/.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from browser_support import (
    NOTEBOOKS,
    ROOT,
    Console,
    Notebook,
    artifacts,
    browser,
    missing,
    offline_chromium,
    require_chromium,
    shot,
    workbook,
)
from lab_server import free_port

from autograder.aids.plots import NO_MATPLOTLIB


def without_our_venv() -> dict[str, str]:
    """This environment, but for the venv the tests run in (./workbook lite sets up a venv of its own)."""
    ours = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "WORKBOOK_VENV", "PYTHONPATH"}}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != ours)
    return env


pytestmark = [pytest.mark.browser, pytest.mark.slow]
KERNEL_START = 180_000  # ms; about 25 s on 2 idle cores, far more while other tests run


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`./workbook lite --local-pyodide`, built (with the network) into a temporary folder."""
    require_chromium()
    if not shutil.which("npm"):
        missing("npm is not installed (apt-get install npm; ./workbook test installs it when CI=true)")
    out = tmp_path_factory.mktemp("lite") / "site"
    # as the README says, in the checkout's own build/lite-venv (created on first use)
    done = subprocess.run(["bash", ROOT / "workbook", "lite", "--local-pyodide", "--output", out],
                          capture_output=True, text=True, timeout=1200, env=without_our_venv())
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.fixture
def offline(site: Path, tmp_path: Path):
    """Chromium (a fresh profile) and the site's server in a network namespace of their own; the page, its console."""
    folder = tmp_path
    port = free_port()
    with browser(folder / "profile", offline_chromium(folder, site, port)) as context:
        page = context.new_page()
        console = Console()
        console.watch(page)
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):  # the server starts beside Chromium
            try:
                page.goto(f"{base}/jupyter-lite.json")
                break
            except Exception:
                time.sleep(0.2)
        console.take()
        yield page, console, base, folder / "server.log"


@pytest.fixture(scope="module")
def shots() -> Path:
    return artifacts("lite")


def test_the_site_is_static_and_its_kernel_comes_from_the_site_itself(site: Path):
    import json

    config = json.loads((site / "jupyter-lite.json").read_text())["jupyter-config-data"]
    kernel = config["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
    assert kernel["pyodideUrl"] == "./static/pyodide/pyodide.mjs"
    assert kernel["disablePyPIFallback"] is True
    lock = json.loads((site / "static" / "pyodide-lock" / "pyodide-lock.json").read_text())
    assert lock["packages"]["autograd-workbook"]["imports"] == ["autograder"]
    for entry in lock["packages"].values():  # every file the lock names is on the site
        assert (site / "static" / "pyodide-lock" / entry["file_name"]).is_file(), entry["file_name"]
    assert sorted(p.stem for p in (site / "files" / "workbook").glob("*.ipynb")) == NOTEBOOKS


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_each_notebook_in_the_browser_stub_then_mistake_then_fixed(name: str, offline, shots: Path):
    from playwright.sync_api import expect

    page, console, base, server_log = offline
    book = workbook(name)
    nb = Notebook(page)
    nb.open(f"{base}/lab/index.html?path=workbook/{name}.ipynb", timeout=KERNEL_START)
    summary = nb.last_output()
    assert not nb.dirty(), "the notebook shows as modified as soon as it opens"

    nb.run_all_from_menu()  # untouched: every check says not done yet, and the summary is reached
    expect(summary).to_contain_text("Not done yet: ", timeout=KERNEL_START)
    shot(page, shots / f"{name}-0-stub-run-all.png", show=summary, expect=("Points as nbgrader will score them",),
         console=console)

    for index, solution in book.solutions.items():  # everything solved, but one classic mistake
        nb.type_into(index, book.mistake if index == book.mistake_cell else solution)
    nb.run_all_from_menu()
    expect(summary).to_contain_text("Failing: ", timeout=KERNEL_START)
    wrong = nb.output(book.check)
    expect(wrong).to_contain_text("✗")
    expect(wrong).to_contain_text(book.sentence)
    for i in book.checks:
        if i < book.check:  # every check above the mistake passes in the browser's Python too
            expect(nb.output(i)).to_contain_text("✓")
            expect(nb.output(i)).not_to_contain_text("✗")
    shot(page, shots / f"{name}-1-mistake.png", show=wrong, expect=("✗", book.sentence), console=console)
    if name in ("01_derivatives", "06_neural_net"):  # Pyodide's core has no matplotlib: one line instead
        expect(page.locator(".jp-OutputArea", has_text=NO_MATPLOTLIB).first).to_be_visible()

    nb.type_into(book.mistake_cell, book.solutions[book.mistake_cell])
    nb.run(book.mistake_cell)
    nb.run(book.check)
    right = nb.output(book.check)
    expect(right).not_to_contain_text("✗", timeout=120_000)
    expect(right).to_contain_text("✓")
    shot(page, shots / f"{name}-2-fixed.png", show=right, expect=("✓",), console=console)
    if name == "01_derivatives":  # no timer signal in Pyodide: the check's time limit counts instead
        first = min(book.solutions)
        nb.type_into(first, "def numerical_derivative(f, x, h=1e-5):\n    while True:\n        pass")
        nb.run(first)
        nb.run(first + 1)
        expect(nb.output(first + 1)).to_contain_text("did not finish within", timeout=120_000)
        shot(page, shots / f"{name}-3-endless-loop-stopped.png", show=nb.output(first + 1), console=console)
    outside = [ln for ln in server_log.read_text().splitlines() if '" 404 ' in ln]
    assert not outside, f"the site lacks files the page asked for: {outside}"
