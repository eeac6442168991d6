"""What runs inside the sandbox, listed once: the modules staged and preloaded there, where they are mounted, and
what a notebook's process sees (environment, writable mounts).

Staging (`stage`), the preload of the process that forks the workers (`worker.preload`, in both modes) and the
stand-in `autograder` package (it refuses every module that was not staged) all derive from these lists;
tests/test_grade_inside.py holds every import of the staged code to them. Standard library only.
"""

from __future__ import annotations

INSIDE = "/grader"  # where the staged worker-side code is mounted, read-only
SCRATCH = "/scratch"  # a notebook's working directory and HOME: its own tmpfs

# The libraries every worker starts with (imported once by the fork server, so each notebook needs no import time).
LIBRARIES = ("numpy", "matplotlib.pyplot", "IPython.core.interactiveshell", "tqdm")
# The grader's code that runs next to learner code: no answers (the probes build graphs from a case and read numbers
# back; the aids draw and plot). Packages are staged whole, modules one file each; every parent package's
# __init__.py comes along. Nothing else of `autograder` exists inside the sandbox.
PACKAGES = ("autograder.aids", "autograder.probes", "autograder.grading.grade.worker")
MODULES = ("autograder.settings", "autograder.grading.grade.channel", "autograder.grading.grade.sandbox.inside",
           "autograder.grading.grade.sandbox.linux", "autograder.grading.grade.sandbox.forkserver")
# Stand-ins staged in place of the real modules (the real ones hold the checks): module -> its source in the package.
STANDINS = {"autograder": "grading/grade/standin/__init__.py", "autograder.workbook": "grading/grade/standin/workbook.py"}
WORKER = "autograder.grading.grade.worker.main"  # the worker's entry point: it imports every module of the worker
PRELOAD = (*LIBRARIES, *STANDINS, *PACKAGES, *MODULES, WORKER)  # what the fork server imports before it says ready

ENVIRONMENT = {  # everything a notebook's process sees of the environment
    "HOME": SCRATCH,
    "LANG": "C.UTF-8",
    "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    "MPLCONFIGDIR": "/tmp/matplotlib",
    "NBGRADER_EXECUTION": "autograde",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
}

# Where each of a notebook's own writable mounts is (tmpfs: its bytes are memory; their sizes are settings.py's
# NOTEBOOK_MOUNTS). Nothing writable is shared between notebooks; /dev holds only the device nodes below (bound from
# the sandbox's) and is read-only.
MOUNT_POINTS = {"scratch": SCRATCH, "tmp": "/tmp", "shm": "/dev/shm"}
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
