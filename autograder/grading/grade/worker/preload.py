"""What the process that forks the workers loads before it forks any, in either mode: `sandbox.inside.PRELOAD` (the
sandbox's fork server, with the stand-ins as `autograder` and `autograder.workbook`; unsandboxed, the same names
give the real modules, which bring the checks with them), so that every worker starts with them loaded and the
guard's snapshot sees all of them as they were before any learner code ran."""

from __future__ import annotations

import importlib
import os
from typing import Any

from ..sandbox.inside import PRELOAD

UNSANDBOXED_PRELOAD = [f"{__package__}.warm"]  # the unsandboxed fork server's preload: importing it calls `load`
_CONTEXT: Any = None


def load(prepare_worker: bool) -> None:
    """Import PRELOAD; with `prepare_worker`, also build the probe kit, shell and guard every forked worker starts with."""
    import gc
    import threading

    import tqdm

    for name in PRELOAD:
        importlib.import_module(name)
    # tqdm's default lock is a multiprocessing semaphore; a worker that creates it and is then killed or exits at
    # once leaves it to the resource tracker, which warns "leaked semaphore" when the grader exits.
    tqdm.tqdm.set_lock(threading.RLock())
    if prepare_worker:
        from .prepared import prepare

        prepare()
        # Everything loaded so far lives as long as the server: out of the collector's sight, a worker's garbage
        # collections neither walk it nor copy its pages (fork's copy-on-write).
        gc.freeze()


def forkserver_context(start: bool = False) -> Any:
    """The unsandboxed mode's forkserver context (one warm process forks every worker); `start` launches the server
    now, in the background."""
    global _CONTEXT
    if _CONTEXT is None:
        import multiprocessing

        # Inherited by the fork server: one BLAS thread per worker (and a small address space), inline figures.
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, "1")
        os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(UNSANDBOXED_PRELOAD)
        _CONTEXT = ctx
    if start:
        from multiprocessing import forkserver

        forkserver.ensure_running()  # returns at once; the server imports its preload while the grader imports nbgrader
    return _CONTEXT
