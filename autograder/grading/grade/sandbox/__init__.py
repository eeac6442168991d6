"""The OS sandbox around every notebook's worker: one bubblewrap sandbox per batch, a fork server inside it, and per
notebook its own user, PID, mount, network and IPC namespaces, its own size-bounded writable mounts, and (as root)
its own memory and pids cgroups.

    inside      what runs inside the sandbox, listed once (modules, mount points, environment, sizes)
    staging     copies that code into a folder the sandbox mounts read-only
    bwrap       the bubblewrap command line
    cgroup      per-notebook cgroups (root), or the unprivileged mode's name
    frames      a worker's channel as the grader reads it: whole frames, every read and write before a deadline
    client      the grader's side: Sandbox, Worker, Pool, the unsandboxed mode, MODE
    linux       syscall numbers, prctl constants and the seccomp filter, named once
    forkserver  the sandbox side: the fork server, each notebook's namespaces and its learner process

The fork server imports this package inside the sandbox, so its names load on first use (PEP 562): importing it
loads none of the grader's side.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "client": ("CONTROL_TIMEOUT", "KILL_TIMEOUT", "MAX_FILES_BYTES", "MODE", "PING_TIMEOUT", "SPAWN_TIMEOUT",
               "STAGING_PREFIX", "START_TIMEOUT", "UNSANDBOXED", "Mode", "Pool", "Sandbox", "SandboxFailed",
               "SpawnTimeout", "Unavailable", "Unsandboxed", "Worker", "remove_abandoned_stagings", "start_failure",
               "submission_files"),
    "bwrap": ("MASKED", "RELOCATED", "SANDBOX_UID", "bwrap_argv", "inside_path", "runtime_paths", "unavailable_reason"),
    "inside": ("DEVICES", "ENVIRONMENT", "INSIDE", "MOUNTS", "NOFILE", "NPROC", "SCRATCH"),
    "staging": ("stage", "staged_files"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
