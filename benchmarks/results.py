"""What every benchmark records besides what it prints: benchmarks/results/<name>.json, so the docs quote figures
from a file the benchmark wrote (the machine, the date, the command, the figures), never from prose.

Also the measuring helpers the benchmarks share: a command's wall and CPU time (its own and its children's, from
`wait4`), and the machine's busy and idle core-seconds over a stretch (/proc/stat), to say how loaded it was.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict[str, Any]:
    """The machine the figures come from: CPU model and count, memory, kernel, Python, load average."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        memory = 0
    return {"cpu": model, "cpus": os.cpu_count(), "memory_gib": round(memory / 2**30, 1), "kernel": platform.release(),
            "python": platform.python_version(), "load_average": [round(x, 2) for x in os.getloadavg()]}


def write(name: str, figures: dict[str, Any], notes: str = "") -> Path:
    """benchmarks/results/<name>.json: the machine, the date, the command that ran, the figures; its path."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    record = {"benchmark": name, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "command": " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv]),
              "machine": machine(), "notes": notes, "figures": figures}
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    print(f"results written to {path.relative_to(RESULTS.parent.parent)}")
    return path


@dataclass
class Timed:
    """One command's run: wall seconds, CPU seconds (user + system of it and every child it waited for), exit code."""

    wall: float
    cpu: float
    returncode: int
    stdout: str
    stderr: str


def timed(cmd: list[str], **kwargs: Any) -> Timed:
    """Run `cmd` (subprocess.Popen's keyword arguments), its wall time and the CPU time it and its children used."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timed(wall, cpu, proc.returncode, out, err)


CPUACCT = Path("/sys/fs/cgroup/cpuacct")
TREE_CPU = os.geteuid() == 0 and (CPUACCT / "cgroup.procs").is_file()  # a cgroup v1 cpuacct hierarchy we may use
CPU_HOW = ("a cpuacct cgroup of its own (the whole process tree)" if TREE_CPU
           else "wait4 of reaped children (a sandbox's workers, killed rather than reaped, may be missed)")


def timed_tree(cmd: list[str], **kwargs: Any) -> Timed:
    """Like `timed`, with the CPU time of the command's whole process tree (a cpuacct cgroup of its own, as root)."""
    if not TREE_CPU:
        return timed(cmd, **kwargs)
    with CpuAccount(move_self=False) as account:
        done = timed(cmd, preexec_fn=account.enter, **kwargs)
        done.cpu = account.seconds()
    return done


class CpuAccount:
    """A cgroup v1 cpuacct group of its own (root only): every process put in it, and all they start, is counted.
    With move_self, this process goes in (so every command it runs is counted) until the block ends."""

    def __init__(self, move_self: bool = True) -> None:
        self.group = CPUACCT / f"bench-{os.getpid()}-{time.monotonic_ns()}"
        self.move_self = move_self

    def __enter__(self) -> CpuAccount:
        self.group.mkdir()
        if self.move_self:
            self.enter()
        return self

    def enter(self) -> None:
        """Put the calling process in the group (a child's preexec_fn, or this process)."""
        (self.group / "cgroup.procs").write_text(str(os.getpid()))

    def seconds(self) -> float:
        return int((self.group / "cpuacct.usage").read_text()) / 1e9

    def __exit__(self, *exc: object) -> None:
        if self.move_self:
            (CPUACCT / "cgroup.procs").write_text(str(os.getpid()))
        for _ in range(50):  # (the tree's last processes may still be leaving)
            try:
                self.group.rmdir()
                return
            except OSError:
                time.sleep(0.1)


def machine_cpu() -> tuple[float, float]:
    """Seconds of CPU time the whole machine has spent busy and idle (iowait included) since boot; (0, 0) if unknown."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return 0.0, 0.0
    hz = os.sysconf("SC_CLK_TCK")
    idle = ticks[3] + ticks[4]
    return (sum(ticks[:7]) - idle) / hz, idle / hz  # (steal, the 8th, left out)


def median(values: list[float]) -> float:
    """The middle value (the lower of the two middle ones for an even count)."""
    s = sorted(values)
    return s[(len(s) - 1) // 2] if s else 0.0
