"""Imported once by the unsandboxed mode's fork server, so every grading worker starts with these already loaded.

Every `autograder` module a notebook may import is loaded here (the sandbox's list, `sandbox.inside.PRELOAD`, and
the real modules that the sandbox replaces by stand-ins), before any learner code runs, so the worker's tamper
guard (worker.Guard) sees all of them as they were.
"""

import importlib
import threading

import tqdm

from autograder.grading.sandbox.inside import PRELOAD

for _name in (*PRELOAD, "autograder.checks", "autograder.notebook", "autograder.report"):
    importlib.import_module(_name)

# tqdm's default lock is a multiprocessing semaphore; a worker that creates it and is then killed or
# exits at once leaves it to the resource tracker, which warns "leaked semaphore" when the grader exits.
tqdm.tqdm.set_lock(threading.RLock())
