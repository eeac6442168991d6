"""A whole course on the project's JupyterHub (`./workbook hub`), through Chromium, as its three people live it.

As root: an instructor and two learners get real Unix accounts (unique names, removed afterwards), the hub runs on
127.0.0.1 with the trial's shared password, and every step is what a person does in the page. The instructor
generates and releases from the formgrader; each learner fetches from the Assignment List, types the solutions into
the notebook (one with a classic mistake, one with a peek at the grader's frames), validates and submits, the second
after the due date the instructor set in a Lab terminal; the instructor collects, runs `python -m autograder grade`
in the terminal, opens the flagged notebook in the formgrader and releases feedback; each learner fetches their own.
Then, as those Unix users, no learner can list or read the other's submission or feedback, and the gradebook's rows
are those plain `nbgrader autograde` gives the same submissions. Screenshots in test-artifacts/hub/.

The hub's accounts run this checkout (hub/, the editable autograder/, build/hub-venv). Where a folder above it is
closed to them (a clone in /root, mode 0700), or the checkout itself is (a clone in `mktemp -d`), the hub, every
server it starts and the test's checks as those users run in a private mount namespace in which that folder is a
tmpfs holding only the way to the checkout, bound at its own path (tests/support_mounts.py): the same files, nothing
made writable. A real course is installed where every account
can enter (`./workbook hub` refuses a closed checkout and says so).
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import os
import pwd
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from browser_support import CHROMIUM, CHROMIUM_FLAGS, ROOT, Notebook, missing, require_chromium, shot, workbook
from lab_server import free_port, stop, wait_until_served
from support_mounts import drop, reachable

pytestmark = [pytest.mark.slow, pytest.mark.browser]

NOTEBOOK = "01_derivatives"  # two exercises: the course's whole flow at the smallest typing cost
ASSIGNMENT = "workbook"
COURSE_ID = "autograd-workbook"
HUB_VENV = ROOT / "build" / "hub-venv"
ARTIFACTS = ROOT / "test-artifacts" / "hub"
# What a curious learner might paste into a solution cell: it changes no answer, and the grader flags it.
PEEK = "import sys\n_caller = sys._getframe(0)\n"


def require_hub() -> None:
    """Root (Unix accounts, setuid servers), useradd, npm, user namespaces for the grader's sandbox, Chromium."""
    if os.geteuid() != 0:
        missing("the hub test creates Unix accounts and runs JupyterHub, which starts each user's server as that user: "
                "it needs root")
    for tool in ("useradd", "userdel", "npm", "bwrap"):
        if not shutil.which(tool):
            missing(f"{tool} is not installed (./workbook test installs npm and bubblewrap when CI=true)")
    nobody = pwd.getpwnam("nobody")
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "true"], preexec_fn=_become(nobody),
                           capture_output=True, text=True)
    if probe.returncode != 0:
        missing("unprivileged user namespaces are off, and the instructor's `grade` sandbox needs them "
                f"(unshare --user as nobody: {probe.stderr.strip()})")
    require_chromium()
    # the hub's own environment (build/hub-venv, from a Python every account can run) and its proxy from npm
    done = subprocess.run([str(ROOT / "workbook"), "hub", "--install"], cwd=ROOT, capture_output=True, text=True,
                          timeout=1200)
    assert done.returncode == 0, f"./workbook hub --install failed:\n{done.stderr[-3000:]}"


def _become(user: pwd.struct_passwd):
    def preexec() -> None:
        os.setgroups([])
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)
    return preexec


def as_user(name: str, code: str) -> str:
    """Run Python `code` as the Unix user `name` (the hub's Python); its stdout."""
    user = pwd.getpwnam(name)
    argv = reachable([*drop(user.pw_uid, user.pw_gid), str(HUB_VENV / "bin" / "python"), "-c", code], [ROOT])
    done = subprocess.run(argv, cwd="/", env={"HOME": user.pw_dir, "PATH": "/usr/bin:/bin"}, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@dataclass
class Hub:
    url: str
    password: str
    instructor: str
    learners: tuple[str, str]
    exchange: Path
    log: Path

    def home(self, user: str) -> Path:
        return Path(pwd.getpwnam(user).pw_dir)

    @property
    def checkout(self) -> Path:
        """The instructor's copy of the course (what `./workbook hub --create-users` made)."""
        return self.home(self.instructor) / "autograd-workbook"


def _end_processes_of(uid: int) -> None:
    """Whatever a test account still runs (its server's kernels), by process id, before the account goes."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    os.kill(int(entry.name), 9)


@pytest.fixture(scope="module")
def hub() -> Iterator[Hub]:
    require_hub()
    tag = secrets.token_hex(3)
    instructor, learners = f"wbt{tag}", (f"wba{tag}", f"wbb{tag}")
    base = Path(tempfile.mkdtemp(prefix="workbook-hub-"))
    base.chmod(0o755)  # the exchange inside it is every account's
    port, password = free_port(), secrets.token_urlsafe(12)
    env = {**os.environ, "WORKBOOK_HUB_INSTRUCTOR": instructor, "WORKBOOK_HUB_LEARNERS": " ".join(learners),
           "WORKBOOK_HUB_PORT": str(port), "WORKBOOK_HUB_API_PORT": str(free_port()),
           "WORKBOOK_HUB_PROXY_API_PORT": str(free_port()), "WORKBOOK_HUB_EXCHANGE": str(base / "exchange"),
           "WORKBOOK_HUB_STATE": str(base / "state"), "WORKBOOK_HUB_PASSWORD": password, "WORKBOOK_HUB_AUTH": "shared"}
    env.pop("CI", None)
    log = base / "hub.log"
    with log.open("w") as out:
        # the hub and every server it starts (as its users) in the mount namespace that opens a closed checkout
        proc = subprocess.Popen(reachable([str(ROOT / "workbook"), "hub", "--create-users"], [ROOT]), cwd=ROOT,
                                env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_served(f"{url}/hub/api", proc, log, timeout=180, what="./workbook hub")
        made = Hub(url, password, instructor, learners, base / "exchange", log)
        # this course hands out notebook 01 only (the copy holds the whole workbook's sources)
        for other in (made.checkout / "solutions" / ASSIGNMENT).glob("*.ipynb"):
            if other.stem != NOTEBOOK:
                other.unlink()
        yield made
    finally:
        stop(proc, timeout=60)
        for user in (instructor, *learners):
            with contextlib.suppress(KeyError):
                _end_processes_of(pwd.getpwnam(user).pw_uid)
                subprocess.run(["userdel", "--remove", user], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


# ---------------------------------------------------------------- what a person does in the hub's pages


class Person:
    """One account's browser: log in, the Lab, the formgrader, the Assignment List, a notebook, a terminal."""

    def __init__(self, hub: Hub, user: str, page, folder: Path) -> None:
        self.hub, self.user, self.page, self.folder = hub, user, page, folder
        self.lab = f"{hub.url}/user/{user}/lab"
        self.term = None  # the Lab tab with a terminal, once opened

    def shot(self, name: str, expect: tuple[str, ...] = (), show=None) -> Path:
        return shot(self.page, self.folder / f"{name}.png", show=show, expect=expect)

    def log_in(self) -> None:
        """The hub's login form with the trial's shared password; the hub starts this user's server."""
        self.page.goto(f"{self.hub.url}/hub/login")
        self.page.fill("#username_input", self.user)
        self.page.fill("#password_input", self.hub.password)
        self.page.click("#login_submit")
        self.page.wait_for_url(f"**/user/{self.user}/lab**", timeout=180_000)
        self.page.locator(".jp-LauncherCard").first.wait_for(timeout=120_000)

    def menu(self, name: str) -> list[str]:
        """The items of a JupyterLab menu, which stays open."""
        self.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{name}$")).click()
        items = self.page.locator(".lm-Menu-content .lm-Menu-itemLabel")
        items.first.wait_for()
        return [t.strip() for t in items.all_inner_texts() if t.strip()]

    # ---- the instructor's tools

    def formgrader(self, view: str = "manage_assignments") -> None:
        self.page.goto(f"{self.hub.url}/user/{self.user}/formgrader/{view}")

    def assignment_action(self, column: str, success: str) -> str:
        """Click one of Manage Assignments' buttons on the workbook's row; the success dialog's text."""
        row = self.page.locator("tr", has=self.page.locator("td.name", has_text=ASSIGNMENT))
        row.locator(f"td.{column} a").click()
        modal = self.page.locator("#success-modal")
        modal.wait_for(timeout=180_000)
        text = modal.inner_text()
        assert success in text, text
        modal.locator(".modal-footer button").first.click()
        modal.wait_for(state="detached")
        return text

    def terminal(self, command: str, name: str, timeout: float = 600) -> str:
        """Type a command into a Lab terminal (opened from the Launcher, once); what it printed, once it succeeded."""
        if self.term is None:  # a browser tab of its own, beside the formgrader's
            self.term = self.page.context.new_page()
            self.term.goto(f"{self.lab}?reset")
            self.term.locator(".jp-LauncherCard", has_text="Terminal").click()
            self.term.locator(".jp-Terminal .xterm").wait_for(timeout=60_000)
        home = self.hub.home(self.user)
        log, status = home / f"{name}.log", home / f"{name}.status"
        self.term.locator(".jp-Terminal .xterm").click()
        # the output stays on screen (tee) and in a file the test reads; the exit status in another
        self.term.keyboard.type(f"{command} 2>&1 | tee ~/{name}.log; echo ${{PIPESTATUS[0]}} >~/{name}.status")
        self.term.keyboard.press("Enter")
        deadline = time.monotonic() + timeout
        while not status.is_file() or not status.read_text().strip():
            if time.monotonic() > deadline:
                self.term.screenshot(path=str(self.folder / f"terminal-{name}-timeout.png"))
                pytest.fail(f"{command!r} did not finish in {timeout:.0f} s", pytrace=False)
            time.sleep(0.5)
        out = log.read_text()
        assert status.read_text().strip() == "0", f"{command!r} failed:\n{out[-3000:]}"
        return out

    # ---- the learner's

    def assignment_list(self):
        """Nbgrader > Assignment List, as a tab in the Lab."""
        self.menu("Nbgrader")
        self.page.locator(".lm-Menu-itemLabel", has_text=re.compile("^Assignment List$")).click()
        panel = self.page.locator("#released_assignments_list")
        panel.wait_for(timeout=60_000)
        return self.page

    def list_button(self, section: str, label: str):
        row = self.page.locator(f"#{section}_assignments_list .list_item", has_text=ASSIGNMENT)
        row.first.wait_for(timeout=120_000)
        return row.locator("button", has_text=re.compile(f"^{label}$"))


@contextlib.contextmanager
def chromium() -> Iterator:
    """One Debian Chromium (Playwright's sync API); each person gets a context of their own (their own cookies)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        running = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS)
        try:
            yield running
        finally:
            running.close()


def person(hub: Hub, user: str, chrome, folder: Path) -> Person:
    return Person(hub, user, chrome.new_context(viewport={"width": 1400, "height": 1000}).new_page(), folder)


def solve(who: Person, tmp: Path, wrong: bool, peek: bool) -> Notebook:
    """Open the fetched notebook, type every solution (one with the mistake, or with the peek) and save."""
    spec = workbook(NOTEBOOK)
    nb = Notebook(who.page)
    nb.open(f"{who.lab}/tree/{ASSIGNMENT}/{NOTEBOOK}.ipynb")
    for index, source in spec.solutions.items():
        if wrong and index == spec.mistake_cell:
            source = spec.mistake
        if peek and index == min(spec.solutions):
            source = PEEK + source
        nb.type_into(index, source)
    nb.save()
    return nb


def validate(who: Person) -> str:
    """nbgrader's Validate button in the notebook's toolbar; the dialog's text, once closed."""
    who.page.get_by_role("button", name="Validate").click()
    dialog = who.page.locator(".jp-Dialog").filter(has_text="Validation Results")
    dialog.wait_for(timeout=180_000)
    text = dialog.inner_text()
    return text


def close_dialog(who: Person) -> None:
    who.page.locator(".jp-Dialog").get_by_role("button", name="Ok").click()
    who.page.locator(".jp-Dialog").wait_for(state="detached")


def page_text(page, wanted: str, timeout: float = 60) -> str:
    """The text of the page or of the frame in it that shows `wanted` (the formgrader draws a notebook in one)."""
    deadline = time.monotonic() + timeout
    while True:
        for frame in page.frames:
            with contextlib.suppress(Exception):
                text = frame.locator("body").inner_text(timeout=2_000)
                if wanted in text:
                    return text
        assert time.monotonic() < deadline, f"no frame of {page.url} shows {wanted!r}"
        time.sleep(0.5)


# ---------------------------------------------------------------- the course


def gradebook_rows(db: Path, students: tuple[str, ...]) -> dict[tuple[str, str], dict]:
    """(student, notebook) -> lateness and every grade cell's score, as a gradebook holds them."""
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(f"sqlite:///{db}") as gb:
        for s in students:
            sub = gb.find_submission(ASSIGNMENT, s)
            for nb in sub.notebooks:
                out[(s, nb.name)] = {"late": sub.total_seconds_late > 0, "score": nb.score,
                                     "grades": {g.name: g.auto_score for g in nb.grades}}
    return out


def plain_nbgrader_rows(hub: Hub, tmp: Path, due: str) -> dict[tuple[str, str], dict]:
    """The same submissions graded by plain `nbgrader autograde` in a copy of the instructor's course."""
    copy = tmp / "plain"
    shutil.copytree(hub.checkout, copy, ignore=shutil.ignore_patterns("course"))
    (copy / "course").mkdir()
    shutil.copytree(hub.checkout / "course" / "submitted", copy / "course" / "submitted")
    env = {**os.environ, "AUTOGRADER_COURSE_DIR": str(copy / "course")}
    env["PATH"] = f"{Path(os.sys.executable).parent}{os.pathsep}{env['PATH']}"
    env.pop("AUTOGRADER_EXCHANGE", None)
    for args in (["generate_assignment", ASSIGNMENT, "--force"], ["db", "assignment", "add", ASSIGNMENT, f"--duedate={due}"],
                 ["autograde", ASSIGNMENT]):
        done = subprocess.run(["nbgrader", *args], cwd=copy, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"nbgrader {args}: {done.stderr[-3000:]}"
    return gradebook_rows(copy / "course" / "gradebook.db", hub.learners)


def test_a_course_on_the_hub_from_release_to_feedback(hub: Hub, tmp_path: Path):
    from playwright.sync_api import expect

    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    ontime, late = hub.learners
    course = hub.checkout / "course"

    with chromium() as chrome:
        teacher = person(hub, hub.instructor, chrome, ARTIFACTS)
        teacher.log_in()
        menu = teacher.menu("Nbgrader")
        assert {"Assignment List", "Formgrader", "Create assignment"} <= set(menu), menu
        teacher.page.keyboard.press("Escape")
        teacher.shot("01-instructor-lab", expect=("Nbgrader",))

        # the instructor: generate the learners' version and release it, from the formgrader
        teacher.formgrader()
        teacher.page.locator("td.name", has_text=ASSIGNMENT).wait_for(timeout=60_000)
        teacher.assignment_action("assign", "Successfully created the student version")
        teacher.assignment_action("release", "Successfully released")
        expect(teacher.page.locator("td.status")).to_contain_text("released")
        teacher.shot("02-instructor-released", expect=("released",))
        assert (hub.exchange / COURSE_ID / "outbound" / ASSIGNMENT / f"{NOTEBOOK}.ipynb").is_file()

        people: dict[str, Person] = {}
        # the learners: log in, see the Assignment List and Validate but no instructor tool, fetch, solve, submit
        for user, wrong in ((ontime, False), (late, True)):
            who = people[user] = person(hub, user, chrome, ARTIFACTS)
            who.log_in()
            menu = who.menu("Nbgrader")
            assert "Assignment List" in menu and not {"Formgrader", "Create assignment"} & set(menu), menu
            who.page.keyboard.press("Escape")
            assert who.page.request.get(f"{hub.url}/user/{user}/formgrader").status == 404  # nor its server side
            who.assignment_list()
            who.list_button("released", "Fetch").click()
            who.list_button("fetched", "Submit").wait_for(timeout=120_000)
            who.shot(f"03-{user}-fetched", expect=(ASSIGNMENT,))
            assert (who.hub.home(user) / ASSIGNMENT / f"{NOTEBOOK}.ipynb").is_file()
            solve(who, tmp_path, wrong=wrong, peek=not wrong)
            result = validate(who)
            spec = workbook(NOTEBOOK)
            if wrong:
                assert spec.sentence in result, result
            else:
                assert "Success! Your notebook passes all the tests." in result, result
            who.shot(f"04-{user}-validated", expect=("Validation Results",))
            close_dialog(who)
            if user == late:  # the instructor sets the due date (README step 3) between the two submissions
                due = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
                teacher.terminal(f"cd ~/autograd-workbook && nbgrader db assignment add {ASSIGNMENT} --duedate='{due}'",
                                 "due-date")
                time.sleep(1.5)
            who.assignment_list()
            who.list_button("fetched", "Submit").click()
            who.list_button("submitted", "Fetch Feedback").wait_for(timeout=120_000)
            who.shot(f"05-{user}-submitted", expect=("Fetch Feedback",))

        # the instructor: collect, grade in a terminal, review the flagged notebook, feedback
        teacher.formgrader()
        teacher.page.locator("td.name", has_text=ASSIGNMENT).wait_for(timeout=60_000)
        teacher.assignment_action("collect", "Successfully collected")
        assert {p.name for p in (course / "submitted").iterdir()} == set(hub.learners)
        printed = teacher.terminal(f"python -m autograder grade {ASSIGNMENT} --no-progress --csv", "grade")
        teacher.term.screenshot(path=str(ARTIFACTS / "06-instructor-graded.png"))
        assert f"wrote {course / ASSIGNMENT}-summary.csv" in printed, printed
        assert re.search(r"sandbox: bubblewrap.*unprivileged", printed), printed  # graded as the instructor, no root
        with (course / f"{ASSIGNMENT}-summary.csv").open() as f:
            graded = {row["student_id"]: row for row in csv.DictReader(f)}
        assert graded[ontime]["flags"].startswith("introspection by learner code: sys._getframe"), graded
        assert not graded[late]["flags"] and graded[late]["reason"].startswith("late by"), graded

        teacher.formgrader(f"manage_students/{ontime}/{ASSIGNMENT}")
        flagged = teacher.page.locator("tr", has_text=NOTEBOOK).locator("td.flagged .glyphicon-flag")
        flagged.wait_for(timeout=60_000)  # the Flagged? column, which the grader ticked
        teacher.shot(f"07-instructor-{ontime}-flagged", expect=(NOTEBOOK, "Flagged?"))
        teacher.page.locator("a", has_text=NOTEBOOK).first.click()
        teacher.page.wait_for_url("**/formgrader/submissions/**", timeout=60_000)
        review = page_text(teacher.page, "Flagged for review")
        assert "⚠ Flagged for review" in review and "sys._getframe" in review, review[:3000]
        teacher.shot(f"08-instructor-reviews-{ontime}")

        teacher.formgrader()
        teacher.page.locator("td.name", has_text=ASSIGNMENT).wait_for(timeout=60_000)
        teacher.assignment_action("generate-feedback", "Successfully generated feedback")
        teacher.assignment_action("release-feedback", "Successfully released feedback")
        teacher.shot("09-instructor-released-feedback")

        # each learner fetches their own feedback
        for user in hub.learners:
            who = people[user]
            who.page.goto(who.lab)
            who.assignment_list()
            who.list_button("submitted", "Fetch Feedback").click()
            who.page.locator("#submitted_assignments_list", has_text="view feedback").wait_for(timeout=120_000)
            who.shot(f"10-{user}-feedback", expect=("view feedback",))
            pages = list((hub.home(user) / ASSIGNMENT / "feedback").glob(f"*/{NOTEBOOK}.html"))
            assert len(pages) == 1, pages
            html = pages[0].read_text()
            assert (spec.sentence in html) == (user == late)

    # as those Unix users: nobody lists or reads the other's submission or feedback, or the instructor's course
    probe = (
        "import os, sys\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        os.listdir(path) if os.path.isdir(path) else open(path).read(1)\n"
        "        print('OPEN', path)\n"
        "    except PermissionError:\n"
        "        print('DENIED', path)\n")
    for user, other in ((ontime, late), (late, ontime)):
        theirs = [hub.exchange / COURSE_ID / "inbound", hub.exchange / COURSE_ID / "feedback", hub.home(other),
                  *(hub.home(other) / ASSIGNMENT / "feedback").glob("*/*.html"), course / "submitted" / other, course]
        out = as_user(user, probe.replace("sys.argv[1:]", repr([str(p) for p in theirs])))
        assert "OPEN" not in out, out
        assert out.count("DENIED") == len(theirs), out
        own = as_user(user, probe.replace("sys.argv[1:]", repr([str(p) for p in
                                                                (hub.home(user) / ASSIGNMENT / "feedback").glob("*/*.html")])))
        assert own.count("OPEN") == 1, own

    # the gradebook: what plain nbgrader autograde gives the same submissions, cell by cell, and one late
    ours = gradebook_rows(course / "gradebook.db", hub.learners)
    assert {k: v["late"] for k, v in ours.items()} == {(ontime, NOTEBOOK): False, (late, NOTEBOOK): True}
    assert ours[(ontime, NOTEBOOK)]["score"] == 2 and ours[(late, NOTEBOOK)]["score"] == 1, ours
    assert ours == plain_nbgrader_rows(hub, tmp_path, due), (ours, hub.log)
