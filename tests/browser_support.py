"""What every Chromium test shares: Debian's Chromium driven by Playwright, a learner's actions in a notebook, console
errors collected, screenshots checked, JupyterLab on 127.0.0.1, and a static site served with no network at all."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest
from lab_server import free_port, stop, wait_until_served

from autograder.checks.messages import hint
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
SOURCE = ROOT / "solutions" / "workbook"
RELEASE = ROOT / "notebooks" / "workbook"
IN_CI = os.environ.get("CI") == "true"
SOLUTION_MARKER = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")
NOTEBOOKS = sorted(p.stem for p in RELEASE.glob("*.ipynb"))


def missing(reason: str) -> None:
    """In CI a missing piece of a browser test is a failure; elsewhere the test is skipped with the reason."""
    if IN_CI:
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


def require_chromium() -> Path:
    """Debian's Chromium and Playwright, checked before anything is started."""
    if not CHROMIUM.exists():
        missing(f"Debian's chromium is not installed at {CHROMIUM} (apt-get install chromium; "
                "./workbook test installs it when CI=true)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing("playwright is not installed (it is in the dev extra: pip install -e '.[dev]')")
    return CHROMIUM


def artifacts(name: str) -> Path:
    """A fresh folder of screenshots for one test module, under test-artifacts/browser/ (git-ignored)."""
    folder = ARTIFACTS / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


# The pictures the docs site and the README show, each taken by the browser test that names it here (so none is drawn
# by hand): every run writes them to test-artifacts/browser/docs/; `python scripts/docs_screenshots.py` runs these
# tests with WORKBOOK_DOCS_SCREENSHOTS=1, which also writes each, made small, into docs/_static/screens/.
DOCS_SCREENS = ROOT / "docs" / "_static" / "screens"
DOCS_PICTURES = {
    "check-cell.png": "tests/test_browser_lab.py::test_each_notebook_untouched_then_a_mistake_then_solved_in_a_learners_lab",
    "summary-untouched.png": "tests/test_browser_lab.py::test_each_notebook_untouched_then_a_mistake_then_solved_in_a_learners_lab",
    "summary-solved.png": "tests/test_browser_lab.py::test_each_notebook_untouched_then_a_mistake_then_solved_in_a_learners_lab",
    "validate-fails.png": "tests/test_browser_lab.py::test_learner_fills_stub_sees_check_and_mistake_then_validates",
}


def docs_shot(locator, name: str) -> Path:
    """Screenshot one element for the docs (`name` a key of DOCS_PICTURES); into docs/ too when asked to."""
    assert name in DOCS_PICTURES, f"{name} is not one of the docs' pictures (DOCS_PICTURES)"
    path = ARTIFACTS / "docs" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    locator.scroll_into_view_if_needed()
    locator.screenshot(path=str(path))
    if os.environ.get("WORKBOOK_DOCS_SCREENSHOTS") == "1":
        small_png(path, DOCS_SCREENS / name)
    return path


def small_png(source: Path, target: Path, colours: int = 64) -> None:
    """The screenshot with its colours reduced (text and flat colours survive; a fraction of the bytes)."""
    from PIL import Image

    target.parent.mkdir(parents=True, exist_ok=True)
    with Image.open(source) as image:
        image.convert("RGB").quantize(colors=colours, method=Image.Quantize.MEDIANCUT).save(target, optimize=True)


# ---------------------------------------------------------------- the browser


@dataclass
class Console:
    """Every error a page reports: console.error lines, uncaught exceptions, requests that failed."""

    errors: list[str] = field(default_factory=list)

    def watch(self, page) -> None:
        page.on("console", lambda m: m.type == "error" and self.errors.append(f"console: {m.text[:500]}"))
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        # a request the browser cancels itself (a page left while JupyterLab polls) is no error
        page.on("requestfailed", lambda r: "ERR_ABORTED" not in (r.failure or "") and
                self.errors.append(f"request failed: {r.url[:200]} ({r.failure})"))
        page.on("response", lambda r: r.status >= 400 and self.errors.append(f"HTTP {r.status}: {r.url[:200]}"))

    def take(self, forgiven: tuple[str, ...] = ()) -> list[str]:
        """The errors since the last call, but those that start with one of `forgiven`."""
        errors, self.errors[:] = list(self.errors), []
        return [e for e in errors if not e.startswith(forgiven)]


@contextlib.contextmanager
def browser(profile: Path, executable: Path | str = CHROMIUM) -> Iterator:
    """A Chromium browser context with a fresh profile (Playwright's sync API)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile), executable_path=str(executable), headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1400, "height": 1000},
        )
        try:
            yield context
        finally:
            context.close()


def shot(page, path: Path, show=None, expect: tuple[str, ...] = (), console: Console | None = None,
         forgiven: tuple[str, ...] = ()) -> Path:
    """Screenshot the page with `show` scrolled into view; the texts `expect` must be visible in it, and (with
    `console`) the page must have reported no error since the last screenshot."""
    from playwright.sync_api import expect as expect_that

    if show is not None:
        show.scroll_into_view_if_needed()
    page.screenshot(path=str(path))
    target = show if show is not None else page.locator("body")
    for text in expect:
        expect_that(target).to_contain_text(text)
    if console is not None:
        errors = console.take(forgiven)
        assert not errors, f"{path.name}: the page reported errors:\n" + "\n".join(errors)
    return path


# ---------------------------------------------------------------- a learner's actions in a notebook


class Notebook:
    """What a learner does with a notebook in JupyterLab (or JupyterLite), through the page."""

    def __init__(self, page) -> None:
        self.page = page
        # the notebook in the current tab (others restored from the workspace stay in the page, hidden)
        self.cells = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")

    def open(self, url: str, timeout: float = 90_000) -> None:
        """Open the notebook and wait until its kernel is idle (the status bar says so)."""
        self.page.goto(url)
        self.cells.first.wait_for(timeout=timeout)
        self.page.locator(".jp-StatusBar-Item", has_text=re.compile(r"\| Idle")).wait_for(timeout=timeout)
        # Jupyter's news prompt is not dismissed here: the learner's Lab and the site turn it off, and a test that
        # clicked it away would never see it come back

    def dirty(self) -> bool:
        """Whether JupyterLab marks the notebook as modified (its tab's dot)."""
        return self.page.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty").count() > 0

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
        """Ctrl+S, so that the next page load meets no unsaved changes."""
        self.page.locator(".jp-Notebook .jp-CodeCell .cm-content").first.click()
        self.page.keyboard.press("Control+s")
        self.page.locator(".jp-mod-dirty").wait_for(state="detached", timeout=30_000)

    def output(self, index: int):
        return self.cells.nth(index).locator(".jp-OutputArea")

    def last_output(self):
        """The output of the summary cell (the notebook's last `summary(...)` call)."""
        return self.cells.filter(has=self.page.locator(".jp-InputArea", has_text="summary(")).last.locator(".jp-OutputArea")


# ---------------------------------------------------------------- the notebooks' exercises


def filled(source: str) -> str:
    """What a learner who solved the cell has: the instructor's source without the solution markers."""
    return "\n".join(ln for ln in source.splitlines() if not SOLUTION_MARKER.match(ln))


@dataclass
class Workbook:
    """One learner notebook: its solutions by cell index, its check cells, and one classic mistake to type."""

    name: str
    solutions: dict[int, str]  # learner cell index -> the stub cell's source with the solution filled in
    checks: list[int]  # every check cell
    mistake_cell: int  # the stub that gets the mistake (the notebook's last exercise with a catalogued mistake)
    mistake: str  # that cell's source with the mistake
    check: int  # the check cell right under it
    sentence: str  # the start of the misconception's sentence the check must show


# A notebook's mistake, where the last one by cell is not the one to show: in 04, `__rsub__` written the wrong way
# round, whose check cell shows neg_sub_backward's ✓ beside rsub_backward's ✗ and its sentence (the README's picture;
# the last mistake by cell, tanh_bricks_wrong_formula, is diagnosed by its recovered formula, not the sentence).
MISTAKE_OF = {"04_bricks": "rsub_reversed"}


def workbook(name: str) -> Workbook:
    """The learner notebook `name` paired with its nbgrader source by grade_id, and its mistake."""
    from notebook_corpus import MISTAKES

    lnb = nbformat.read(RELEASE / f"{name}.ipynb", as_version=4)
    snb = nbformat.read(SOURCE / f"{name}.ipynb", as_version=4)
    by_id = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in snb.cells}
    index = {c.metadata.get("nbgrader", {}).get("grade_id"): i for i, c in enumerate(lnb.cells)}
    solutions = {i: filled(by_id[c.metadata.nbgrader["grade_id"]].source) for i, c in enumerate(lnb.cells)
                 if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")}
    checks = [i for i, c in enumerate(lnb.cells) if c.cell_type == "code" and calls_check(c.source)]
    bugs = [v for v in MISTAKES.values() if v.notebook == name and v.cell in index]
    assert bugs, f"{name}: the corpus has no mistake for it"
    last = MISTAKES[MISTAKE_OF[name]] if name in MISTAKE_OF else max(bugs, key=lambda v: index[v.cell])
    cell = index[last.cell]
    wrong = solutions[cell]
    for old, new in last.subs:
        assert wrong.count(old) == 1, (name, last, old)
        wrong = wrong.replace(old, new)
    sentence = " ".join(hint(last.misconception).split("{")[0].split()[:6])
    check = next(i for i in checks if i > cell)
    return Workbook(name, solutions, checks, cell, wrong, check, sentence)


# ---------------------------------------------------------------- servers


@dataclass
class Lab:
    url: str
    token: str
    root: Path

    def notebook_url(self, path: str) -> str:
        """The notebook alone in the Lab (`reset`: no tab of an earlier test restored from the workspace)."""
        return f"{self.url}/lab/tree/{path}?reset&token={self.token}"


def lab_env(home: Path) -> dict[str, str]:
    """A learner's Jupyter environment in throw-away folders, with exactly the learner's Lab configuration."""
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
    return env


@contextlib.contextmanager
def jupyter_lab(root: Path, home: Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> Iterator[Lab]:
    """`jupyter lab` from this environment on 127.0.0.1, a free port and a token, serving `root`."""
    home.mkdir(parents=True, exist_ok=True)
    # Every cell in the page (no windowing), so that a test can reach any cell by its index.
    tracker = home / "lab-settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True, exist_ok=True)
    (tracker / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    port, token = free_port(), secrets.token_hex(16)
    cmd = [str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser",
           "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = home / "lab.log"
    with log.open("w") as out:
        # cwd: nbgrader's handlers read an nbgrader_config.py from the server's working folder.
        proc = subprocess.Popen(cmd, cwd=cwd or root, env=env or lab_env(home), stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_served(f"{url}/api/status?token={token}", proc, log)
        yield Lab(url, token, root)
    finally:
        stop(proc)


OFFLINE_SERVER = '''
import fcntl, functools, http.server, socket, struct, sys
site, port, log = sys.argv[1], int(sys.argv[2]), open(sys.argv[3], "w", buffering=1)
with socket.socket() as s:  # bring up the loopback of this new network namespace: its only interface
    flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, struct.pack("16sH", b"lo", 0)))[1]
    fcntl.ioctl(s, 0x8914, struct.pack("16sH", b"lo", flags | 1))
class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        log.write(format % args + "\\n")
http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(Handler, directory=site)).serve_forever()
'''


def offline_chromium(folder: Path, site: Path, port: int) -> Path:
    """An executable that starts Chromium, and a static server of `site` on 127.0.0.1:`port`, together in a new
    network namespace with nothing but its loopback: any request that would leave the machine fails.

    Playwright drives Chromium over a pipe, so the test itself keeps the machine's network."""
    if not shutil.which("unshare"):
        missing("unshare (util-linux) is needed for a network namespace of the test's own")
    (folder / "server.py").write_text(OFFLINE_SERVER)
    user = "" if os.geteuid() == 0 else "--map-root-user "
    script = folder / "chromium-offline"
    # a PID namespace too: when Chromium exits, the server goes with it
    script.write_text(
        "#!/bin/sh\n"
        f"exec unshare {user}--net --pid --fork --kill-child sh -c '"
        f"\"{sys.executable}\" \"{folder / 'server.py'}\" \"{site}\" {port} \"{folder / 'server.log'}\" & "
        f"exec \"{CHROMIUM}\" \"$@\"' chromium \"$@\"\n")
    script.chmod(0o755)
    return script


# ---------------------------------------------------------------- inert pages: a canary, a page server, what a page did


class Canary:
    """An HTTP server on 127.0.0.1 that records every request's path: nothing a learner wrote may ever reach it.
    With `folder`, it serves that folder's files too (a page served over http resolves `/\\host` as a browser does)."""

    def __init__(self, folder: Path | None = None) -> None:
        import http.server
        import threading

        self.requests: list[str] = []
        canary = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs) -> None:
                super().__init__(*args, directory=str(folder or ROOT / "nonexistent"), **kwargs)

            def do_GET(self) -> None:
                canary.requests.append(self.path)
                if folder is None:
                    self.send_response(204)
                    self.end_headers()
                else:
                    super().do_GET()

            do_POST = do_GET

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.host = self.url.split("://", 1)[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# What a page did, read by the browser itself: the attacks' flag (window.__pwned), every event-handler attribute,
# every URL attribute the browser resolves to a javascript: URL or to the canary's host, and the elements that have
# an id or name of the page's own anchors more than once.
AUDIT = """(canaryHost) => {
  const urlAttributes = ['src', 'href', 'srcset', 'poster', 'background', 'action', 'formaction', 'data', 'xlink:href'];
  const found = [];
  for (const el of document.querySelectorAll('*')) {
    for (const a of el.attributes) {
      if (a.name.startsWith('on')) found.push(`${el.tagName} ${a.name}`);
      if (!urlAttributes.includes(a.name)) continue;
      for (const part of a.value.split(',')) {
        let u;
        try { u = new URL(part.trim().split(/\\s+/)[0], document.baseURI); } catch (e) { continue; }
        if (u.protocol === 'javascript:' || u.host === canaryHost) found.push(`${el.tagName} ${a.name}=${a.value}`);
      }
    }
  }
  return {pwned: window.__pwned || null, found: found};
}"""

# The elements of `selector` (the grader's verdict) that another element covers at their centre, and how many were
# looked at: each is scrolled to the middle of the window, and the element there must be it or inside it.
COVERED = """(selector) => {
  const covered = [];
  let seen = 0;
  for (const el of document.querySelectorAll(selector)) {
    el.scrollIntoView({block: 'center', inline: 'center'});
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height) continue;
    seen += 1;
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    if (!hit || !(hit === el || el.contains(hit))) {
      const by = hit ? `<${hit.tagName.toLowerCase()} class="${hit.className}">: ${hit.textContent.slice(0, 60)}` : 'nothing';
      covered.push(`${selector} #${seen} covered by ${by}`);
    }
  }
  return {seen: seen, covered: covered};
}"""


# Every element of the page is pointed at and focused, as a reader moving through it would (a learner's handler on
# mouseover or focus would run then).
POINT_AT_EVERYTHING = """() => {
  for (const el of document.querySelectorAll('body *')) {
    for (const kind of ['mouseover', 'mouseenter', 'mousemove']) el.dispatchEvent(new MouseEvent(kind, {bubbles: true}));
    if (el.focus) el.focus();
  }
}"""


def what_the_page_did(page, canary: Canary, settle_ms: int = 1500) -> dict:
    """After load: point at and focus every element, wait for late handlers, then AUDIT the page."""
    page.evaluate(POINT_AT_EVERYTHING)
    page.wait_for_timeout(settle_ms)
    return page.evaluate(AUDIT, canary.host)


def verdict_uncovered(page, selector: str) -> dict:
    """COVERED for `selector` (the caller asserts `seen` > 0: a test that looked at nothing proves nothing)."""
    return page.evaluate(COVERED, selector)
