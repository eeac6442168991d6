"""`python -m autograder grade --cluster`: the real workbook graded on a Dask LocalCluster (worker processes).

One scenario feeds the slow tests here. A LocalCluster of two workers, plus a third worker that cannot start its
sandbox (no bubblewrap on its PATH), grades two students of a copy of the workbook course that plain nbgrader and
the local grader have already graded (conftest's `graded`), with the local run's rows, notebooks and state removed.
Its gradebook is on a PostgreSQL server from Debian's package (tests/postgres_server.py), generated there by
nbgrader; without one (outside CI) it stays nbgrader's SQLite file and the PostgreSQL tests skip, saying why.
1. the command line's driver is SIGKILLed once it has stored a first notebook;
2. the driver runs again (in this process) and, while it runs, one Dask worker is SIGKILLed with a notebook in hand.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import redirect_stderr
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import postgres_server
import pytest
from support import NAMES, ROOT, VENV_BIN, Graded

from autograder.cli import warm_for
from autograder.grading import batch
from autograder.grading.grade.cluster import SandboxCheck
from autograder.grading.grade.sandbox import bwrap, client
from autograder.grading.store.files import SECRET_FILE
from autograder.grading.store.journal import JOURNAL_FILE, Journal
from autograder.grading.store.writer import Writer
from autograder.grading.types import GRADER_VERSION, Code, Row, Status
from autograder.settings import load_config

slow = pytest.mark.slow  # the scenario: a cluster of three worker processes grading the workbook, a minute or more

STUDENTS = ("blank", "mistaken")  # of the course's three: stubs, and solutions with mistakes (passes and failures)
ASSIGNMENT = "workbook"


def cell_scores(db_url: str) -> dict[tuple[str, str, str], float | None]:
    """(student, notebook, grade_id) -> score, every grade cell of the gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gb:
        return {(s, name, g.name): g.score for s in STUDENTS for name in NAMES
                for g in gb.find_submission_notebook(name, ASSIGNMENT, s).grades}


def grade_rows(db_url: str) -> tuple[int, int]:
    """Rows of the grade table, and distinct (notebook, cell) pairs among them: equal when nothing is doubled."""
    from nbgrader.api import Gradebook
    from sqlalchemy import text

    with Gradebook(db_url) as gb:
        return tuple(gb.db.execute(text("select count(*), count(distinct notebook_id || '/' || cell_id) from grade")).one())


@dataclass
class Scenario:
    """What the two runs did and left."""

    course: Path
    bad_worker: str  # address of the worker without a sandbox
    first_run_stored: int  # notebooks the killed driver had stored
    rows: list[Row]  # the second run's summary rows
    stores: dict[str, int]  # notebook label -> times the second run's driver stored it
    killed: list[str]  # labels of the notebooks the killed worker had in hand
    killed_worker: str  # its address
    ran_on: dict[str, set[str]] = field(default_factory=dict)  # notebook label -> workers that ran its task
    stderr: str = ""  # the second run's reports
    db_url: str = ""  # the cluster-graded course's gradebook
    postgres: bool = False  # whether that is a PostgreSQL server
    driver_stagings: list[str] = field(default_factory=list)  # sandbox stagings the killed command-line driver made
    loaded_at_setup: dict[str, bool] = field(default_factory=dict)  # worker -> grader imported once its sandbox started


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the cluster tests: {reason}")
    pytest.skip(reason)


def _fresh_copy(graded: Graded, dest: Path) -> Path:
    """The locally graded course without anything the local run wrote: grades must come from the cluster."""
    from nbgrader.api import Gradebook

    shutil.copytree(graded.ours, dest)
    shutil.rmtree(dest / "autograded")
    (dest / JOURNAL_FILE).unlink()
    with Gradebook(f"sqlite:///{dest / 'gradebook.db'}") as gb:
        for student in STUDENTS:
            gb.remove_submission(ASSIGNMENT, student)
    return dest


def _label(key: Any) -> str:
    """The notebook label in a grading task's key (grade-<assignment>/<student>/<notebook>-<run>)."""
    return str(key).removeprefix(f"grade-{ASSIGNMENT}/").rsplit("-", 1)[0]


def _kill_driver_after_first_store(course: Path, config: Path, address: str) -> tuple[set[str], list[str]]:
    """Run the command line's driver on the cluster; SIGKILL it once a notebook is stored; the labels it stored, and
    the sandbox stagings it made (a SIGKILLed process cannot remove its own)."""
    env = {**os.environ, "PATH": VENV_BIN + os.pathsep + os.environ.get("PATH", ""), "AUTOGRADER_COURSE_DIR": str(course)}
    log = course.parent / "first-run.log"
    with open(log, "w") as err:
        cmd = [sys.executable, "-m", "autograder", "grade", ASSIGNMENT, "--course", str(course), "--config",
               str(config), "--no-progress", "--cluster", address, *(f"--student={s}" for s in STUDENTS)]
        proc = subprocess.Popen(cmd, cwd=course, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        journal = course / JOURNAL_FILE
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not (journal.exists() and journal.stat().st_size) and proc.poll() is None:
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    stagings = [p.name for p in Path(tempfile.gettempdir()).glob(f"{client.STAGING_PREFIX}{proc.pid}-*")]
    secret = bytes.fromhex((course / SECRET_FILE).read_text().strip())
    stored = {k.removeprefix(f"{ASSIGNMENT}/") for k in Journal(course, secret).records}
    assert 0 < len(stored) < len(STUDENTS) * len(NAMES), f"the driver was not killed mid-run:\n{log.read_text()[-3000:]}"
    return stored, stagings


def _grader_loaded(client: Any) -> dict[str, bool]:
    """Worker -> whether it has imported the grading pipeline (`eval`, a builtin: pickled by name, so a worker
    without the grader can run it too)."""
    return client.run(eval, "'autograder.grading.grade.pipeline' in __import__('sys').modules")


def _course_config(course: Path, db_url: str, generated: bool) -> Path:
    """The course's config: the project's, with this course's root and gradebook URL (and its own release folder
    when the assignment is generated again: never over the committed notebooks/)."""
    path = course / "nbgrader_config.py"
    release = f"c.CourseDirectory.release_directory = {str(course.parent / 'release')!r}\n" if generated else ""
    path.write_text("c = get_config()  # noqa: F821\n"
                    f"load_subconfig({str(ROOT / 'nbgrader_config.py')!r})  # noqa: F821\n"
                    f"c.CourseDirectory.root = {str(course)!r}\n{release}"
                    f"c.CourseDirectory.db_url = {db_url!r}\n")
    return path


def _generate(config_path: Path) -> None:
    """`nbgrader generate_assignment workbook` into the course's gradebook, in this process (as the formgrader runs it)."""
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    config = load_config(config_path)
    result = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config).generate_assignment(ASSIGNMENT)
    assert result["success"], result.get("error")


@pytest.fixture(scope="module")
def scenario(graded: Graded, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    reason = bwrap.unavailable_reason()
    if reason:
        _unavailable(reason)
    try:
        from distributed import Client, LocalCluster, get_task_stream
    except ImportError:
        _unavailable("dask's distributed is not installed (it is in the dev and cluster extras: pip install -e '.[dev]')")
    course = _fresh_copy(graded, tmp_path_factory.mktemp("cluster") / "course")
    no_server = postgres_server.unavailable_reason()
    if no_server and os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {no_server}", pytrace=False)
    # the gradebook on a PostgreSQL server when there is one (else the copied SQLite file; its own tests skip)
    server = contextlib.nullcontext(f"sqlite:///{course / 'gradebook.db'}") if no_server else postgres_server.server()
    with server as db_url:
        config = _course_config(course, db_url, generated=not no_server)
        if not no_server:
            (course / "gradebook.db").unlink()  # nothing may read or write it now
            _generate(config)
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as lc, Client(lc) as client:
            # a worker on a machine without bubblewrap: it joins the cluster but must take no work
            bad = subprocess.Popen([os.path.join(VENV_BIN, "dask"), "worker", lc.scheduler_address, "--nthreads", "1",
                                    "--no-nanny", "--no-dashboard", "--name", "no-sandbox"],
                                   env={"PATH": VENV_BIN, "HOME": os.environ.get("HOME", "/root")},
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                client.wait_for_workers(3, timeout=120)
                bad_address = next(a for a, w in client.scheduler_info()["workers"].items() if w.get("name") == "no-sandbox")
                pids = client.run(os.getpid)
                # the workers' start, alone: a plugin of a run that sends no task
                fresh = _grader_loaded(client)
                client.register_plugin(SandboxCheck("setup-only", GRADER_VERSION), name=SandboxCheck.name)
                loaded = {a: _grader_loaded(client)[a] and not fresh[a] for a in fresh}
                first, stagings = _kill_driver_after_first_store(course, config, lc.scheduler_address)
                done = _second_run(course, config, lc.scheduler_address, client, get_task_stream, pids, bad_address, first)
                done.driver_stagings, done.loaded_at_setup = stagings, loaded
                done.loaded_at_setup[bad_address] = _grader_loaded(client)[bad_address]  # after both runs
            finally:
                bad.kill()
                bad.wait()
        done.db_url, done.postgres = db_url, not no_server
        yield done  # the server lives until the module's tests are done


def _second_run(course: Path, config: Path, address: str, client: Any, get_task_stream: Any, pids: dict[str, int], bad: str,
                first: set[str]) -> Scenario:
    """The driver again, in a thread of this process; this thread kills a worker that has a notebook in hand."""
    stores: dict[str, int] = {}
    store = Writer.store

    def counting(self, group):  # type: ignore[no-untyped-def]
        for result in group:
            if result.graded is not None or (result.why and result.why.code is not Code.CLUSTER_LOST):
                label = result.task.item.label
                stores[label] = stores.get(label, 0) + 1
        return store(self, group)

    options = batch.Options(ASSIGNMENT, load_config(config), str(course), list(STUDENTS),
                            progress=False, cluster=address)
    out: dict[str, Any] = {}
    err = io.StringIO()

    def drive() -> None:
        try:
            with redirect_stderr(err):
                out["rows"] = batch.run(options)
        except BaseException as exc:
            out["error"] = exc

    Writer.store = counting  # type: ignore[method-assign]
    killed: list[str] = []
    killed_worker = ""
    try:
        with get_task_stream(client) as stream:
            driver = threading.Thread(target=drive)
            driver.start()
            deadline = time.monotonic() + 300
            while not killed and driver.is_alive() and time.monotonic() < deadline:
                for address, keys in client.processing().items():
                    # this run's notebooks (a task of the killed driver may still be finishing on a worker)
                    grading = [k for k in keys if str(k).startswith("grade-") and _label(k) not in first]
                    if grading and address in pids and address != bad:
                        os.kill(pids[address], signal.SIGKILL)
                        killed, killed_worker = [_label(k) for k in grading], address
                        break
                time.sleep(0.05)
            driver.join(600)
    finally:
        Writer.store = store  # type: ignore[method-assign]
    assert "error" not in out, out.get("error")
    ran_on: dict[str, set[str]] = {}
    for task in stream.data:
        if str(task["key"]).startswith("grade-"):
            ran_on.setdefault(_label(task["key"]), set()).add(task["worker"])
    return Scenario(course, bad, len(first), out["rows"], stores, killed, killed_worker, ran_on, err.getvalue())


@slow
def test_every_workbook_grade_cell_on_the_cluster_scores_as_local_grading_and_plain_nbgrader(graded, scenario):
    cluster = cell_scores(scenario.db_url)
    assert len(cluster) > 3 * len(NAMES)
    assert cluster == cell_scores(f"sqlite:///{graded.ours / 'gradebook.db'}")
    assert cluster == cell_scores(f"sqlite:///{graded.course / 'gradebook.db'}")


@slow
def test_a_killed_driver_resumes_where_it_stopped_with_no_duplicate_rows(scenario):
    statuses = [r.status for r in scenario.rows]
    assert len(scenario.rows) == len(STUDENTS) * len(NAMES)
    assert statuses.count(Status.SKIPPED) == scenario.first_run_stored
    assert statuses.count(Status.GRADED) == len(scenario.rows) - scenario.first_run_stored
    rows, distinct = grade_rows(scenario.db_url)
    assert rows == distinct


@slow
def test_a_killed_worker_loses_nothing_and_each_notebook_is_stored_exactly_once(scenario):
    assert scenario.killed, "no worker was killed with a notebook in hand"
    assert set(scenario.stores) == {f"{r.student}/{r.notebook}" for r in scenario.rows if r.status is Status.GRADED}
    assert set(scenario.stores.values()) == {1}
    assert set(scenario.killed) <= set(scenario.stores)
    # graded again elsewhere (one of them may have finished in the instant before the kill: not a failure)
    assert any(scenario.ran_on.get(label, set()) - {scenario.killed_worker} for label in scenario.killed)


@slow
def test_a_worker_that_cannot_start_its_sandbox_takes_no_work_and_is_reported(scenario):
    assert scenario.ran_on, "the task stream recorded nothing"
    assert all(scenario.bad_worker not in workers for workers in scenario.ran_on.values())
    line = next(ln for ln in scenario.stderr.splitlines() if scenario.bad_worker in ln)
    assert "cannot start its grading sandbox" in line and "bubblewrap is not installed" in line


@slow
def test_each_worker_imports_the_grader_once_as_its_sandbox_starts_and_one_without_a_sandbox_never(scenario):
    able = {a: loaded for a, loaded in scenario.loaded_at_setup.items() if a != scenario.bad_worker}
    assert len(able) == 2 and all(able.values()), scenario.loaded_at_setup  # before its first task, not in it
    assert scenario.loaded_at_setup[scenario.bad_worker] is False


@slow
def test_the_command_line_driver_of_a_cluster_run_starts_no_sandbox_of_its_own(scenario):
    assert scenario.driver_stagings == []


def _needs_postgres(scenario: Scenario) -> None:
    if not scenario.postgres:
        pytest.skip(postgres_server.unavailable_reason() or "no PostgreSQL server")


def _export(config: list[str], cwd: Path, env: dict[str, str], to: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([os.path.join(VENV_BIN, "nbgrader"), "export", *config, "--to", str(to)], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


@slow
def test_the_cluster_graded_gradebook_lives_on_the_postgres_server_only(scenario):
    _needs_postgres(scenario)
    assert scenario.db_url.startswith("postgresql+psycopg://")
    assert not (scenario.course / "gradebook.db").exists()


@slow
def test_nbgrader_export_gives_the_same_csv_from_postgres_as_from_sqlite(graded, scenario, tmp_path):
    _needs_postgres(scenario)
    env = {**os.environ, "PATH": VENV_BIN + os.pathsep + os.environ.get("PATH", "")}
    env.pop("NBGRADER_EXECUTION", None)
    pg = _export([], scenario.course, env, tmp_path / "postgres.csv")  # the course folder's nbgrader_config.py
    lite = _export([f"--NbGrader.config_file={ROOT / 'grading_config.py'}"], tmp_path,
                   {**env, "AUTOGRADER_COURSE_DIR": str(graded.ours)}, tmp_path / "sqlite.csv")
    for proc in (pg, lite):  # the real command, both at once
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    rows = {kind: sorted((r for r in csv.DictReader(open(tmp_path / f"{kind}.csv")) if r["student_id"] in STUDENTS),
                         key=lambda r: r["student_id"]) for kind in ("postgres", "sqlite")}
    assert [r["student_id"] for r in rows["postgres"]] == sorted(STUDENTS)
    assert rows["postgres"] == rows["sqlite"]


@slow
def test_formgrader_reads_the_same_rows_from_postgres_as_from_sqlite(graded, scenario):
    _needs_postgres(scenario)
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    def shown(config: Config) -> list[Any]:
        api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
        drop = {"id", "index"}  # a random id per database, and the formgrader's navigation order, which follows it
        found = []
        for rows in [api.get_submissions(ASSIGNMENT)] + [api.get_notebook_submissions(ASSIGNMENT, n) for n in NAMES]:
            found.append(sorted(({k: v for k, v in r.items() if k not in drop} for r in rows if r["student"] in STUDENTS),
                                key=lambda r: r["student"]))
        return found

    lite = Config({"CourseDirectory": {"root": str(graded.ours), "course_id": "autograd-workbook"}})
    pg = shown(load_config(scenario.course / "nbgrader_config.py"))
    assert [r["student"] for r in pg[0]] == sorted(STUDENTS) and pg[0][1]["score"] > 0
    assert pg == shown(lite)


def test_cluster_with_unsafe_no_sandbox_is_refused_in_one_line(capsys):
    from autograder.cli import main

    assert main(["grade", ASSIGNMENT, "--cluster", "tcp://127.0.0.1:1", "--unsafe-no-sandbox"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("autograder: error: --cluster grades only in the sandbox") and err.count("\n") == 1


def test_an_unreachable_scheduler_is_a_one_line_grading_error():
    dask = pytest.importorskip("dask")
    from autograder.grading.grade.cluster import connect
    from autograder.grading.types import GradingError

    with dask.config.set({"distributed.comm.timeouts.connect": "0.5s"}), pytest.raises(GradingError) as caught:
        connect("tcp://127.0.0.1:1", 0)
    assert str(caught.value).startswith("cannot reach the Dask scheduler tcp://127.0.0.1:1: ") and "\n" not in str(caught.value)


def test_a_cluster_class_that_cannot_be_loaded_is_a_one_line_grading_error():
    pytest.importorskip("distributed")
    from autograder.grading.grade.cluster import connect
    from autograder.grading.types import GradingError

    with pytest.raises(GradingError, match=r"^--cluster no_such_module:SLURMCluster: cannot load SLURMCluster from no_such_module"):
        connect("no_such_module:SLURMCluster", 4)


@pytest.mark.slow
def test_a_cluster_class_is_started_scaled_to_jobs_and_handed_back_for_closing():
    pytest.importorskip("distributed")
    from autograder.grading.grade.cluster import connect

    client, cluster = connect("distributed:LocalCluster", 1)  # as dask_jobqueue:SLURMCluster would be, from Dask's config
    try:
        client.wait_for_workers(1, timeout=60)
        assert cluster is not None and len(cluster.worker_spec) == 1
        assert client.scheduler.address == cluster.scheduler_address
    finally:
        client.close()
        cluster.close()


def test_a_missing_scheduler_file_is_named_as_such(tmp_path):
    pytest.importorskip("distributed")
    from autograder.grading.grade.cluster import connect
    from autograder.grading.types import GradingError

    with pytest.raises(GradingError, match=r"^--cluster .*scheduler\.json: no such scheduler file"):
        connect(str(tmp_path / "scheduler.json"), 0)


def _shared() -> Any:
    from autograder.grading.discover.assignment import NotebookSpec
    from autograder.grading.grade.pipeline import Shared
    from autograder.settings import Limits, Tolerance

    return Shared({"engine": NotebookSpec("engine")}, Limits(), Tolerance(), b"\0" * 32)


def test_a_job_carries_the_notebook_as_bytes_and_unreadable_bytes_come_back_as_the_reason():
    from autograder.grading.grade.cluster import Job, grade_job

    result = grade_job(Job("ada", "engine", b'{"cells": [', {}), _shared())
    assert result.graded is None and result.why is not None and result.why.code is Code.UNREADABLE
    assert result.why.text.startswith("the notebook is not valid JSON")


def test_a_worker_whose_sandbox_is_gone_for_good_gives_the_notebook_back_instead_of_grading_it_zero(monkeypatch):
    from autograder.grading.grade import cluster

    def gone() -> None:
        raise client.Unavailable("bubblewrap is not installed")

    monkeypatch.setattr(client.MODE.pool, "current", gone)
    with pytest.raises(cluster.SandboxLost, match="cannot start again: bubblewrap is not installed"):
        empty = nbformat.writes(nbformat.v4.new_notebook()).encode()
        cluster.grade_job(cluster.Job("ada", "engine", empty, {}), _shared())


def test_what_every_worker_is_sent_once_holds_the_settings_as_values_never_the_course_config() -> None:
    import pickle

    from traitlets.config import Config

    from autograder.grading.grade.pipeline import Shared
    from autograder.settings import Limits, Tolerance

    config = Config({"Limits": {"cell_timeout": 7.0}, "CourseDirectory": {"db_url": "postgresql://u:S3cretPW@db/course"}})
    sent = pickle.dumps(Shared({}, Limits(config=config), Tolerance(config=config), b"k" * 32))
    assert b"S3cretPW" not in sent and b"CourseDirectory" not in sent
    got = pickle.loads(sent)
    assert (got.limits.cell_timeout, got.secret, got.clock) == (7.0, b"k" * 32, None)


@pytest.mark.slow
def test_the_shared_data_outlives_every_worker_that_held_it_and_only_a_grading_worker_fetches_it():
    """Scattered data died with its last holder, and every task that needed it was cancelled ("already forgotten"):
    the run's Shared is held by the scheduler, so a worker started after all the others died still gets it."""
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster, Variable

    from autograder.grading.grade import cluster

    def held(run: str) -> bool:
        module = sys.modules.get("autograder.grading.grade.cluster")
        return module is not None and run in module._held

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as lc, Client(lc) as client:
        client.wait_for_workers(2, timeout=60)
        first, idle = sorted(client.scheduler_info()["workers"])
        workers = cluster.Workers(client, "run-1", print)
        workers.able = {first: "here"}
        pool = cluster.DaskPool(client, _shared(), workers, "run-1", ASSIGNMENT)
        try:
            got = client.submit(cluster.shared_of, "run-1", workers=[first], pure=False).result(timeout=60)
            assert got.secret == b"\0" * 32 and set(got.notebooks) == {"engine"}
            assert client.run(held, "run-1") == {first: True, idle: False}  # a worker that grades nothing holds nothing
            client.restart(timeout=60)  # every worker process dies; new ones take their place, holding nothing
            client.wait_for_workers(2, timeout=60)
            again = client.submit(cluster.shared_of, "run-1", pure=False).result(timeout=60)
            assert again.secret == b"\0" * 32
        finally:
            pool.stop()
            pool.close()
        deadline = time.monotonic() + 30  # the run is over: the scheduler forgets its Shared (told asynchronously)
        with pytest.raises(TimeoutError):
            while time.monotonic() < deadline:
                Variable(cluster.SHARED_VARIABLE.format(run="run-1"), client=client).get(timeout=0.2)
                time.sleep(0.1)


@pytest.fixture
def as_the_command_starts(monkeypatch):
    """cli.warm_for as `python -m autograder grade` runs it, but leaving this process's nbgrader import as it is."""
    from autograder.grading.grade import nbgrader_light

    monkeypatch.setattr(nbgrader_light, "lean_start", lambda: None)


def test_the_command_line_connects_to_the_cluster_it_names_once_and_grading_takes_that_connection(as_the_command_starts):
    pytest.importorskip("distributed")
    import dask

    from autograder.grading.grade import cluster

    with dask.config.set({"distributed.comm.timeouts.connect": "0.5s"}):
        warm_for(["grade", "workbook", "--jobs", "3", "--cluster=tcp://127.0.0.1:1", "--no-progress"])
        early = cluster._early
        assert early is not None and (early.target, early.jobs) == ("tcp://127.0.0.1:1", 3)
        with cluster.connection("tcp://127.0.0.1:1", 3) as taken:
            assert taken is early and cluster._early is None
            with pytest.raises(Exception, match=r"^cannot reach the Dask scheduler tcp://127\.0\.0\.1:1: "):
                taken.get()  # its error reaches the driver's thread, as one line


def test_a_connection_started_for_another_target_is_closed_and_a_new_one_made(as_the_command_starts):
    pytest.importorskip("distributed")
    from autograder.grading.grade import cluster

    warm_for(["grade", "workbook", "--cluster", "tcp://127.0.0.1:1"])
    early = cluster._early
    with cluster.connection("tcp://127.0.0.1:2", 0) as other:
        assert other is not early and early is not None and early.closed
    assert other.closed


def test_the_command_line_starts_no_connection_for_unsafe_blank_or_refused_cluster_options(as_the_command_starts):
    from autograder.grading.grade import cluster

    for argv in (["grade", "workbook", "--cluster", "tcp://127.0.0.1:1", "--unsafe-no-sandbox"],
                 ["grade", "workbook", "--cluster", " "], ["grade", "workbook", "--cluster"],
                 ["grade", "workbook", "--cluster", "tcp://127.0.0.1:1", "--jobs", "-1"],
                 ["grade", "workbook", "--cluster", "tcp://127.0.0.1:1", "--help"]):
        warm_for(argv)
        assert cluster._early is None


def test_a_server_that_never_answers_is_a_one_line_grading_error_at_its_deadline_and_closing_does_not_wait():
    pytest.importorskip("distributed")
    import socket

    import dask

    from autograder.grading.grade import cluster
    from autograder.grading.types import GradingError

    with socket.create_server(("127.0.0.1", 0)) as silent, dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        target = f"tcp://127.0.0.1:{silent.getsockname()[1]}"  # takes the connection, never says a word (no scheduler)
        connecting = cluster.Connection(target, 0)
        connecting.close()
        assert connecting.thread.is_alive()  # close did not wait for it
        with pytest.raises(GradingError) as caught:
            cluster.Connection(target, 0).get()
    assert str(caught.value) == f"the Dask scheduler {target} did not answer within 2 s (is it the address of a Dask scheduler?)"
