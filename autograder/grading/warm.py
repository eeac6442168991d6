"""Imported once by the fork server, so every grading worker starts with these already loaded.

Every `autograder` module a notebook may import is loaded here, before any learner code runs, so the
worker's tamper guard (worker.Guard) sees all of them as they were.
"""

import threading

import IPython.core.interactiveshell  # noqa: F401
import matplotlib.pyplot  # noqa: F401  (the inline backend itself loads in the worker, once its shell exists)
import numpy  # noqa: F401
import tqdm

import autograder.checks
import autograder.grading.worker
import autograder.notebook
import autograder.probes
import autograder.report
import autograder.settings
import autograder.workbook  # noqa: F401

# tqdm's default lock is a multiprocessing semaphore; a worker that creates it and is then killed or
# exits at once leaves it to the resource tracker, which warns "leaked semaphore" when the grader exits.
tqdm.tqdm.set_lock(threading.RLock())
