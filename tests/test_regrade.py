"""Regrading what a change touches: each record keeps what its grade depended on (store/dependencies.py), `grade`
regrades only the notebooks where something moved and says why, and the score-change report lists every grade cell
that moved (outputs/score_changes.py), the same after a kill and a re-run as after one run."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import support

from autograder import checks
from autograder.checks import common
from autograder.checks.run import run_checks
from autograder.grading.outputs import score_changes
from autograder.grading.store.dependencies import Digests, moved
from autograder.grading.store.files import SECRET_FILE
from autograder.grading.store.journal import JOURNAL_FILE, Journal
from autograder.grading.store.resume import plan, settle
from autograder.grading.types import CellResult, Code, Depends, Item, Reason, Record, Task, Verdict
from autograder.settings import VERDICT_CHARS, Tolerance
from autograder.truth import slips
from autograder.truth.expressions import Expr

# ---------------------------------------------------------------- the dependency record

DIGESTS_SCRIPT = ("import json; from autograder.grading.store.dependencies import Digests; "
                  "from autograder.settings import Tolerance; from autograder import checks; "
                  "d = Digests(Tolerance()); print(json.dumps({c.name: d.check(c.name) for c in checks.CHECKS}))")


def test_a_checks_digest_is_the_same_in_every_process_and_after_a_run_filled_the_caches() -> None:
    here = {c.name: Digests(Tolerance()).check(c.name) for c in checks.CHECKS}
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", DIGESTS_SCRIPT], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": seed})
        assert json.loads(out.stdout) == here
    ns: dict = {}
    exec(support.solution_sources()["engine"], ns)  # judging fills truth.memo's caches, which no digest may read
    assert all(r.passed for r in run_checks([checks.get("add_backward"), checks.get("backward_topological_order")],
                                            ns, hidden=True, secret=b"course"))
    assert {c.name: Digests(Tolerance()).check(c.name) for c in checks.CHECKS} == here


def test_a_change_to_code_a_check_reaches_changes_that_checks_digest_and_no_other(monkeypatch) -> None:
    before = {c.name: Digests(Tolerance()).check(c.name) for c in checks.CHECKS}
    real = common.grad_close
    monkeypatch.setattr(common, "grad_close", lambda *args: real(*args))  # a helper some judges call, others never
    after = Digests(Tolerance())
    changed = {n for n in before if after.check(n) != before[n]}
    assert changed and changed != set(before), "the helper reaches every check or none: nothing was tested"
    assert "tanh_backward" in changed  # (its judge compares gradients through grad_close)
    monkeypatch.setattr(common, "grad_close", real)
    # a helper behind functools.lru_cache is digested as the function it wraps (the cache is not)
    monkeypatch.setattr(slips, "_compiled", functools.lru_cache(maxsize=8)(lambda formula: compile(formula, "f", "eval")))
    assert {n for n in before if Digests(Tolerance()).check(n) != before[n]}
    monkeypatch.undo()
    # a method of the objects in a table the judges read (truth.expressions.Expr, through checks.common.EXPRESSIONS)
    reference = Expr.reference
    monkeypatch.setattr(Expr, "reference", lambda self, *args, **kw: reference(self, *args, **kw))
    assert "tanh_backward" in {n for n in before if Digests(Tolerance()).check(n) != before[n]}
    monkeypatch.undo()
    tanh = checks.get("tanh_backward")
    monkeypatch.setitem(checks.BY_NAME, "tanh_backward", dataclasses.replace(tanh, points=2.0))
    again = Digests(Tolerance())
    assert {n for n in before if again.check(n) != before[n]} == {"tanh_backward"}


def _depends(**changes: object) -> Depends:
    base = Depends("v1", "file", {"check_a": "1", "": "x"}, {"Limits.cell_timeout": 60.0}, "", {})
    return dataclasses.replace(base, **changes)


def test_moved_says_what_changed_in_one_phrase_each_and_nothing_when_nothing_did() -> None:
    digests = Digests(Tolerance())
    ran = {"tanh_backward": digests.check("tanh_backward")}
    old = _depends(judging=digests.judging(), checks=ran)
    assert moved(old, _depends(), digests) == []
    assert moved(old, _depends(submission="other"), digests) == ["the submitted file changed"]
    assert moved(old, _depends(cells={"check_a": "2", "": "x"}), digests) == ["cell `check_a` of the assignment changed"]
    assert moved(old, _depends(settings={"Limits.cell_timeout": 30.0}), digests) == [
        "setting Limits.cell_timeout changed (60.0 -> 30.0)"]
    assert moved(old, _depends(grader="v2"), digests) == ["the grader changed (v1 -> v2)"]
    stricter = Digests(Tolerance(checks={"tanh_backward": {"rtol": 1e-3}}))
    assert moved(old, _depends(), stricter) == ["check `tanh_backward` changed"]
    assert moved(dataclasses.replace(old, judging="older"), _depends(), digests) == [
        "the judging code every check shares changed"]


# ---------------------------------------------------------------- rounds and the score-change report

def _cells(points: float, status: str = "passed", sentence: str = "ok") -> dict[str, CellResult]:
    return {"check_backward": CellResult(points, 3.0, [Verdict("add_backward", "passed", "ok"),
                                                       Verdict("backward_topological_order", status, sentence)]),
            "check_forward": CellResult(1.0, 1.0, [Verdict("add_forward", "passed", "ok")])}


def _record(cells: dict[str, CellResult], before: dict[str, CellResult] | None = None, round_: int = 0,
            settled: bool = True) -> Record:
    return Record("fp", sum(c.points or 0 for c in cells.values()), 4.0, [], [Reason(Code.NOTE, "a note")], [], True,
                  None, _depends(), cells, before, round_, settled)


def test_a_regrade_keeps_the_cells_of_its_rounds_start_through_a_kill_and_starts_a_new_round_once_reported(
        tmp_path: Path) -> None:
    journal = Journal(tmp_path, b"secret")
    journal.append([("ps1/ann/nb", _record(_cells(3.0))), ("ps1/bob/nb", _record(_cells(3.0)))])
    digests = Digests(Tolerance())
    tasks = [Task(Item(s, "nb", tmp_path / s / "nb.ipynb"), "fp", _depends(submission="new")) for s in ("ann", "bob")]
    first = plan(tasks, journal, "ps1", lambda s: tmp_path / "autograded" / s, digests)
    assert first.round == 1 and first.before["ps1/ann/nb"] == _cells(3.0)
    assert first.reasons() == [("the submitted file changed", 2)]
    # ann is regraded and stored, then the run is killed: her record keeps the round's start, unsettled
    journal.append([("ps1/ann/nb", _record(_cells(0.0, "failed", "wrong"), first.before["ps1/ann/nb"], 1, False))])
    journal.close()
    reopened = Journal(tmp_path, b"secret")  # (the records come back through their HMAC, every field)
    assert reopened.get("ps1/ann/nb") == _record(_cells(0.0, "failed", "wrong"), _cells(3.0), 1, False)
    ann = dataclasses.replace(tasks[0], depends=_depends(submission="newer"))  # changed again before the re-run
    rerun = plan([ann, tasks[1]], reopened, "ps1", lambda s: tmp_path / "autograded" / s, digests)
    assert rerun.round == 1 and rerun.before["ps1/ann/nb"] == _cells(3.0), "the re-run lost the round's start"
    reopened.append([("ps1/bob/nb", _record(_cells(3.0), rerun.before["ps1/bob/nb"], 1, False))])
    report = score_changes.of_round(reopened.records, "ps1", fresh=True)
    assert [(c.student, c.cell, c.old, c.new, c.check, c.sentence) for c in report.changes] == [
        ("ann", "check_backward", 3.0, 0.0, "backward_topological_order", "wrong")]
    assert report.notebooks == 2
    assert sorted(settle(reopened, "ps1", 1)) == ["ps1/ann/nb", "ps1/bob/nb"]
    later = plan([dataclasses.replace(ann, depends=_depends(submission="newest"))], reopened, "ps1",
                 lambda s: tmp_path / "autograded" / s, digests)
    assert later.round == 2 and later.before["ps1/ann/nb"] == _cells(0.0, "failed", "wrong")
    assert score_changes.of_round(reopened.records, "ps1").round == 1, "a settled round is shown until the next"


def test_the_score_change_report_holds_learner_text_as_one_escaped_bounded_line(tmp_path: Path) -> None:
    hostile = "=HYPERLINK(\"x\")<script>alert(1)</script>\u202e" + "9" * 1000
    records = {"ps1/<i>eve/nb": _record(_cells(0.0, "failed", "ignored"), _cells(3.0), 1, False)}
    records["ps1/<i>eve/nb"].cells["check_backward"].verdicts[1] = Verdict("backward_topological_order", "failed",
                                                                              hostile)
    report = score_changes.of_round(records, "ps1", fresh=True)
    (change,) = report.changes
    assert len(change.sentence) <= VERDICT_CHARS and "\n" not in change.sentence and "\u202e" not in change.sentence
    html = score_changes.section(report)
    assert "<script" not in html and "<i>eve" not in html and "&lt;i&gt;eve" in html
    score_changes.write_csv(tmp_path / "c.csv", report)
    line = (tmp_path / "c.csv").read_text().splitlines()[1]
    assert "'=HYPERLINK" in line  # a spreadsheet never runs it as a formula
    assert "3 -> 0 of 3" in score_changes.table(report) and len(score_changes.table(report).splitlines()) == 3


def test_a_changed_verdict_is_the_first_check_whose_status_differs_or_that_no_longer_runs() -> None:
    before = CellResult(3.0, 3.0, [Verdict("a", "passed", "ok"), Verdict("b", "passed", "ok")])
    assert score_changes.changed_verdict(before, CellResult(0.0, 3.0, [Verdict("a", "failed", "a broke")])) == Verdict(
        "a", "failed", "a broke")
    assert score_changes.changed_verdict(before, CellResult(0.0, 3.0, [Verdict("a", "passed", "ok")])) == Verdict(
        "b", "not run", "ok")
    assert score_changes.changed_verdict(before, before) is None


# ---------------------------------------------------------------- a graded course, regraded

STUDENTS = ["correct_a", "mul_no_swap", "relerr_min", "no_seed", "correct_iterative", "forward_difference"]
# backward_topological_order is a hidden check of the grade cell check_backward, after a visible call that
# mul_no_swap and no_seed fail: it never ran in their notebooks, so its tolerance cannot move their grades
RAN_IT = ["correct_a", "correct_iterative", "forward_difference", "relerr_min"]
STRICT = 'c.Tolerance.checks = {"backward_topological_order": {"rtol": 0.0, "atol": 0.0}}\n'


def _graded_course(root: Path, slow: str = "") -> Path:
    """The course, each student's notebook graded; `slow`'s notebook sleeps a while before its test cells."""
    support.make_course(root)
    for s in STUDENTS:
        nb = support.submission(root, ["derivatives", "engine"], support.EDITS[s])
        if s == slow:
            cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "engine")
            cell.source += "\n\nimport time\ntime.sleep(4)\n"
        support.submit(root, s, nb)
    first = support.grade_ours(root)
    assert first.returncode == 0, first.stderr
    return root


def _tree(root: Path) -> dict[str, str]:
    """Every file of the course by path, as a digest of its bytes."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _strict(root: Path) -> None:
    config = root / "nbgrader_config.py"
    config.write_text(config.read_text() + STRICT)


def _report(root: Path) -> tuple[str, bytes]:
    return ((root / "reports" / "ps1-score-changes.csv").read_text(), (root / "reports" / "ps1.html").read_bytes())


@pytest.mark.slow
def test_a_check_tolerance_change_regrades_only_where_the_check_ran_and_reports_exactly_the_cells_that_moved(
        tmp_path: Path) -> None:
    course = _graded_course(tmp_path / "course")
    support.nbgrader(course, "generate_feedback", "ps1")
    feedback = {s: course / "feedback" / s / "ps1" / "engine.html" for s in STUDENTS}
    assert all(f.exists() for f in feedback.values())
    before = support.grade_cells(course, STUDENTS)
    _strict(course)

    tree = _tree(course)
    dry = support.grade_ours(course, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert _tree(course) == tree, "--dry-run wrote something"
    assert "4 notebooks: check `backward_topological_order` changed" in dry.stdout
    assert sorted(ln.split()[2].split("/")[0] for ln in dry.stdout.splitlines() if ln.startswith("would grade")) == RAN_IT

    run = support.grade_ours(course)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert [ln for ln in lines if " notebooks: " in ln and ln.endswith("changed")] == [
        "4 notebooks: check `backward_topological_order` changed"]
    status = {ln.split()[0]: ln for ln in lines if ln.split() and ln.split()[0] in STUDENTS}
    assert sorted(s for s in STUDENTS if "skipped (unchanged)" not in status[s]) == RAN_IT
    after = support.grade_cells(course, STUDENTS)
    moved_cells = sorted(k for k in before if before[k] != after[k])
    assert moved_cells == [(s, "check_backward") for s in RAN_IT]
    csv_text, page = _report(course)
    rows = [ln.split(",") for ln in csv_text.splitlines()[1:]]
    assert sorted((r[0], r[2], r[3], r[4], r[6]) for r in rows) == [
        (s, "check_backward", "3", "0", "backward_topological_order") for s in RAN_IT]
    assert "score changes (regrade 1, 4 notebooks regraded): 4 grade cells moved" in run.stdout
    assert b"Score changes of the last regrade" in page and b"backward_topological_order" in page
    assert sorted(s for s in STUDENTS if not feedback[s].exists()) == RAN_IT, "feedback made again beyond the moved"
    support.nbgrader(course, "generate_feedback", "ps1")  # (makes again exactly what was removed)
    assert all(f.exists() for f in feedback.values())

    again = support.grade_ours(course)
    assert again.stdout.count("skipped (unchanged)") == len(STUDENTS) and "score changes" not in again.stdout
    assert _report(course) == (csv_text, page), "a run that regrades nothing changed the report"


@pytest.mark.slow
def test_a_dry_run_on_a_course_never_graded_makes_no_secret_and_writes_nothing(tmp_path: Path) -> None:
    course = support.make_course(tmp_path / "course")
    support.submit(course, "ann", support.submission(course, ["derivatives", "engine"], []))
    tree = _tree(course)
    dry = support.grade_ours(course, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines() == ["1 notebook: not graded before", "would grade ann/engine: not graded before",
                                       "dry run: 1 notebook would be graded, 0 unchanged; nothing written"]
    assert _tree(course) == tree and not (course / SECRET_FILE).exists()


def _copy(course: Path, to: Path) -> Path:
    shutil.copytree(course, to, symlinks=True)
    config = to / "nbgrader_config.py"
    config.write_text(config.read_text().replace(repr(str(course)), repr(str(to))))
    return to


@pytest.mark.slow
def test_a_regrade_killed_midway_then_run_again_gives_the_same_gradebook_and_report_as_one_run(tmp_path: Path) -> None:
    graded = _graded_course(tmp_path / "graded", slow="correct_iterative")  # regraded second, after correct_a
    whole, killed = _copy(graded, tmp_path / "whole"), _copy(graded, tmp_path / "killed")
    for course in (whole, killed):
        _strict(course)
    assert support.grade_ours(whole).returncode == 0

    journal_file = killed / JOURNAL_FILE
    size = journal_file.stat().st_size
    cmd = [sys.executable, "-m", "autograder", "grade", "ps1", "--course", str(killed), "--config",
           str(killed / "nbgrader_config.py"), "--no-progress", "--jobs", "1"]
    proc = subprocess.Popen(cmd, cwd=killed, env=support.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and journal_file.stat().st_size == size:  # once correct_a's regrade is stored
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)  # (correct_iterative's notebook is sleeping meanwhile)
    proc.wait()
    secret = bytes.fromhex((killed / SECRET_FILE).read_text().strip())
    stored = [k for k, r in Journal(killed, secret).records.items() if r.round == 1]
    assert stored == ["ps1/correct_a/engine"], "the run was not killed mid-regrade; nothing was tested"
    assert not (killed / "reports" / "ps1-score-changes.csv").exists()

    rerun = support.grade_ours(killed)
    assert rerun.returncode == 0, rerun.stderr
    assert "3 notebooks: check `backward_topological_order` changed" in rerun.stdout
    assert "score changes (regrade 1, 4 notebooks regraded): 4 grade cells moved" in rerun.stdout
    db = "sqlite:///{}/gradebook.db"
    assert support.gradebook_tables(db.format(killed), "fixture-course") == support.gradebook_tables(
        db.format(whole), "fixture-course")
    assert _report(killed) == _report(whole)


@pytest.mark.parametrize("checks_setting, said", [({"no_such_check": {"rtol": 1e-3}}, "'no_such_check', which is not a check"),
                                                  ({"tanh_backward": {"rtool": 1e-3}}, "only atol, forward_rtol, rtol")])
def test_a_tolerance_for_a_check_that_cannot_be_used_is_refused_before_anything_is_read(checks_setting, said) -> None:
    from traitlets.config import Config

    from autograder.grading import batch
    from autograder.grading.types import GradingError

    config = Config()
    config.Tolerance.checks = checks_setting
    with pytest.raises(GradingError, match=said):
        batch.run(batch.Options("ps1", config, course="/nonexistent/course"))


def test_the_class_reports_similarity_section_lists_the_pairs_that_stood_out_escaped_and_says_it_is_no_verdict(
        tmp_path: Path) -> None:
    from autograder.grading.outputs import similarity_section

    assert similarity_section.section(tmp_path, "ps1") == ""  # the command never ran: no section
    path = similarity_section.csv_path(tmp_path, "ps1")
    path.parent.mkdir(parents=True)
    path.write_text("z,threshold,score,student,with,public_engine,exercises\n"
                    "80.00,60,9.1,<img src=x onerror=alert(1)>,bob,no,ex_03 ex_04\n"
                    "12.00,10,3.0,cy,micrograd,yes,ex_03\n"
                    "5.00,60,1.0,dan,eve,no,ex_03\n")
    html = similarity_section.section(tmp_path, "ps1")
    assert "not a verdict" in html and "2 pairs of work stood out" in html and "ps1-similarity.html" in html
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html and "micrograd" in html
    assert "dan" not in html  # below its threshold
