"""`grade --cluster`: each notebook graded end to end by a Dask worker (its own sandbox + the judge); the driver writes.

What travels to a worker, as task data: the notebook's bytes and the submission's other files (never a shared
folder), the notebook's spec, the grading settings, and the course secret. Grading tasks need one unit of the
worker resource `autograder-sandbox`, which a worker gives itself only once its sandbox has started (the
`SandboxCheck` plugin): a worker that cannot sandbox learner code gets no task, and so never sees the secret.
The scheduler re-runs the notebook of a worker that dies (`distributed.scheduler.allowed-failures`); the driver
takes exactly one result per notebook and alone writes the gradebook, the autograded notebooks and the resume state.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import re
import socket
import sys
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..settings import Limits, Tolerance
from . import sandbox  # standard library only: a worker that cannot sandbox loads nothing else of the grader

try:
    from distributed import WorkerPlugin
except ImportError:  # the `cluster` extra is not installed: `connect` says so
    WorkerPlugin = object  # type: ignore[assignment,misc]

if TYPE_CHECKING:
    from distributed import Client

    from .batch import Course, Item, Options, Row
    from .runner import Graded
    from .source import NotebookSpec
    from .store import State

RESOURCE = "autograder-sandbox"  # held by a worker whose sandbox started; each grading task takes one unit
TOPIC = "autograder-sandbox"  # the scheduler's event log where each worker says whether its sandbox started
WAIT_FOR_WORKER = 300.0  # seconds to wait for a first worker with a sandbox (batch schedulers queue jobs a while)
RETRIES = 1  # a task that raised (a grader bug, a lost connection) is tried once more elsewhere
CLASS_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")  # module:Class, e.g. dask_jobqueue:SLURMCluster


@dataclass(frozen=True)
class Job:
    """One notebook as data: everything a worker needs to grade it, nothing that points into the course folder."""

    student: str
    notebook: str
    data: bytes  # the submitted notebook file
    files: dict[str, str]  # the submission's other files, as `Submission.other_files` gives them
    flags: tuple[str, ...] = ()  # the submission's refused files, named (batch.prepare)


def settings_of(configurable: Limits | Tolerance) -> dict[str, Any]:
    """A Limits or Tolerance as plain values (the course's config file itself never travels)."""
    return {name: getattr(configurable, name) for name in configurable.trait_names(config=True)}


class SandboxLost(Exception):
    """This worker's sandbox stopped and cannot start again: the notebook goes to another worker (Dask's retries)."""


def grade_job(job: Job, spec: NotebookSpec, other_ids: dict[str, str], limits: dict[str, Any],
              tolerance: dict[str, Any], secret: bytes) -> Graded | str:
    """On a worker: parse, sanitize, run in this worker's sandbox and judge one notebook; a str says why it is unreadable."""
    from .batch import grade_notebook  # batch imports this module lazily; no cycle at import time
    from .sanitize import Unreadable, parse_submission

    try:
        nb = parse_submission(job.data)
    except Unreadable as exc:
        return str(exc)
    try:  # a worker whose sandbox died for good must not grade its notebooks 0: it gives them back, and its slots
        sandbox.MODE.pool.current()
    except Exception as exc:
        _withdraw(str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__)
        raise SandboxLost(f"the grading sandbox of this worker stopped and cannot start again: {exc}") from None
    try:
        return grade_notebook(nb, spec, Limits(**limits), Tolerance(**tolerance), job.files, other_ids, secret, job.flags)
    except Unreadable as exc:
        return str(exc)


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


class SandboxCheck(WorkerPlugin):
    """On each worker: start its sandbox; only if it starts, offer `autograder-sandbox` slots (one per thread)."""

    name = "autograder-sandbox"

    def __init__(self, run: str, version: str) -> None:
        self.run, self.version = run, version  # the driver's run and grader version

    async def setup(self, worker: Any) -> None:
        """Start the sandbox (or say why not) and set this worker's slots; runs on every worker, joining later too."""
        error = sandbox.unavailable_reason() or ""  # first: such a worker never loads the rest of the grader
        if not error:
            from .batch import GRADER_VERSION

            if GRADER_VERSION != self.version:
                error = f"grader {GRADER_VERSION} here, {self.version} on the driver: install the same version"
        if not error:
            try:
                sandbox.MODE.unsafe = False
                sandbox.MODE.pool.warm()  # in the worker's long-lived event-loop thread: bwrap dies with its parent thread
                await asyncio.get_running_loop().run_in_executor(None, sandbox.MODE.pool.current)
            except Exception as exc:  # Unavailable, or anything else: this worker grades nothing
                error = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        await worker.set_resources(**{RESOURCE: 0 if error else worker.state.nthreads})
        worker.log_event(TOPIC, {"run": self.run, "worker": worker.address, "host": socket.gethostname(), "error": error})
        # no teardown: the sandbox serves the next run too, and dies with the worker process (bwrap --die-with-parent)


def connect(target: str, jobs: int) -> tuple[Client, Any]:
    """A client of the cluster named by `target` (address, scheduler file, or module:Cluster configured by Dask's config)."""
    from .source import GradingError

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
        from .source import GradingError

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


def grade_on_cluster(todo: list[tuple[Item, str]], spec: Any, course: Course, options: Options, limits: Limits,
                     tolerance: Tolerance, state: State, secret: bytes) -> list[Row]:
    """Grade `todo` on the cluster; store each result here as it arrives, with the progress bar of a local run."""
    from tqdm import tqdm

    from .batch import NOT_GRADED, Row, _store_group, not_graded, prepare, unreadable
    from .runner import Graded
    from .source import GradingError
    from .submission import Unreadable

    rows: list[Row] = []
    if not todo:
        return rows
    if options.unsafe_no_sandbox:
        raise GradingError("--cluster grades only in the sandbox (--unsafe-no-sandbox is for one machine)")
    from distributed import as_completed
    from nbgrader.api import Gradebook

    client, own_cluster = connect(options.cluster or "", options.jobs)
    run = uuid.uuid4().hex[:12]
    bar = tqdm(total=len(todo), unit="nb", desc=f"grading {options.assignment} on the cluster", file=sys.stderr,
               disable=not options.progress, dynamic_ncols=True)
    workers = Workers(client, run, lambda line: tqdm.write(line, file=sys.stderr))
    owners = {name: nb for nb, s in spec.notebooks.items() for name in s.cells}
    settings = (settings_of(limits), settings_of(tolerance))
    release = {name: course.release(options.assignment) / f"{name}.ipynb" for name in spec.notebooks}
    pending = iter(todo)
    flying: dict[Any, tuple[Item, str]] = {}
    results = as_completed(with_results=False)
    try:
        from .batch import GRADER_VERSION

        client.register_plugin(SandboxCheck(run, GRADER_VERSION), name=SandboxCheck.name)
        workers.wait_for_one()
        window, sized = 2, 0.0
        with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gb:
            gb.db().expire_on_commit = False  # as in a local run: the assignment's cells stay loaded across commits

            def store(group: list[tuple[Item, str, Graded]]) -> None:
                rows.extend(_store_group(gb, course, options.assignment, group, state))
                bar.update(len(group))

            def submit_more() -> None:
                # a bounded window in flight: the driver never holds 120,000 notebooks in memory at once
                nonlocal window, sized
                if time.monotonic() - sized > 2.0:
                    window, sized = max(2, 2 * workers.slots()), time.monotonic()
                while len(flying) < window:
                    nxt = next(pending, None)
                    if nxt is None:
                        return
                    item, fp = nxt
                    nb_spec = spec.notebooks[item.notebook]
                    try:  # read here exactly as a local run reads it (batch.prepare), inside the notebook's boundary
                        prepared = prepare(item, limits)
                    except Unreadable as exc:  # missing, empty, too big, refused: no worker needed to say so
                        store([(item, fp, unreadable(release[item.notebook], nb_spec, exc))])
                        continue
                    except Exception as exc:  # a grader bug reading one submission must not lose the rest of the batch
                        store([(item, fp, not_graded(release[item.notebook], nb_spec, f"grader error {type(exc).__name__}: {exc}"))])
                        continue
                    job = Job(item.student, item.notebook, prepared.data, prepared.files, tuple(prepared.flags))
                    others = {g: nb for g, nb in owners.items() if nb != item.notebook}
                    future = client.submit(grade_job, job, nb_spec, others, *settings, secret, resources={RESOURCE: 1},
                                           retries=RETRIES, key=f"grade-{options.assignment}/{item.label}-{run}")
                    flying[future] = (item, fp)
                    results.add(future)

            submit_more()
            while flying:
                group = []  # every result in by now: one gradebook commit and one state write for all of them
                for future in results.next_batch(block=True):
                    item, fp = flying.pop(future)
                    try:
                        outcome = future.result()
                    except Exception as exc:  # lost by the cluster (KilledWorker, SandboxLost, a grader bug) after its
                        # retries: nothing is stored, so the next run grades it again; the row says so
                        why = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
                        rows.append(Row(item.student, item.notebook, 0.0, spec.notebooks[item.notebook].max_score,
                                        NOT_GRADED, reason=f"not graded on the cluster ({why}); the next run grades it again"))
                        bar.update(1)
                    else:
                        group.append((item, fp, outcome if isinstance(outcome, Graded) else not_graded(
                            release[item.notebook], spec.notebooks[item.notebook], outcome)))
                    future.release()
                if group:
                    store(group)
                workers.poll()
                submit_more()
        workers.poll(every=0.0)
    except OSError as exc:  # the scheduler went away (CommClosedError is an OSError): what is stored stays stored
        raise GradingError(f"lost the Dask scheduler {options.cluster} ({type(exc).__name__}: {str(exc)[:200]}); "
                           "run the same command again to grade the rest") from None
    finally:
        bar.close()
        if flying:
            client.cancel(list(flying))
        client.close()
        if own_cluster is not None:
            own_cluster.close()
    return rows
