"""Where notebooks are graded: `LocalPool` (threads here, each driving a sandboxed worker process). The Dask
executor is `cluster.DaskPool`. Both take a `Task` and hand back a future of its `Result` (`writer.Executor`)."""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from ..types import Result, Task
from . import pipeline
from .pipeline import Shared


class Executor(Protocol):
    """Grades tasks somewhere (local threads, a Dask cluster): `submit` hands back a future of the task's result."""

    def submit(self, task: Task) -> Future[Result]:
        """Start grading one task."""
        ...

    def window(self) -> int:
        """How many tasks to keep in flight (the rest wait in the writer, not in memory elsewhere)."""
        ...

    def stop(self) -> None:
        """Stop at once: the run is being interrupted."""
        ...


WINDOW_PER_THREAD = 4  # tasks in flight per grading thread: each thread always has its next notebook queued


class LocalPool:
    """Grades each task through every pipeline step in one of `jobs` threads of this process."""

    def __init__(self, shared: Shared, jobs: int) -> None:
        self.shared, self.jobs = shared, max(1, jobs)
        self.pool = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="grade")
        self._stop = threading.Event()

    def _grade(self, task: Task) -> Result:
        if self._stop.is_set():
            raise KeyboardInterrupt
        return pipeline.grade(task, self.shared)

    def submit(self, task: Task) -> Future[Result]:
        """Queue the task for the next free thread."""
        return self.pool.submit(self._grade, task)

    def window(self) -> int:
        """Tasks to keep in flight."""
        return WINDOW_PER_THREAD * self.jobs

    def stop(self) -> None:
        """Drop the queued tasks; the running ones stop at their next step (their workers are killed by the writer)."""
        self._stop.set()
        self.pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Wait for the threads to end."""
        self.pool.shutdown()
