"""The worker process's own bounds, set before any learner code runs: its process group, its working directory,
resource limits, no way to the grader's terminal, nbgrader's environment. (Inside the sandbox these come on top
of the notebook's namespaces, mounts, cgroups and seccomp filter: `sandbox/forkserver.py`.)"""

from __future__ import annotations

import os
import resource
import signal
from typing import Any

from ..sandbox import linux


def die_with_parent() -> None:
    """Linux: SIGKILL this worker when the fork server exits (the grader was killed), even if it ignores its pipe."""
    try:
        linux.libc().prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def confine(limits: Any, workdir: str) -> None:
    """Own process group, scratch directory, resource limits, no inherited terminal output, nbgrader's environment."""
    if os.getpgid(0) != os.getpid():  # (a sandbox's PID 1 leads its own session, and so its group, already)
        os.setpgid(0, 0)  # the grader kills the whole group: processes the notebook starts go too
    die_with_parent()
    os.chdir(workdir)
    os.environ["NBGRADER_EXECUTION"] = "autograde"
    mb = 1024 * 1024
    caps = {
        resource.RLIMIT_AS: limits.memory_mb * mb,
        resource.RLIMIT_CORE: 0,
        resource.RLIMIT_FSIZE: 256 * mb,  # a file written in the scratch directory
        resource.RLIMIT_CPU: int(limits.notebook_timeout) + 5,  # backstop: the grader's wall clock comes first
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
