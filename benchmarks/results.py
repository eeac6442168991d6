"""What a benchmark run leaves for the docs: benchmarks/results/<name>.json, with the machine, the date and the command;
and the measuring helpers the benchmarks share.

A benchmark prints its figures, ratios side by side, in one run; with `--results` it also writes them here: every
line it printed (the docs show them as they are), its key figures by name with their units (the docs quote them by
name with {bench}, never retyped), and notes on the run (its options, the load on the machine). The docs site
(docs/benchmarks.md) reads these files when it builds; a test fails when a page quotes a figure no results file holds.
Written only when the run ends well, so a failed run never replaces the last good one.

Measuring helpers: `timed` (a command's wall and CPU seconds), `timed_tree` (its whole process tree's CPU, as root a
cpuacct cgroup of its own), `CpuAccount` (that cgroup), `machine_cpu` (the machine's busy and idle core-seconds),
`median`, `slug` (a printed label as a figure's name).
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import os
import platform
import re
import resource
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "benchmarks" / "results"


def default_path(name: str) -> Path:
    """benchmarks/results/<name>.json."""
    return FOLDER / f"{name}.json"


def add_option(parser: Any, name: str) -> None:
    """`--results [FILE]`: also write the run's figures (default FILE: benchmarks/results/<name>.json)."""
    parser.add_argument("--results", nargs="?", const=str(default_path(name)), default=None, metavar="FILE",
                        help=f"also write the figures, the machine, the date and the command to FILE (default "
                             f"{default_path(name).relative_to(ROOT)}), which the docs site shows")


def machine() -> dict[str, Any]:
    """What the figures were measured on: CPUs, their model, memory, Python, the load when the run started."""
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    memory = 0.0
    with contextlib.suppress(OSError, ValueError, AttributeError):
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 0
    load = list(os.getloadavg()) if hasattr(os, "getloadavg") else []
    return {"cpus": cpus, "cpu_model": model, "memory_gib": round(memory, 1), "system": platform.platform(terse=True),
            "python": platform.python_version(), "load_average_at_start": [round(x, 2) for x in load]}


# What a benchmark measures: the grader, its tests' support code, the notebooks and the benchmarks themselves. A change
# elsewhere (the docs, earlier results) does not make the measured code differ from the commit.
MEASURED = ("autograder", "benchmarks", "tests", "solutions", "notebooks", "pyproject.toml", "nbgrader_config.py",
            "grading_config.py", "workbook")


def commit() -> str:
    """The checkout's commit, with `+changes` when the measured code (MEASURED, less earlier results) differs from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", *MEASURED,
                                ":!benchmarks/results"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return head + ("+changes" if dirty else "")


def slug(label: str) -> str:
    """A printed label as a figure's name: `nbgrader generate_feedback (1 student)` -> `nbgrader_generate_feedback_1_student`."""
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


class _Tee(io.TextIOBase):
    def __init__(self, out: Any, keep: list[str]) -> None:
        self.out, self.keep = out, keep

    def write(self, text: str) -> int:
        self.keep.append(text)
        return self.out.write(text)

    def flush(self) -> None:
        self.out.flush()


class Results:
    """The figures of one run: named values with their units, notes on the run, and every line the run printed."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.figures: dict[str, dict[str, Any]] = {}
        self.notes: list[str] = []
        self.printed: list[str] = []
        self.started = datetime.datetime.now(datetime.timezone.utc)
        self.machine = machine()
        self.commit = commit()  # what was measured: the code as the run started
        self.ok = True  # the benchmark sets it False when a grader failed: nothing is written then

    def figure(self, key: str, value: float, unit: str, what: str, digits: int = 2) -> None:
        """A figure the docs may quote by `key`: `value` `unit` (s, ms, x, notebooks/s, ...), rounded to `digits`."""
        if not re.fullmatch(r"[a-z0-9_]+", key):
            raise ValueError(f"a figure's name is lower case, digits and underscores: {key!r}")
        self.figures[key] = {"value": round(float(value), digits), "unit": unit, "what": what}

    def note(self, text: str) -> None:
        """A note on the run the docs show with it (its options, what the load was, what to compare)."""
        self.notes.append(text)

    def document(self, argv: list[str]) -> dict[str, Any]:
        """The JSON document written for the docs."""
        args = [a for a in argv if not a.startswith("--results")]
        load = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else []
        return {"benchmark": self.name,
                "command": shlex.join([".venv/bin/python", f"benchmarks/{self.name}.py", *args]),
                "date": self.started.strftime("%Y-%m-%d %H:%M UTC"),
                "commit": self.commit,
                "machine": {**self.machine, "load_average_at_end": load},
                "notes": self.notes,
                "figures": self.figures,
                "output": "".join(self.printed).rstrip("\n").splitlines()}


@contextlib.contextmanager
def recording(name: str, path: str | None, argv: list[str] | None = None) -> Iterator[Results]:
    """Record what the block prints and the figures it names; write them to `path` (if given) when it ends well."""
    results = Results(name)
    out = sys.stdout
    sys.stdout = _Tee(out, results.printed)  # type: ignore[assignment]
    try:
        yield results
    finally:
        sys.stdout = out
    if path and results.ok and results.figures:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        doc = results.document(list(sys.argv[1:] if argv is None else argv))
        target.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {target}")


def load(name: str) -> dict[str, Any]:
    """The committed results of benchmark `name`."""
    return json.loads(default_path(name).read_text())


# ---------------------------------------------------------------- measuring helpers the benchmarks share


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
