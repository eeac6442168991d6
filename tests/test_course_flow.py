"""The whole course on one machine, as the instructor guide runs it, against plain nbgrader row by row.

The commands are read from the guide itself (docs/instructor/one-machine.md, its `course-steps` and `learner-steps`
blocks) and run as written, through bash, from the checkout: every command of those blocks must be run here.
release -> learners fetch and submit (on time, late, late with an extension, one never submits) -> collect ->
`python -m autograder grade` (and, on a copy, plain `nbgrader autograde`) -> the formgrader's Autograde button for
one learner -> feedback -> learners fetch it -> export.
"""

from __future__ import annotations

import csv
import datetime
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import support
from support import WORKBOOK_MISTAKES

from autograder.grading.outputs.lms import CANVAS_IDENTITY, POINTS_POSSIBLE

sys.path.insert(0, str(support.ROOT / "docs" / "_ext"))
import references

GUIDE = support.ROOT / "docs" / "instructor" / "one-machine.md"
NOTEBOOKS = ["01_derivatives.ipynb", "03_backward.ipynb"]  # two of six: each costs plain nbgrader a kernel per student
ROSTER = """id,first_name,last_name,email,lms_user_id
alice,Alice,Martin,alice@example.edu,1001
bob,Bob,Nguyen,bob@example.edu,1002
carol,Carol,Okafor,carol@example.edu,1003
dave,Dave,Smith,dave@example.edu,1004
"""
STUDENTS = ["alice", "bob", "carol", "dave"]  # alice on time, bob late, carol late but extended, dave never submits
HIDDEN = ("BEGIN HIDDEN TESTS", "hidden=True", "END HIDDEN TESTS")
# The guide's lines this test does not run, each with why
NOT_RUN = {"export AUTOGRADER_COURSE_DIR=$HOME/autograd-course": "the test's course is a temporary folder, given in "
                                                                 "the environment of every command"}


def guide_commands(marker: str) -> list[str]:
    """The commands of a marked block of the guide, comments and blank lines left out."""
    lines = [ln.split(" #")[0].strip() for ln in references.marked_block(GUIDE.read_text(), marker).splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("#")]


class Guide:
    """The guide's commands, run as written (bash, from the checkout), each looked up by how it starts."""

    def __init__(self, c: support.Course) -> None:
        self.c = c
        self.steps, self.learner_steps = guide_commands("course-steps"), guide_commands("learner-steps")
        self.exports = [s for s in self.steps if s.startswith("export ") and s not in NOT_RUN]
        self.ran: set[str] = set()

    def _one(self, commands: list[str], start: str) -> str:
        found = [s for s in commands if s.startswith(start)]
        assert len(found) == 1, f"the guide has {len(found)} commands starting with {start!r}: {found}"
        self.ran.add(found[0])
        return found[0]

    def _bash(self, command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        script = "\n".join(["set -e", *self.exports, command])
        return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, text=True, capture_output=True, timeout=1800)

    def step(self, start: str) -> subprocess.CompletedProcess[str]:
        """The instructor's command that starts with `start`, from the checkout."""
        command = self._one(self.steps, start)
        done = self._bash(command, self.c.repo, self.c.env())
        support._assert_clean(done, (command,))
        return done

    def as_learner(self, student: str, start: str, data_dir: Path | None = None,
                   home: Path | None = None) -> subprocess.CompletedProcess[str]:
        """A learner's command, in their own folder, as the guide's one-account trial runs it: `--student=ID` and
        the learner's own Jupyter data folder (nbgrader's record of what they submitted)."""
        command = self._one(self.learner_steps, start)
        home = home or self.c.learners / student
        home.mkdir(parents=True, exist_ok=True)
        env = self.c.env() | {"JUPYTER_DATA_DIR": str(data_dir or home / ".jupyter-data")}
        done = self._bash(f"{command} --student={student}", home, env)
        assert done.returncode == 0, f"{command}: {done.stderr[-2000:]}"
        return done

    def not_run(self) -> list[str]:
        return [s for s in self.steps + self.learner_steps if s not in self.ran and s not in NOT_RUN]


def due_date(root: Path) -> datetime.datetime:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        return gb.find_assignment(support.WORKBOOK).duedate


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    base = tmp_path_factory.mktemp("course")
    c = support.make_checkout(base, NOTEBOOKS, 'c.LateSubmissionPlugin.penalty_method = "zero"\n')
    guide = Guide(c)
    guide.step("export PATH")
    guide.step("mkdir")
    # 1. the assignment, the roster, the due date (a week from today, as the guide computes it)
    guide.step("nbgrader generate_assignment")
    assert sorted(p.name for p in (c.repo / "notebooks" / support.WORKBOOK).glob("*.ipynb")) == NOTEBOOKS
    (c.repo / "roster.csv").write_text(ROSTER)
    guide.step("nbgrader db student import")
    guide.step("nbgrader db assignment add")
    week = due_date(c.root) - datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    # 2. hand out; learners fetch, work and submit
    guide.step("nbgrader release_assignment")
    for student in ["alice", "bob", "carol"]:
        guide.as_learner(student, "nbgrader fetch_assignment")
        support.solve(c.learners / student / support.WORKBOOK, {"03_backward.ipynb": WORKBOOK_MISTAKES["03_backward.ipynb"]}
                      if student == "carol" else None)
    guide.as_learner("alice", "nbgrader submit")
    between = datetime.datetime.now(datetime.timezone.utc)
    guide.as_learner("bob", "nbgrader submit")
    guide.as_learner("carol", "nbgrader submit")
    # Submission times are the real clock's, so the deadline is brought forward to fall between alice's and bob's.
    c.nbgrader("db", "assignment", "add", support.WORKBOOK, f"--duedate={between.strftime('%Y-%m-%d %H:%M:%S.%f UTC')}")
    extension = guide.step("python -m autograder extension")  # carol: late, but within her extension
    # 3. collect; a copy of the course is graded by plain nbgrader
    guide.step("nbgrader collect")
    plain = base / "plain"
    shutil.copytree(c.root, plain)
    c.nbgrader("autograde", support.WORKBOOK, course=plain)
    # 4. grade, 5. feedback, learners fetch it, 6. export
    graded = guide.step("python -m autograder grade")
    # the formgrader's ⚡ Autograde button pressed for alice (NbGraderAPI.autograde runs just this), feedback made
    # right after: plain nbgrader wrote the hidden tests into her autograded notebooks, and feedback must not show them
    c.nbgrader("autograde", support.WORKBOOK, "--force", "--student=alice")
    assert any(h in p.read_text() for p in (c.root / "autograded" / "alice").rglob("*.ipynb") for h in HIDDEN)
    guide.step("nbgrader generate_feedback")
    guide.step("nbgrader release_feedback")
    for student in ["alice", "bob", "carol"]:
        guide.as_learner(student, "nbgrader fetch_feedback")
    guide.step("nbgrader export --to")
    c.nbgrader("export", "--to", str(plain / "grades.csv"), course=plain)
    guide.step("nbgrader export --exporter")
    return {"c": c, "plain": plain, "stdout": graded.stdout, "guide": guide, "week": week, "extension": extension.stdout}


@pytest.mark.slow
def test_the_test_runs_every_command_of_the_instructor_guide(course):
    assert course["guide"].not_run() == []


@pytest.mark.slow
def test_the_guides_due_date_is_a_week_ahead_of_the_day_it_is_run(course):
    assert datetime.timedelta(days=6) < course["week"] < datetime.timedelta(days=8)
    assert "carol: workbook now due" in course["extension"]


@pytest.mark.slow
def test_one_account_fetch_feedback_brings_every_learners_feedback_unless_each_has_their_own_cache(course, tmp_path):
    """The guide's one-account trial: nbgrader finds feedback through the account's record of what it submitted, not
    through --student; a record per learner (their own JUPYTER_DATA_DIR) brings each only their own."""
    c, guide = course["c"], course["guide"]
    own = list((c.learners / "bob" / support.WORKBOOK / "feedback").glob("*/*.html"))
    assert len({p.parent.name for p in own}) == 1  # bob's own record: his own submission's feedback alone
    shared = tmp_path / "one-account-data"
    for student in ["alice", "bob"]:  # one account: both submissions recorded in the one data folder
        shutil.copytree(c.learners / student / ".jupyter-data", shared, dirs_exist_ok=True)
    folder = tmp_path / "bob-on-one-account"
    shutil.copytree(c.learners / "bob" / support.WORKBOOK, folder / support.WORKBOOK,
                    ignore=shutil.ignore_patterns("feedback"))
    guide.as_learner("bob", "nbgrader fetch_feedback", data_dir=shared, home=folder)
    fetched = {p.parent.name for p in (folder / support.WORKBOOK / "feedback").glob("*/*.html")}
    assert len(fetched) == 2, fetched  # alice's submission's feedback came into bob's folder too


@pytest.mark.slow
def test_every_gradebook_row_is_plain_nbgrader_s_late_penalties_included(course):
    c = course["c"]
    ours, plain = support.gradebook_rows(c.root, STUDENTS), support.gradebook_rows(course["plain"], STUDENTS)
    assert ours == plain
    assert {s for s, _ in ours} == {"alice", "bob", "carol"}  # dave: no submission, no row, as in nbgrader
    full = {nb: ours[("alice", nb)]["score"] for _, nb in ours}
    assert all(full.values())
    for nb in full:
        assert ours[("alice", nb)]["penalty"] is None and ours[("carol", nb)]["penalty"] is None
        assert ours[("bob", nb)]["penalty"] == ours[("bob", nb)]["score"] == full[nb]  # penalty_method "zero"
    assert ours[("carol", "03_backward")]["score"] < full["03_backward"]  # her mistake, on time thanks to the extension


@pytest.mark.slow
def test_exports_match_plain_nbgrader_and_carry_the_roster(course):
    c = course["c"]
    ours = (c.root / "grades.csv").read_text()
    assert ours == (course["plain"] / "grades.csv").read_text()
    rows = {r["student_id"]: r for r in csv.DictReader(ours.splitlines())}
    assert rows["alice"]["last_name"] == "Martin" and rows["alice"]["email"] == "alice@example.edu"
    assert float(rows["bob"]["score"]) == 0.0 and float(rows["bob"]["raw_score"]) > 0
    assert float(rows["dave"]["score"]) == 0.0 and rows["dave"]["timestamp"] == ""


@pytest.mark.slow
def test_canvas_export_has_canvas_s_columns_and_scores_after_penalties(course):
    c = course["c"]
    lines = list(csv.reader((c.root / "canvas-grades.csv").read_text().splitlines()))
    assert lines[0] == [*CANVAS_IDENTITY, support.WORKBOOK]
    assert lines[1][0] == POINTS_POSSIBLE
    nbgrader_rows = {r["student_id"]: r for r in csv.DictReader((c.root / "grades.csv").read_text().splitlines())}
    by_id = {ln[2]: ln for ln in lines[2:]}  # SIS User ID: the nbgrader student id
    assert set(by_id) == set(STUDENTS)
    assert by_id["alice"][:4] == ["Martin, Alice", "1001", "alice", "alice@example.edu"]
    assert float(lines[1][5]) == float(nbgrader_rows["alice"]["max_score"])
    for s in STUDENTS:
        assert float(by_id[s][5]) == float(nbgrader_rows[s]["score"])


@pytest.mark.slow
def test_learners_fetch_feedback_without_hidden_tests(course):
    c = course["c"]
    for student in ["alice", "bob", "carol"]:
        pages = list((c.learners / student / support.WORKBOOK / "feedback").glob("*/*.html"))
        assert sorted(p.stem for p in pages) == [n.removesuffix(".ipynb") for n in NOTEBOOKS]
        for page in pages:
            html = page.read_text()
            assert "✓" in html
            assert not [h for h in HIDDEN if h in html], page


@pytest.mark.slow
def test_summary_csv_lands_in_the_course_folder_with_the_late_note(course):
    c = course["c"]
    rows = list(csv.DictReader((c.root / f"{support.WORKBOOK}-summary.csv").read_text().splitlines()))
    assert {r["student_id"] for r in rows} == {"alice", "bob", "carol"}
    assert all("late by" in r["reason"] and "penalty" in r["reason"] for r in rows if r["student_id"] == "bob")
    assert not any("late" in r["reason"] for r in rows if r["student_id"] != "bob")
    assert [p.name for p in c.repo.glob("*.csv")] == ["roster.csv"]  # the guide's roster, the instructor's input
