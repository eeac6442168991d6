"""`grade --cluster`: each notebook graded end to end by a Dask worker (its own sandbox + the judge); the driver writes.

What travels to a worker, as task data: the notebook's bytes and the submission's other files (never a shared
folder), the notebook's spec, the grading settings, and the course secret. Grading tasks need one unit of the
worker resource `autograder-sandbox`, which a worker gives itself only once its sandbox has started (the
`SandboxCheck` plugin): a worker that cannot sandbox learner code gets no task, and so never sees the secret.
The scheduler re-runs the notebook of a worker that dies (`distributed.scheduler.allowed-failures`); the driver
takes exactly one result per notebook and alone writes the gradebook, the autograded notebooks and the resume
journal (`store.writer.Writer`, the same writer as a local run's, through `dask_pool`).

`DaskPool` is the executor: the driver runs `pipeline.READ` (the course folder is there), a worker runs
`pipeline.GRADE` in its own long-lived sandbox (warm across notebooks). What every notebook shares (`Shared`: the
specs, settings and secret) is sent once per worker, not with each task: the driver leaves it with the scheduler (a
Dask `Variable` of the run) and the first grading task of the run on each worker fetches it from there and keeps it.
So only a worker that grades ever holds it, and a worker that dies loses nothing another worker needs (scattered
data, held by workers alone, was lost with its last holder, and every task that needed it with it). A worker sends
back the graded notebook's rendered file, not the notebook object; results come back in batches, one gather for every
task finished since the last.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib
import os
import pickle
import re
import socket
import sys
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...lines import one_line  # standard library only
from ..types import Code, GradingError, Reason, Result
from .sandbox.bwrap import unavailable_reason  # standard library only: a worker that cannot sandbox loads nothing else
from .sandbox.client import MODE  # (standard library only too)

try:
    from distributed import WorkerPlugin
except ImportError:  # the `cluster` extra is not installed: `connect` says so
    WorkerPlugin = object  # type: ignore[assignment,misc]

if TYPE_CHECKING:
    from distributed import Client

    from ..types import Task
    from .pipeline import Shared

RESOURCE = "autograder-sandbox"  # held by a worker whose sandbox started; each grading task takes one unit
TOPIC = "autograder-sandbox"  # the scheduler's event log where each worker says whether its sandbox started
WAIT_FOR_WORKER = 300.0  # seconds to wait for a first worker with a sandbox (batch schedulers queue jobs a while)
WINDOW_PER_THREAD = 4  # tasks in flight per grading slot (as executors.LocalPool keeps per thread)
RETRIES = 1  # a task that raised (a grader bug, a lost connection) is tried once more elsewhere
SHARED_VARIABLE = "autograder-shared-{run}"  # the Dask Variable (held by the scheduler) with a run's pickled Shared
SHARED_TIMEOUT = 120.0  # seconds a worker waits for the scheduler to hand it the run's Shared
RUNS_HELD = 4  # runs whose Shared a worker keeps (drivers grading several assignments on one cluster at once)
CLASS_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")  # module:Class, e.g. dask_jobqueue:SLURMCluster


@dataclass(frozen=True)
class Job:
    """One notebook as data: everything a worker needs to grade it, nothing that points into the course folder."""

    student: str
    notebook: str
    data: bytes  # the submitted notebook file
    files: dict[str, str]  # the submission's other files, as `Submission.other_files` gives them
    flags: tuple[str, ...] = ()  # the submission's refused files, named (pipeline.read_submission)


class SandboxLost(Exception):
    """This worker's sandbox stopped and cannot start again: the notebook goes to another worker (Dask's retries)."""


def grade_job(job: Job, shared: Shared) -> Result:
    """On a worker: `pipeline.GRADE` in this worker's sandbox; an unreadable notebook's result says why."""
    from pathlib import Path

    from ..types import Item, Submitted, Task
    from . import pipeline

    task = Task(Item(job.student, job.notebook, Path(f"{job.notebook}.ipynb")), "")  # the driver knows the real one
    work = pipeline.Work(task.item, Submitted(job.data, job.files, list(job.flags)))
    first, rest = pipeline.GRADE[:1], pipeline.GRADE[1:]  # parse_notebook: bytes that are no notebook need no sandbox
    result = pipeline.grade(task, shared, first, work)
    if result.graded is None and result.why is not None:
        return result
    try:  # a worker whose sandbox died for good must not grade its notebooks 0: it gives them back, and its slots
        MODE.pool.current()
    except Exception as exc:
        _withdraw(one_line(exc)[:300] if str(exc) else type(exc).__name__)
        raise SandboxLost(f"the grading sandbox of this worker stopped and cannot start again: {exc}") from None
    result = pipeline.grade(task, shared, rest, work)
    if result.graded is not None and result.graded.data is not None:
        result.graded.nb = None  # its file is rendered: the notebook object need not travel back too
    return result


_held: OrderedDict[str, Shared] = OrderedDict()  # on a worker: run -> its Shared, the most recent runs only
_held_lock = threading.Lock()


def shared_of(run: str) -> Shared:
    """On a worker: the run's `Shared`, fetched from the scheduler by the run's first task here, kept for the rest."""
    with _held_lock:  # the worker's threads: one fetch per run
        if run not in _held:
            from distributed import Variable

            _held[run] = pickle.loads(Variable(SHARED_VARIABLE.format(run=run)).get(timeout=SHARED_TIMEOUT))
            while len(_held) > RUNS_HELD:
                _held.popitem(last=False)  # an older run's secret is not kept longer than needed
        _held.move_to_end(run)
        return _held[run]


def grade_task(job: Job, run: str) -> Result:
    """The cluster's task: `grade_job` with the run's `Shared` (fetched once per worker, see `shared_of`)."""
    return grade_job(job, shared_of(run))


def _withdraw(error: str) -> None:
    """From a task: this worker offers no more grading slots, and says why in the run's event log."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):  # not on a Dask worker (a test calling grade_job directly)
        return
    plugin = worker.plugins.get(SandboxCheck.name)
    worker.loop.add_callback(worker.set_resources, **{RESOURCE: 0})
    worker.log_event(TOPIC, {"run": getattr(plugin, "run", ""), "worker": worker.address, "host": socket.gethostname(),
                             "error": error})


def load_grader() -> None:
    """Import the grading side here once, as the command line's start-up does (autograder/__main__.py): without the
    import-time work a batch never uses. Else the first task imports it all (unpickling the run's `Shared`),
    jsonschema's IRI grammar included, while both sandboxes preload.

    Process-wide, as on the driver: jsonschema in this worker checks no "iri" or "duration" string format, and
    `nbgrader` is imported without its package `__init__` (its server extensions); nothing the grader runs uses them.
    """
    from .nbgrader_light import lean_start

    lean_start()
    importlib.import_module(f"{__package__}.pipeline")
    from .bounded import HELPERS

    HELPERS.warm()  # the helpers that read and render notebooks (bounded.py): their zygote imports meanwhile


class SandboxCheck(WorkerPlugin):
    """On each worker: start its sandbox; only if it starts, offer `autograder-sandbox` slots (one per thread)."""

    name = "autograder-sandbox"

    def __init__(self, run: str, version: str) -> None:
        self.run, self.version = run, version  # the driver's run and grader version

    async def setup(self, worker: Any) -> None:
        """Start the sandbox (or say why not) and set this worker's slots; runs on every worker, joining later too."""
        t0 = time.perf_counter()
        seconds: dict[str, float] = {}  # what this run's start cost here (a warm worker's is ~0): benchmarks read it
        error = unavailable_reason() or ""  # first: such a worker never loads the rest of the grader
        if not error:
            from ..types import GRADER_VERSION

            if GRADER_VERSION != self.version:
                error = f"grader {GRADER_VERSION} here, {self.version} on the driver: install the same version"
        if not error:
            try:
                MODE.unsafe = False
                starting = MODE.pool.box is None  # (a worker's sandbox serves every run after its first)
                MODE.pool.warm()  # in the worker's long-lived event-loop thread: bwrap dies with its parent thread
                loop = asyncio.get_running_loop()
                await loop.run_in_executor(None, load_grader)  # while the sandbox preloads, not in the first task
                seconds["imports"] = time.perf_counter() - t0
                box = await loop.run_in_executor(None, MODE.pool.current)
                seconds["sandbox"] = box.started if starting else 0.0
            except Exception as exc:  # Unavailable, or anything else: this worker grades nothing
                error = one_line(exc)[:300] if str(exc) else type(exc).__name__
        seconds["setup"] = time.perf_counter() - t0
        await worker.set_resources(**{RESOURCE: 0 if error else worker.state.nthreads})
        worker.log_event(TOPIC, {"run": self.run, "worker": worker.address, "host": socket.gethostname(), "error": error,
                                 "seconds": seconds})
        # no teardown: the sandbox serves the next run too, and dies with the worker process (bwrap --die-with-parent)


def connect(target: str, jobs: int) -> tuple[Client, Any]:
    """A client of the cluster named by `target` (address, scheduler file, or module:Cluster configured by Dask's config)."""
    try:
        from distributed import Client
    except ImportError:
        raise GradingError("--cluster needs Dask: pip install 'autograd-workbook[cluster]'") from None
    cluster = None
    try:
        if CLASS_TARGET.match(target):
            module, name = target.split(":")
            try:
                cluster = getattr(importlib.import_module(module), name)()  # every parameter from the Dask config
            except (ImportError, AttributeError) as exc:
                raise GradingError(f"--cluster {target}: cannot load {name} from {module} ({exc})") from None
            if jobs:
                cluster.scale(jobs)
            return Client(cluster), cluster
        if os.path.isfile(target):
            return Client(scheduler_file=target), None
        if "://" not in target and (target.endswith((".json", ".yaml", ".yml")) or os.sep in target):
            raise GradingError(f"--cluster {target}: no such scheduler file (and not an address such as "
                               "tcp://host:8786, nor module:ClusterClass)")
        return Client(target), None
    except GradingError:
        raise
    except Exception as exc:
        if cluster is not None:
            cluster.close()
        raise GradingError(f"cannot reach the Dask scheduler {target}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}") from None


class Workers:
    """What the cluster's workers said about their sandboxes in this run; refusals are reported once each."""

    def __init__(self, client: Client, run: str, report: Any) -> None:
        self.client, self.run, self.report = client, run, report
        self.able: dict[str, str] = {}  # address -> host
        self.refused: dict[str, str] = {}  # address -> why
        self.checked = 0.0

    def poll(self, every: float = 2.0) -> None:
        """Read the new sandbox reports (at most once per `every` seconds); report each worker that refused."""
        if time.monotonic() - self.checked < every:
            return
        self.checked = time.monotonic()
        for _, msg in self.client.get_events(TOPIC):
            if not isinstance(msg, dict) or msg.get("run") != self.run:
                continue
            address, error = str(msg.get("worker")), str(msg.get("error") or "")
            if error and address not in self.refused:
                self.refused[address] = error
                self.able.pop(address, None)
                self.report(f"autograder: worker {address} on {msg.get('host')} cannot start its grading sandbox and "
                            f"takes no work: {error}")
            elif not error:
                self.able[address] = str(msg.get("host"))

    def wait_for_one(self, timeout: float = WAIT_FOR_WORKER) -> None:
        """Return once a worker has its sandbox; GradingError when every worker refused, or none came in time."""
        deadline = time.monotonic() + timeout
        while True:
            self.poll(every=0.0)
            if self.able:
                return
            present = set(self.client.scheduler_info(n_workers=-1).get("workers", {}))
            if present and present <= set(self.refused):
                raise GradingError("no worker of the cluster could start its grading sandbox: "
                                   + "; ".join(f"{a}: {e}" for a, e in list(self.refused.items())[:3]))
            if time.monotonic() > deadline:
                raise GradingError(f"no worker with a grading sandbox joined the cluster within {timeout:g} s")
            time.sleep(0.2)

    def slots(self) -> int:
        """Grading slots the cluster offers now (sum of the resource over its workers)."""
        workers = self.client.scheduler_info(n_workers=-1).get("workers", {}).values()
        return int(sum(w.get("resources", {}).get(RESOURCE, 0) for w in workers))


class DaskPool:
    """The Dask executor: READ here, GRADE on a sandboxed worker; results gathered back in batches."""

    def __init__(self, client: Client, shared: Shared, workers: Workers, run: str, assignment: str) -> None:
        from distributed import Variable, as_completed

        self.client, self.shared, self.workers, self.run, self.assignment = client, shared, workers, run, assignment
        self.flying: dict[Any, tuple[Future[Result], Task, str | None]] = {}  # dask future -> ours, task, timestamp
        self.lock = threading.Lock()
        self.done = as_completed(with_results=False)
        self._slots, self._sized = 1, 0.0
        self.variable = Variable(SHARED_VARIABLE.format(run=run), client=client)
        self.variable.set(pickle.dumps(shared))  # bytes, held by the scheduler: no worker has it until it grades
        self._stop = threading.Event()
        self.collector = threading.Thread(target=self._collect, name="dask-results", daemon=True)
        self.collector.start()

    def submit(self, task: Task) -> Future[Result]:
        """Read the notebook here (as a local run reads it), then send it to a worker with a free sandbox slot."""
        from ..discover.submission import Unreadable
        from . import pipeline

        ours: Future[Result] = Future()
        item = task.item
        work = pipeline.Work(item)
        try:
            pipeline.run_steps(pipeline.READ, work, self.shared)
        except Unreadable as exc:  # missing, empty, too big, refused: no worker needed to say so
            ours.set_result(pipeline.unreadable(task, exc, work.timestamp))
            return ours
        except Exception as exc:  # a grader bug reading one submission must not lose the rest of the batch
            ours.set_result(Result(task, None, Reason(Code.GRADER_ERROR, f"grader error {type(exc).__name__}: {exc}"),
                                   timestamp=work.timestamp))
            return ours
        assert work.submitted is not None
        job = Job(item.student, item.notebook, work.submitted.data, work.submitted.files, tuple(work.submitted.flags))
        future = self.client.submit(grade_task, job, self.run, resources={RESOURCE: 1}, retries=RETRIES, pure=False,
                                    key=f"grade-{self.assignment}/{item.label}-{self.run}")
        with self.lock:
            self.flying[future] = (ours, task, work.timestamp)
        self.done.add(future)
        return ours

    def _collect(self) -> None:
        """Hand results back as they come, a batch at a time: one gather for every task finished since the last."""
        while not self._stop.is_set():
            if self.done.is_empty():
                self._stop.wait(0.05)
                continue
            try:
                batch = self.done.next_batch(block=True)
            except StopIteration:
                continue
            finished = [f for f in batch if f.status == "finished"]
            try:
                values = dict(zip(finished, self.client.gather(finished))) if finished else {}
            except Exception:  # gathered one by one below
                values = {}
            for future in batch:
                with self.lock:
                    ours, task, timestamp = self.flying.pop(future)
                try:
                    result = values[future] if future in values else future.result()
                    result = dataclasses.replace(result, task=task, timestamp=timestamp)
                except Exception as exc:  # lost by the cluster (KilledWorker, SandboxLost, a grader bug) after its
                    # retries: nothing is stored, so the next run grades it again; the row says so
                    why = f"{type(exc).__name__}: {one_line(exc)[:200]}"
                    result = Result(task, None, Reason(Code.CLUSTER_LOST,
                                                       f"not graded on the cluster ({why}); the next run grades it again"))
                future.release()
                ours.set_result(result)

    def window(self) -> int:
        """Four tasks per grading slot in flight (the slots asked again every 2 s): each slot has its next notebooks
        queued while the driver stores, and the driver never holds 120,000 notebooks in memory at once."""
        self.workers.poll()
        if time.monotonic() - self._sized > 2.0:
            self._slots, self._sized = max(1, self.workers.slots()), time.monotonic()
        return WINDOW_PER_THREAD * self._slots

    def stop(self) -> None:
        """Cancel what is in flight."""
        self._stop.set()
        with self.lock:
            pending = list(self.flying)
        if pending:
            self.client.cancel(pending)

    def close(self) -> None:
        """Stop collecting (after the writer took every result); the scheduler forgets the run's Shared."""
        self._stop.set()
        self.collector.join(5)
        with contextlib.suppress(Exception):  # the scheduler may be gone already: it held the Variable in memory only
            self.variable.delete()


def connect_deadline() -> float:
    """Seconds the driver waits for its client to connect: twice Dask's own connect timeout (its handshake has none)."""
    import dask
    from dask.utils import parse_timedelta

    return 2 * float(parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), default="s") or 30)


class Connection:
    """A client of the cluster, connected and the sandbox check registered in a thread from the command's start, so the
    workers import the grader and start their sandboxes while the driver imports the rest and reads the course."""

    def __init__(self, target: str, jobs: int) -> None:
        self.target, self.jobs, self.run = target, jobs, uuid.uuid4().hex[:12]
        self.client: Client | None = None
        self.cluster: Any = None
        self.error: BaseException | None = None
        self.closed = False
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._connect, name="dask-connect", daemon=True)
        self.thread.start()

    def _connect(self) -> None:
        from ..types import GRADER_VERSION

        try:
            client, cluster = connect(self.target, self.jobs)
            with self.lock:
                self.client, self.cluster = client, cluster
                if self.closed:  # the command ended (an error, nothing to grade) before the scheduler answered
                    self._close_locked()
                    return
            client.register_plugin(SandboxCheck(self.run, GRADER_VERSION), name=SandboxCheck.name)
        except BaseException as exc:  # raised in the driver's thread by `get`
            self.error = exc

    def get(self) -> Client:
        """The connected client, once the workers have been asked to start their sandboxes; its error if it failed."""
        deadline = connect_deadline()
        self.thread.join(deadline)
        if self.thread.is_alive():  # a server that takes the connection and never answers (not a Dask scheduler)
            self.close()
            raise GradingError(f"the Dask scheduler {self.target} did not answer within {deadline:g} s (is it the "
                               "address of a Dask scheduler?)")
        if self.error is not None:
            raise self.error
        assert self.client is not None
        return self.client

    def _close_locked(self) -> None:
        client, cluster, self.client, self.cluster = self.client, self.cluster, None, None
        if client is not None:
            with contextlib.suppress(Exception):  # the scheduler may be gone already
                client.close()
        if cluster is not None:
            cluster.close()

    def close(self) -> None:
        """Close the client (and a cluster started here); one still connecting closes itself once it connects."""
        with self.lock:
            self.closed = True
            self._close_locked()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_early: Connection | None = None


def start_early(target: str, jobs: int) -> None:
    """From the command line's start (cli.warm_for): connect to the `--cluster` of `grade` at once (a blank target is
    refused later, by grade_command)."""
    global _early
    if target.strip() and jobs >= 0:
        _early = Connection(target, jobs)


def connection(target: str, jobs: int) -> Connection:
    """The connection to `target` started with the command (when it asked for this one), else a new one."""
    global _early
    early, _early = _early, None
    if early is not None and (early.target, early.jobs) == (target, jobs):
        return early
    if early is not None:
        early.close()
    return Connection(target, jobs)


@contextlib.contextmanager
def dask_pool(connection: Connection, shared: Shared, assignment: str) -> Iterator[DaskPool]:
    """The connection's cluster as an executor, once a worker has its sandbox; the writer grades through it. Losing
    the scheduler meanwhile (CommClosedError is an OSError) is a GradingError: what is stored stays stored."""
    from tqdm import tqdm

    pool = None
    try:
        client = connection.get()
        workers = Workers(client, connection.run, lambda line: tqdm.write(line, file=sys.stderr))
        workers.wait_for_one()
        pool = DaskPool(client, shared, workers, connection.run, assignment)
        yield pool
        workers.poll(every=0.0)
    except OSError as exc:
        raise GradingError(f"lost the Dask scheduler {connection.target} ({type(exc).__name__}: {str(exc)[:200]}); "
                           "run the same command again to grade the rest") from None
    finally:
        if pool is not None:
            pool.stop()
            pool.close()
