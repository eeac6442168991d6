"""Judging in the grader: tables of answers are caught by the nudge, forged observations are violations, and a
notebook that cannot be stored, or a gradebook held locked, never stops the batch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy
from nbformat import v4

from autograder import checks as catalog
from autograder import probes
from autograder.grading.discover.assignment import AssignmentSpec, NotebookSpec, SourceCell
from autograder.grading.grade.channel import Violation
from autograder.grading.grade.judge import NUDGE, judge_cell
from autograder.grading.grade.runner import Graded, Stopped
from autograder.grading.store.gradebook import BUSY_TIMEOUT_MS, GradebookWriter
from autograder.grading.store.journal import Journal
from autograder.grading.store.writer import Paths, Writer
from autograder.grading.types import Code, Item, Result, Status, Task
from autograder.loader import CheckCall, load
from autograder.settings import Limits, Tolerance

ENGINES = Path(__file__).resolve().parent / "engines"
SECRET = b"k" * 32


class InProcess:
    """The worker's side of judging, run here on a namespace (as the worker's probes would)."""

    def __init__(self, ns: dict[str, Any], forge: dict[str, Any] | None = None) -> None:
        self.ns, self.forge, self.asked = ns, forge, 0

    def missing(self, check: str) -> list[str]:
        return probes.missing(check, self.ns)

    def observe(self, check: str, case: dict[str, Any]) -> dict[str, Any]:
        self.asked += 1
        return self.forge if self.forge is not None else probes.observe(check, self.ns, case, Limits().check_timeout)


def reference() -> dict[str, Any]:
    return load(ENGINES / "reference.py").namespace


def test_an_honest_engine_passes_visible_and_secret_hidden_inputs_without_flags() -> None:
    calls = (CheckCall(("add_forward", "mul_forward"), False), CheckCall(("add_forward", "mul_forward"), True))
    verdict = judge_cell(InProcess(reference()), calls, Tolerance(), SECRET)
    assert [r.passed for r in verdict.results] == [True] * 4 and verdict.flags == []
    assert [o["output_type"] for o in verdict.outputs] == ["display_data", "display_data"]  # HTML + text, no error


def test_a_table_of_the_visible_inputs_alone_is_flagged_and_scores_zero() -> None:
    ns = reference()
    known = {case["x"] for case in catalog.get("value_repr").make_cases(False)}
    honest_repr = ns["Value"].__repr__
    ns["Value"].__repr__ = lambda self: honest_repr(self) if self.data in known else "Value(?)"
    try:
        verdict = judge_cell(InProcess(ns), (CheckCall(("value_repr",), False),), Tolerance(), SECRET)
    finally:
        ns["Value"].__repr__ = honest_repr
    assert not verdict.results[0].passed and verdict.results[0].points == 0
    assert verdict.flags == ["hard-coded answers? value_repr passes its visible inputs but fails the same inputs moved by "
                             "a random 0.05-0.2%"]
    assert verdict.outputs[-1]["ename"] == "CheckFailed"


def test_a_table_of_the_visible_inputs_and_any_fixed_nudge_of_them_is_flagged() -> None:
    ns = reference()
    visible = [case["x"] for case in catalog.get("value_repr").make_cases(False)]
    known = {x * factor for x in visible for factor in (1.0, NUDGE, 1 / NUDGE, 1.001, 0.999, 1.002, 0.998)}
    honest_repr = ns["Value"].__repr__
    ns["Value"].__repr__ = lambda self: honest_repr(self) if self.data in known else "Value(?)"
    try:
        verdicts = [judge_cell(InProcess(ns), (CheckCall(("value_repr",), False),), Tolerance(), SECRET) for _ in range(5)]
    finally:
        ns["Value"].__repr__ = honest_repr
    assert all(not v.results[0].passed and v.flags for v in verdicts)


def test_an_honest_visible_only_check_is_nudged_and_still_passes() -> None:
    verdict = judge_cell(InProcess(reference()), (CheckCall(("value_repr",), False),), Tolerance(), SECRET)
    assert verdict.results[0].passed and verdict.flags == []


def test_a_table_of_every_input_the_grader_used_hidden_ones_too_is_flagged_and_scores_zero() -> None:
    ns = reference()
    value = ns["Value"]
    honest_add, honest_init = value.__add__, value.__init__
    seen: set[float] = set()

    def logging_init(self, data, *args, **kwargs):  # a first submission that printed every number into its feedback
        seen.add(data)
        honest_init(self, data, *args, **kwargs)

    calls = (CheckCall(("add_forward",), False), CheckCall(("add_forward",), True))
    value.__init__ = logging_init
    try:
        judge_cell(InProcess(ns), calls, Tolerance(), SECRET)
        value.__init__ = honest_init
        value.__add__ = lambda self, other: honest_add(self, other) if {self.data, other.data} <= seen else value(0.0)
        verdict = judge_cell(InProcess(ns), calls, Tolerance(), SECRET)  # the resubmission: a table of them all
    finally:
        value.__init__, value.__add__ = honest_init, honest_add
    assert [r.passed for r in verdict.results] == [True, False] and verdict.results[1].points == 0
    assert verdict.flags == ["hard-coded answers? add_forward passes its hidden inputs but fails one of them moved by "
                             "a random 0.05-0.2%"]


def test_honest_hidden_runs_pass_their_random_nudge_every_time() -> None:
    calls = (CheckCall(("add_forward", "mul_forward", "tanh_backward"), True),)
    for _ in range(20):
        verdict = judge_cell(InProcess(reference()), calls, Tolerance(), SECRET)
        assert all(r.passed for r in verdict.results) and verdict.flags == []


def test_a_worker_that_dies_while_probed_is_an_ordinary_stop_not_a_protocol_violation() -> None:
    class Dying(InProcess):
        def observe(self, check: str, case: dict[str, Any]) -> dict[str, Any]:
            raise Stopped("the worker process was killed by SIGSEGV")

    with pytest.raises(Stopped, match="SIGSEGV"):
        judge_cell(Dying(reference()), (CheckCall(("add_forward",), False),), Tolerance(), SECRET)


def test_an_observation_no_probe_makes_is_a_violation_not_a_failed_check() -> None:
    with pytest.raises(Violation, match="its judge cannot read"):
        judge_cell(InProcess(reference(), forge={"value": "not a number"}), (CheckCall(("add_forward",), False),),
                   Tolerance(), SECRET)


class FailingGradebook:
    """A gradebook whose writes fail (held locked, disk full...)."""

    rolled_back = 0

    def write(self, entries: list[Any]) -> None:
        raise sqlalchemy.exc.OperationalError("select", {}, Exception("database is locked"))

    def commit(self) -> None:
        raise AssertionError("nothing to commit")

    def rollback(self) -> None:
        self.rolled_back += 1


def _writer(tmp_path: Path, gradebook: Any) -> Writer:
    spec = AssignmentSpec("a", {"nb": NotebookSpec("nb", {"g1": SourceCell("g1", "code", "", "", True, True, False, 1.0, None)})}, "f")
    paths = Paths(lambda student: tmp_path / "autograded" / student / "a", tmp_path / "release" / "a")
    return Writer(gradebook, spec, paths, Journal(tmp_path, SECRET))


def _result(tmp_path: Path, student: str, graded: Graded) -> Result:
    return Result(Task(Item(student, "nb", tmp_path / "submitted" / student / "a" / "nb.ipynb"), f"fp-{student}"), graded)


def test_a_notebook_that_cannot_be_stored_gets_a_row_saying_why(tmp_path: Path) -> None:
    nb = v4.new_notebook(cells=[v4.new_code_cell("x")])
    failing = FailingGradebook()
    writer = _writer(tmp_path, failing)
    [row] = writer.store([_result(tmp_path, "alice", Graded({"g1": (1.0, 1.0)}, {}, nb))])  # type: ignore[arg-type]
    assert (row.status, row.score, row.max_score) == (Status.NOT_GRADED, 0.0, 1.0) and failing.rolled_back == 2
    assert row.has(Code.STORE_FAILED) and [r.code for r in row.reasons] == [Code.STORE_FAILED]
    assert "could not store the grade (OperationalError" in row.reason and "database is locked" in row.reason
    assert Journal(tmp_path, SECRET).get(Journal.key("a", "alice", "nb")) is None  # no record: graded again next run


def test_a_group_stored_in_one_commit_keeps_its_other_notebooks_when_one_cannot_be_stored(tmp_path: Path) -> None:
    from nbgrader.api import Gradebook

    url = f"sqlite:///{tmp_path}/gradebook.db"
    with Gradebook(url) as gb:
        gb.add_assignment("a")
        gb.add_notebook("nb", "a")
        gb.add_grade_cell("g1", "nb", "a", max_score=1, cell_type="code")
        for s in ("alice", "bob", "carol"):
            gb.add_student(s)
    nb = v4.new_notebook(cells=[v4.new_code_cell("x")])
    group = [_result(tmp_path, s, Graded({"g1" if s != "bob" else "no_such_cell": (1.0, 1.0)}, {}, nb))
             for s in ("alice", "bob", "carol")]
    with GradebookWriter.open(url, "default_course", "a") as gradebook:
        writer = _writer(tmp_path, gradebook)
        rows = writer.store(group)
    writer.close()
    assert [(r.student, r.status) for r in rows] == [("alice", Status.GRADED), ("bob", Status.NOT_GRADED),
                                                     ("carol", Status.GRADED)]
    assert "could not store the grade (MissingEntry" in rows[1].reason
    with Gradebook(url) as gb:  # committed, read back by another connection
        assert {s: gb.find_grade("g1", "nb", "a", s).auto_score for s in ("alice", "carol")} == {"alice": 1.0, "carol": 1.0}
    saved = Journal(tmp_path, SECRET)  # the journal on disk: the stored two, not bob (graded again next run)
    assert [saved.get(Journal.key("a", s, "nb")) is not None for s in ("alice", "bob", "carol")] == [True, False, True]
    assert (tmp_path / "autograded" / "alice" / "a" / "nb.ipynb").is_file()


def test_gradebook_connections_wait_for_a_lock_instead_of_failing(tmp_path: Path) -> None:
    engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path / 'gradebook.db'}")
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == BUSY_TIMEOUT_MS >= 30_000


class _Refusing:
    """An executor whose submit fails as `error` does."""

    def __init__(self, error: Exception) -> None:
        self.error, self.stopped = error, False

    def submit(self, task: Task) -> Any:
        raise self.error

    def window(self) -> int:
        return 2

    def stop(self) -> None:
        self.stopped = True


def _assignment_gradebook(tmp_path: Path) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{tmp_path}/gradebook.db") as gb:
        gb.add_assignment("a")
        gb.add_notebook("nb", "a")
        gb.add_grade_cell("g1", "nb", "a", max_score=1, cell_type="code")
        gb.add_student("alice")


def test_a_grader_bug_starting_a_notebook_grades_it_zero_saying_so_and_the_batch_goes_on(tmp_path: Path) -> None:
    _assignment_gradebook(tmp_path)
    with GradebookWriter.open(f"sqlite:///{tmp_path}/gradebook.db", "default_course", "a") as gradebook:
        writer = _writer(tmp_path, gradebook)
        [row] = writer.run([_result(tmp_path, "alice", None).task], _Refusing(RuntimeError("boom")), progress=False)  # type: ignore[arg-type]
        writer.close()
    assert (row.status, row.score) == (Status.NOT_GRADED, 0.0) and row.has(Code.GRADER_ERROR) and "boom" in row.reason


def test_an_executor_that_is_gone_stops_the_run_and_stores_no_zero(tmp_path: Path) -> None:
    _assignment_gradebook(tmp_path)
    executor = _Refusing(ConnectionResetError("the scheduler closed the connection"))
    with GradebookWriter.open(f"sqlite:///{tmp_path}/gradebook.db", "default_course", "a") as gradebook:
        writer = _writer(tmp_path, gradebook)
        with pytest.raises(OSError):
            writer.run([_result(tmp_path, "alice", None).task], executor, progress=False)  # type: ignore[arg-type]
        writer.close()
    assert executor.stopped and Journal(tmp_path, SECRET).get(Journal.key("a", "alice", "nb")) is None
