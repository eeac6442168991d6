"""The worker process's own bounds, set before any learner code runs: its process group, its working directory,
resource limits, no way to the grader's terminal, nbgrader's environment. (Inside the sandbox these come on top
of the notebook's namespaces, mounts, cgroups and seccomp filter: `sandbox/forkserver.py`; what starts the worker
makes it die with its parent: `linux.die_with_parent`.)"""

from __future__ import annotations

import os
import resource
from typing import Any

from ....settings import CPU_BACKSTOP, MIB, WORKER_FILE_BYTES


def confine(limits: Any, workdir: str) -> None:
    """Own process group, scratch directory, resource limits, no inherited terminal output, nbgrader's environment."""
    if os.getpgid(0) != os.getpid():  # (a sandbox's PID 1 leads its own session, and so its group, already)
        os.setpgid(0, 0)  # the grader kills the whole group: processes the notebook starts go too
    os.chdir(workdir)
    os.environ["NBGRADER_EXECUTION"] = "autograde"
    caps = {
        resource.RLIMIT_AS: limits.memory_mb * MIB,
        resource.RLIMIT_CORE: 0,
        resource.RLIMIT_FSIZE: WORKER_FILE_BYTES,  # a file written in the scratch directory
        resource.RLIMIT_CPU: int(limits.notebook_timeout) + CPU_BACKSTOP,  # the grader's wall clock comes first
    }
    for what, value in caps.items():
        try:
            _, hard = resource.getrlimit(what)
            resource.setrlimit(what, (value if hard == resource.RLIM_INFINITY else min(value, hard), hard))
        except (ValueError, OSError):
            pass
    # Learner code writing to the real fd 1/2 (C code, os.write, sys.__stderr__) must not reach the
    # grader's terminal or the notebook outputs.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
