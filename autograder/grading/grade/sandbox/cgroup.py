"""Per-notebook cgroups, made by the grader where it may (as root: the cgroup v1 memory, pids and cpu controllers):
every byte a notebook holds (its memory, memfd and tmpfs files, pipe buffers) counts against `Limits.memory_mb`,
its processes against settings.NPROC, whatever they are, and all of them together weigh as one classmate on the CPU
(cpu.shares: a notebook of a hundred busy processes gets no more of the machine than a notebook of one). Without
them the sandbox runs in the unprivileged mode (address-space rlimit, size-bounded mounts, the seccomp filter; see
the README's threat model).

The grader makes a notebook's cgroups and opens their `cgroup.procs`; the descriptors travel to the fork server,
and the notebook's learner process writes itself into them before any learner code runs.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from dataclasses import dataclass
from pathlib import Path

from ....settings import CPU_SHARES, MIB, NPROC

ROOT = Path("/sys/fs/cgroup")
PREFIX = "autograder-"  # + the grader's pid and a count: a folder whose grader is gone is removed by the next grader
_COUNT = itertools.count(1)
CONTROLLERS = ("memory", "pids")
OPTIONAL = ("cpu",)  # used where mounted: without it a notebook's busy processes each weigh as one notebook
ROOT_MODE = "root: a memory cgroup (memory.limit_in_bytes) and a pids cgroup per notebook"
CPU_MODE = ", and a cpu cgroup (cpu.shares) per notebook"
UNPRIVILEGED_MODE = ("unprivileged: no cgroup; address-space rlimit, size-bounded tmpfs mounts and a seccomp filter "
                     "refusing memfd, System V memory, sockets and new processes")


def _own(controller: str) -> Path | None:
    """This process's cgroup v1 folder of `controller`, or None when there is no such hierarchy."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, names, path = line.split(":", 2)
        if controller in names.split(","):
            folder = ROOT / controller / path.lstrip("/")
            return folder if (folder / "cgroup.procs").is_file() else None
    return None


def _write(path: Path, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _remove_abandoned(base: Path) -> None:
    """rmdir the notebook folders, then the folder, of graders that are gone (killed before they could)."""
    for folder in base.glob(f"{PREFIX}*"):
        pid = folder.name[len(PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or pid == str(os.getpid()):
            continue
        with contextlib.suppress(OSError):
            os.kill(int(pid), 0)
            continue
        for child in folder.iterdir():
            if child.is_dir():
                with contextlib.suppress(OSError):
                    child.rmdir()
        with contextlib.suppress(OSError):
            folder.rmdir()


@dataclass
class NotebookCgroups:
    """One notebook's cgroup folders, and the open `cgroup.procs` descriptors its learner process writes itself into."""

    folders: list[Path]
    fds: list[int]

    def out_of_memory(self) -> bool:
        """True when the kernel killed a process of the notebook for passing its memory limit."""
        for folder in self.folders:
            with contextlib.suppress(OSError, ValueError):
                for line in (folder / "memory.oom_control").read_text().splitlines():
                    if line.startswith("oom_kill ") and int(line.split()[1]) > 0:
                        return True
        return False

    def close_fds(self) -> None:
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = []

    def remove(self) -> None:
        """rmdir the folders (the notebook's processes are gone by now; a straggler keeps its folder to the batch's end)."""
        self.close_fds()
        for folder in self.folders:
            with contextlib.suppress(OSError):
                folder.rmdir()


class Cgroups:
    """The batch's cgroup folders (one per controller, below the grader's own), or `available` False."""

    def __init__(self, enabled: bool = True) -> None:
        """`enabled` False: the unprivileged mode, whatever this grader may do (how the tests run it as root)."""
        self.bases: dict[str, Path] = {}
        self.why = "" if enabled else "cgroups not wanted"
        name = f"{PREFIX}{os.getpid()}-{next(_COUNT)}"  # one per Cgroups: a process may hold several
        for controller in (*CONTROLLERS, *OPTIONAL) if enabled else ():
            own = _own(controller)
            if own is None and controller in OPTIONAL:
                continue
            if own is None:
                self.why = f"no cgroup v1 {controller} controller"
                break
            try:
                _remove_abandoned(own)
                base = own / name
                base.mkdir(exist_ok=True)
                self.bases[controller] = base
            except OSError as exc:
                if controller in OPTIONAL:
                    continue
                self.why = f"cannot create a {controller} cgroup ({exc.strerror})"
                break
        if self.why:
            self.close()

    @property
    def available(self) -> bool:
        return bool(self.bases)

    @property
    def mode(self) -> str:
        if not self.available:
            return UNPRIVILEGED_MODE
        return ROOT_MODE + (CPU_MODE if "cpu" in self.bases else "")

    def make(self, name: str, memory_mb: int) -> NotebookCgroups:
        """A notebook's cgroups, their limits set and `cgroup.procs` open for its learner process. OSError if not."""
        made = NotebookCgroups([], [])
        try:
            for controller, base in self.bases.items():
                folder = base / name
                folder.mkdir()
                made.folders.append(folder)
                if controller == "memory":
                    _write(folder / "memory.limit_in_bytes", str(memory_mb * MIB))
                    with contextlib.suppress(OSError):  # no swap accounting on this kernel: nothing to bound there
                        _write(folder / "memory.memsw.limit_in_bytes", str(memory_mb * MIB))
                elif controller == "pids":
                    _write(folder / "pids.max", str(NPROC))
                else:
                    _write(folder / "cpu.shares", str(CPU_SHARES))
                made.fds.append(os.open(folder / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC))
        except OSError:
            made.remove()
            raise
        return made

    def close(self) -> None:
        """Remove the batch's folders (after its notebooks' folders)."""
        for base in self.bases.values():
            for child in base.glob("*"):
                if child.is_dir():
                    with contextlib.suppress(OSError):
                        child.rmdir()
            with contextlib.suppress(OSError):
                base.rmdir()
        self.bases = {}
