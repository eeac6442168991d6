"""What the process that forks the workers loads before it forks any, in either mode: the list it is given,
`sandbox.inside.PRELOAD` (the sandbox's fork server, with the stand-ins as `autograder` and `autograder.workbook`;
unsandboxed, the same names give the real modules, which bring the checks with them), so that every worker starts with
them loaded and the guard's snapshot sees all of them as they were before any learner code ran."""

from __future__ import annotations

import importlib
from collections.abc import Iterable


def load(preload: Iterable[str], prepare_worker: bool) -> None:
    """Import `preload`; with `prepare_worker`, also build the probe kit, shell and guard every forked worker starts
    with."""
    import gc
    import threading

    import tqdm

    for name in preload:
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
