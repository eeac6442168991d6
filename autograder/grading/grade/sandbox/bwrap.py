"""The bubblewrap command line of the batch's sandbox: new namespaces, a clean environment, the system and the Python
runtime read-only, the staged worker code, and nothing else of the grader's (no repository, no course)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from ....settings import (
    EMPTY_TMPFS,
    EXIT_TIMEOUT,
    HIDDEN_TMPFS_BYTES,
    NOFILE,
    NOTEBOOK_MOUNTS,
    NPROC,
    PROC_TMPFS,
    SETUP_TIMEOUT,
)
from .inside import ENVIRONMENT, INSIDE, MOUNT_POINTS, SCRATCH

SANDBOX_UID = 65534  # the uid inside the sandbox (nobody), whoever runs the grader


def runtime_paths() -> list[str]:
    """The Python runtime and installed libraries the worker needs, read-only: never the repository or the course."""
    import sysconfig

    paths = {sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable))}
    paths |= {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    keep: list[str] = []
    for p in sorted(os.path.realpath(x) for x in paths if x and os.path.isdir(x)):
        if not any(p == k or p.startswith(k + os.sep) for k in keep):
            keep.append(p)
    return keep


# Every notebook gets its own empty tmpfs on these: a runtime that lives below one of them (a checkout in /tmp, say)
# is mounted below RELOCATED instead, and the interpreter started from there.
MASKED = (*MOUNT_POINTS.values(), "/dev", "/proc")
RELOCATED = "/runtime"


def inside_path(path: str) -> str:
    """Where a runtime path is mounted inside the sandbox: itself, or below RELOCATED if a notebook's tmpfs would hide it."""
    return RELOCATED + path if any(path == m or path.startswith(m + os.sep) for m in MASKED) else path


def bwrap_argv(bwrap: str, staged: Path, control_fd: int) -> list[str]:
    """The bubblewrap command: new namespaces, a clean environment, read-only system and runtime, no grader files."""
    argv = [bwrap, "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            "--die-with-parent", "--new-session", "--clearenv", "--cap-drop", "ALL",
            "--proc", "/proc", "--dev", "/dev", "--size", str(NOTEBOOK_MOUNTS["tmp"][0]), "--tmpfs", "/tmp", "--dir", SCRATCH,
            "--chdir", "/tmp",
            "--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    for etc in ("/etc/ld.so.cache", "/etc/alternatives", "/etc/localtime"):
        if os.path.exists(etc):
            argv += ["--ro-bind", etc, etc]
    for path in runtime_paths():
        if not path.startswith("/usr/"):
            argv += ["--ro-bind", path, inside_path(path)]
    import sysconfig

    for key in ("purelib", "platlib"):  # a non-editable install puts the whole grader here: hide it
        installed = Path(sysconfig.get_paths()[key]) / "autograder"
        if installed.is_dir():
            hidden = inside_path(str(installed))
            argv += ["--size", str(HIDDEN_TMPFS_BYTES), "--tmpfs", hidden, "--remount-ro", hidden]  # empty, and nobody's to write
    argv += ["--ro-bind", str(staged), INSIDE, "--remount-ro", "/"]  # bubblewrap's root tmpfs too: nothing to plant
    python = inside_path(sys.executable)
    for key, value in {**ENVIRONMENT, "PATH": f"{os.path.dirname(python)}:/usr/local/bin:/usr/bin:/bin"}.items():
        argv += ["--setenv", key, value]
    boot = (f"import sys; sys.path.insert(0, {INSIDE!r}); from autograder.grading.grade.sandbox import forkserver; "
            f"forkserver.serve({control_fd}, {fork_server_bounds()!r})")
    return [*argv, "--", python, "-I", "-c", boot]


def fork_server_bounds() -> dict[str, Any]:
    """What the fork server bounds (settings.py's values), as plain data handed to it at its start: it runs inside the
    sandbox with the standard library only (`forkserver.Bounds`)."""
    return {"mounts": {MOUNT_POINTS[name]: list(size) for name, size in NOTEBOOK_MOUNTS.items()},
            "empty_tmpfs": list(EMPTY_TMPFS), "proc_tmpfs": list(PROC_TMPFS), "nofile": NOFILE, "nproc": NPROC,
            "setup_timeout": SETUP_TIMEOUT, "exit_timeout": EXIT_TIMEOUT}


def unavailable_reason() -> str | None:
    """Why no sandbox can start here (one line with how to enable it), or None."""
    how = "or grade anyway without it: --unsafe-no-sandbox"
    if not sys.platform.startswith("linux"):
        return f"the grading sandbox needs Linux (bubblewrap and user namespaces), not {sys.platform}; {how}"
    if shutil.which("bwrap") is None:
        return f"bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap); {how}"
    return None


