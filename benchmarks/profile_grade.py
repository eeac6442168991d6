"""Where `python -m autograder grade` spends its time: by stage, by notebook, the grader's own work vs the learner's code.

Run by hand: .venv/bin/python benchmarks/profile_grade.py [--students N] [--jobs J] [--unsafe-no-sandbox]

Builds the same course as `bench_grade.py --workbook N` (the real workbook; solutions, blanks and mistakes in turn)
and grades it in this process with `batch.run`, the grader's functions wrapped in timers (nothing of the grader is
changed). Stages of one notebook, as the grader sees them:

  read+sanitize   reading the submission and sanitizing it (grader)
  worker start    asking the sandbox for a worker until its first cell's outputs arrive: namespaces, the worker's
                  IPython shell and tamper guard, plus that first cell (the notebook's imports) (grader, mostly)
  cells: <kind>   waiting for the worker to run code cells: the learner's solution cells, the given code and demo
                  cells the notebook itself holds, test cells run as plain code (learner / notebook code)
  probes          waiting for the worker while the checks call the learner's code (learner code)
  judge           the grader judging observations: its own numbers, verdicts, HTML (grader)
  channel         validating the worker's messages, the guard's report after checks, the final `done` (grader)
  store           autograded notebook, gradebook rows, flags, resume state (grader), split into its parts

and, once per batch: imports, sandbox start, loading the assignment, fingerprints, late penalties, reports. With
--jobs 1 (the default here) the per-notebook stages add up to the wall time; with more jobs they are thread-seconds.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import grading_corpus as gc
from bench_grade import workbook_course

LEARNER = {"cells: solution", "cells: given/demo", "cells: test as code", "probes"}


class Profile:
    """Seconds per (notebook, stage), summed over the batch, from any thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seconds: dict[tuple[str, str], float] = defaultdict(float)
        self.counts: dict[str, int] = defaultdict(int)  # notebooks graded, per notebook name
        self.local = threading.local()
        self.groups: list[int] = []  # notebooks stored per gradebook transaction
        self.sources: dict[str, list[str]] = {}  # notebook -> the source of each planned code cell (the last seen)

    @property
    def notebook(self) -> str:
        return getattr(self.local, "notebook", "(batch)")

    def add(self, stage: str, dt: float, notebook: str | None = None) -> None:
        if stage.startswith("batch:"):
            notebook = "(batch)"
        with self.lock:
            self.seconds[(notebook or self.notebook, stage)] += dt

    def wrap(self, owner: Any, name: str, stage: str | None, before: Callable[..., None] | None = None) -> None:
        """Time every call of owner.name as `stage` (None: only run `before`, e.g. to note the notebook)."""
        original = getattr(owner, name)
        profile = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            if before:
                before(*args, **kwargs)
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                if stage:
                    profile.add(stage, time.perf_counter() - t0)

        setattr(owner, name, timed)


def cell_kind(cell: Any) -> str:
    """What a code cell is, from its nbgrader metadata."""
    meta = cell.metadata.get("nbgrader", {})
    if meta.get("solution"):
        return "cells: solution"
    if meta.get("grade"):
        return "cells: test as code"
    return "cells: given/demo"


def instrument(profile: Profile) -> None:
    """Wrap the grader's steps in timers (see the module docstring for what each stage holds)."""
    from autograder.grading import batch, channel, class_report, runner, store

    local = profile.local

    def set_item(item: Any, *args: Any, **kwargs: Any) -> None:
        local.notebook = item.notebook

    def set_store_item(gb: Any, course: Any, assignment: str, item: Any, *args: Any) -> None:
        local.notebook = item.notebook

    store_group = batch._store_group

    def stored(gb: Any, course: Any, assignment: str, group: list[Any], state: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return store_group(gb, course, assignment, group, state)
        finally:  # one transaction for the group: each notebook is charged its share
            share = (time.perf_counter() - t0) / max(1, len(group))
            for item, _, _ in group:
                profile.add("store: total", share, item.notebook)
            with profile.lock:
                profile.groups.append(len(group))

    batch._store_group = stored
    profile.wrap(batch, "grade_item", None, set_item)
    profile.wrap(batch, "prepare", "read+sanitize")
    profile.wrap(batch, "sanitize", "read+sanitize")
    profile.wrap(batch, "_store", None, set_store_item)
    for name in ("write_notebook", "record_grades", "autograded_digest"):
        profile.wrap(batch, name, f"store: {name}")
    profile.wrap(store.State, "save", "store: state")
    profile.wrap(batch, "submission_time", "store: timestamp")
    profile.wrap(runner, "execute", "execute: total")

    plan_cells = runner.plan_cells

    def plan_with_kinds(nb: Any, spec: Any) -> Any:
        plan = plan_cells(nb, spec)
        local.kinds = [None if src else cell_kind(nb.cells[i]) for i, src in plan]
        with profile.lock:
            profile.sources[local.notebook] = [nb.cells[i].source for i, _ in plan]
        local.first = True
        return plan

    runner.plan_cells = plan_with_kinds

    profile.wrap(runner.Session, "__init__", "worker start")  # the sandbox's fork server starting the worker

    recv_bytes = runner.Session._recv_bytes

    def waited(self: Any, *args: Any) -> bytes:
        t0 = time.perf_counter()
        try:
            return recv_bytes(self, *args)
        finally:
            local.wait = getattr(local, "wait", 0.0) + time.perf_counter() - t0

    runner.Session._recv_bytes = waited
    profile.wrap(channel.Reader, "read", "channel")

    recv = runner.Session.recv

    def classified(self: Any, timeout: float) -> Any:
        local.wait = 0.0
        message = recv(self, timeout)
        wait, local.wait = local.wait, 0.0
        if getattr(local, "first", False):
            local.first = False
            profile.add("worker start", wait)  # its shell and guard, and the first cell (the notebook's imports)
            return message
        if getattr(local, "judging", False):
            local.judge_wait += wait
            profile.add("probes", wait)
        elif isinstance(message, channel.Cell):
            profile.add(local.kinds[message.index] or "cells: test as code", wait)
            profile.add(f"cell {message.index}", wait)
        else:
            profile.add("channel", wait)  # reaching a grade cell, the guard's report after checks, done
        return message

    runner.Session.recv = classified

    judge_cell = runner.judge_cell

    def judged(*args: Any, **kwargs: Any) -> Any:
        local.judging, local.judge_wait = True, 0.0
        t0 = time.perf_counter()
        try:
            return judge_cell(*args, **kwargs)
        finally:
            local.judging = False
            profile.add("judge", time.perf_counter() - t0 - local.judge_wait)

    runner.judge_cell = judged

    for owner, name in ((batch, "load_assignment"), (batch, "course_secret"), (batch, "fingerprint"),
                        (batch, "finish"), (class_report, "write"), (batch, "_grade_all"),
                        (batch, "write_csv")):
        profile.wrap(owner, name, f"batch: {name}")
    profile.wrap(batch.State, "__init__", "batch: load state")


def import_seconds() -> float:
    """Seconds a fresh interpreter takes to import the grader (nbgrader, SQLAlchemy, the catalogue...)."""
    code = ("import time; t = time.perf_counter(); import autograder.__main__, autograder.grading.batch; "
            "print(time.perf_counter() - t)")  # as `python -m autograder grade` imports it
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout)


def report(profile: Profile, wall: float, started: float, imports: float, jobs: int, top: int = 12) -> None:
    """Print the batch stages, then one line per notebook kind (mean ms per notebook), then grader vs learner."""
    sec = profile.seconds
    notebooks = sorted({nb for nb, _ in sec if nb != "(batch)"})
    counts = profile.counts
    print(f"\nwall time of batch.run: {wall:.2f} s (jobs={jobs}); a fresh interpreter imports the grader in {imports:.2f} s "
          "(the CLI starts the sandbox meanwhile)")
    print(f"sandbox start (bubblewrap, staging, preload), waited for in batch.run: {started:.2f} s")
    for (nb, stage), s in sorted(sec.items()):
        if nb == "(batch)" and stage.startswith("batch:"):
            print(f"  {stage:32s} {s:7.3f} s")
    stages = ["read+sanitize", "worker start", "cells: solution", "cells: given/demo", "cells: test as code", "probes",
              "judge", "channel", "execute: other", "store"]
    head = f"{'notebook':18s} {'n':>3s} " + " ".join(f"{s.split(': ')[-1][:10]:>10s}" for s in stages) + f" {'total':>8s}"
    print("\nmean milliseconds per notebook, by stage:")
    print(head)
    grand: dict[str, float] = defaultdict(float)
    for nb in notebooks:
        row = dict(sec_row(sec, nb))
        n = counts[nb] or 1
        total = sum(row[s] for s in stages)
        for s in stages:
            grand[s] += row[s]
        print(f"{nb:18s} {counts[nb]:3d} " + " ".join(f"{1000 * row[s] / n:10.1f}" for s in stages) + f" {1000 * total / n:8.1f}")
    total = sum(grand.values())
    print(f"{'all (s)':18s} {sum(counts.values()):3d} " + " ".join(f"{grand[s]:10.2f}" for s in stages) + f" {total:8.2f}")
    learner = sum(grand[s] for s in stages if s in LEARNER)
    print(f"\nper-notebook time: {total:.2f} s; the learner's and the notebook's own code (cells, probes): {learner:.2f} s "
          f"({100 * learner / total:.0f}%); the grader's own work: {total - learner:.2f} s ({100 * (total - learner) / total:.0f}%)")
    merged: dict[str, float] = defaultdict(float)
    for (_, s), v in sec.items():
        if s.startswith("store: ") and s != "store: total":
            merged[s] += v
    cells = sorted(((v / (counts[nb] or 1), nb, int(s.split()[1])) for (nb, s), v in sec.items() if s.startswith("cell ")),
                   reverse=True)[:top]
    print(f"\nthe {top} slowest code cells (mean ms per notebook, over every submission):")
    for ms, nb, i in cells:
        first = next((ln for ln in profile.sources.get(nb, [""] * (i + 1))[i].splitlines() if ln.strip()), "")
        print(f"  {1000 * ms:8.1f}  {nb} code cell {i}: {first[:70]}")
    print(f"gradebook transactions: {len(profile.groups)} for {sum(profile.groups)} notebooks")
    print("store, summed over the batch: " + ", ".join(f"{s[7:]} {v:.2f} s" for s, v in sorted(merged.items())))


def sec_row(sec: dict[tuple[str, str], float], nb: str) -> list[tuple[str, float]]:
    """One notebook's stages, with the parts of execute and store not timed on their own as 'other'."""
    get = lambda s: sec.get((nb, s), 0.0)  # noqa: E731
    execute_parts = ["worker start", "cells: solution", "cells: given/demo", "cells: test as code", "probes", "judge",
                     "channel"]
    return [("read+sanitize", get("read+sanitize")), *((s, get(s)) for s in execute_parts),
            ("execute: other", max(0.0, get("execute: total") - sum(get(s) for s in execute_parts))),
            ("store", get("store: total"))]


def main() -> int:
    """Build the course, grade it with timers, print the profile."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=6, help="students handing in the whole workbook (default 6)")
    parser.add_argument("--jobs", type=int, default=1, help="parallel workers (default 1: stages add up to wall time)")
    parser.add_argument("--unsafe-no-sandbox", action="store_true", help="profile the unsandboxed grader instead")
    args = parser.parse_args()
    imports = import_seconds()
    with tempfile.TemporaryDirectory(prefix="profile-grade-") as tmp:
        course, ids = workbook_course(Path(tmp), args.students)
        os.environ["AUTOGRADER_COURSE_DIR"] = str(course)
        os.chdir(course)
        from autograder.grading import batch, sandbox
        from autograder.settings import load_config

        profile = Profile()
        instrument(profile)
        t_start: list[float] = []
        current = sandbox.Pool.current

        def timed_current(self: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return current(self)
            finally:
                t_start.append(time.perf_counter() - t0)

        sandbox.Pool.current = timed_current
        if not args.unsafe_no_sandbox:
            sandbox.MODE.pool.warm()
        options = batch.Options("workbook", load_config(str(gc.ROOT / "grading_config.py")), str(course), jobs=args.jobs,
                                progress=False, unsafe_no_sandbox=args.unsafe_no_sandbox)
        t0 = time.perf_counter()
        rows = batch.run(options)
        wall = time.perf_counter() - t0
        for row in rows:
            profile.counts[row.notebook] += 1
        print(f"{len(rows)} notebooks of {len(ids)} students graded, {sum(r.score for r in rows):g} points in all"
              + ("" if not args.unsafe_no_sandbox else ", UNSANDBOXED"))
        report(profile, wall, t_start[0] if t_start else 0.0, imports, args.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
