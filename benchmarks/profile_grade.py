"""Where `python -m autograder grade` spends its time: by pipeline step and writer stage, per notebook kind.

Run by hand: .venv/bin/python benchmarks/profile_grade.py [--students N] [--jobs J] [--unsafe-no-sandbox] [--results]

Builds the same course as `bench_grade.py --workbook N` (the real workbook; solutions, blanks and mistakes in turn)
and grades it in this process with `batch.run`, timed through the grader's own clock (`Options.clock`: every step
of `pipeline.STEPS`, the worker's start and the judge inside `execute_and_judge`, and each stage of the writer's
store, charged to its notebooks), nothing patched:

  read_submission    reading the submission through `Submission` (the notebook, its other files, its time)
  parse_notebook     the bytes as a notebook
  sanitize_notebook  nbgrader's sanitize steps
  execute_and_judge  the sandboxed worker running the cells, the judge judging the grade cells; of which
    worker start     the sandbox's fork server starting the worker
    judge            judging the checks, the probes' calls into learner code included
  mark_not_run, render_notebook   the notebook's row status; its autograded file made safe and serialised
  store: ...         the writer: rows, the gradebook transaction, autograded files waited for, the journal append

With --jobs 1 (the default here) the per-notebook stages add up to the wall time; with more jobs they are
thread-seconds. With --results: benchmarks/results/profile_grade.json.
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import support
from bench_grade import workbook_course
from results import Results, add_option, recording, slug

STEPS = ["read_submission", "parse_notebook", "sanitize_notebook", "execute_and_judge", "mark_not_run", "render_notebook"]
INSIDE = ["worker start", "judge (probes included)"]


class Profile:
    """Seconds per (notebook, stage), summed over the batch, from any thread: the grader's clock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seconds: dict[tuple[str, str], float] = defaultdict(float)

    def __call__(self, notebook: str, stage: str, seconds: float) -> None:
        with self.lock:
            self.seconds[(notebook, stage)] += seconds


def import_seconds() -> float:
    """Seconds a fresh interpreter takes to import the grader (nbgrader, SQLAlchemy, the catalogue...)."""
    code = ("import time; t = time.perf_counter(); import autograder.__main__, autograder.grading.batch; "
            "print(time.perf_counter() - t)")  # as `python -m autograder grade` imports it
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout)


def report(profile: Profile, counts: dict[str, int], wall: float, imports: float, jobs: int, rec: Results) -> None:
    """One line per notebook kind (mean ms per notebook, by stage), then the totals."""
    sec = profile.seconds
    store = sorted({s for _, s in sec if s.startswith("store: ")})
    stages = STEPS + INSIDE + store
    print(f"\nwall time of batch.run: {wall:.2f} s (jobs={jobs}); a fresh interpreter imports the grader in {imports:.2f} s")
    print("\nmean milliseconds per notebook, by stage:")
    short = {s: s.replace("_notebook", "").replace("_submission", "").replace("store: ", "st:")[:11] for s in stages}
    print(f"{'notebook':18s} {'n':>3s} " + " ".join(f"{short[s]:>11s}" for s in stages))
    for nb in sorted(counts):
        n = counts[nb] or 1
        print(f"{nb:18s} {counts[nb]:3d} " + " ".join(f"{1000 * sec.get((nb, s), 0.0) / n:11.1f}" for s in stages))
    total = {s: sum(v for (_, st), v in sec.items() if st == s) for s in stages}
    print(f"{'all (s)':18s} {sum(counts.values()):3d} " + " ".join(f"{total[s]:11.2f}" for s in stages))
    grader = sum(total[s] for s in STEPS + store) - total["execute_and_judge"] + total["judge (probes included)"]
    print(f"\nper-notebook time: {sum(total[s] for s in STEPS + store):.2f} s; execute_and_judge {total['execute_and_judge']:.2f} s "
          f"(worker start {total['worker start']:.2f} s, judge {total['judge (probes included)']:.2f} s); the rest of the "
          f"grader's own steps and the writer: {grader - total['judge (probes included)']:.2f} s")
    notebooks = sum(counts.values()) or 1
    for stage in stages:
        rec.figure(f"{slug(stage.replace('store: ', 'store '))}_ms", 1000 * total[stage] / notebooks, "ms",
                   f"{stage}: milliseconds per notebook (jobs={jobs})", 1)


def main() -> int:
    """Build the course, grade it with the grader's clock, print the profile."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=6, help="students handing in the whole workbook (default 6)")
    parser.add_argument("--jobs", type=int, default=1, help="parallel workers (default 1: stages add up to wall time)")
    parser.add_argument("--unsafe-no-sandbox", action="store_true", help="profile the unsandboxed grader instead")
    add_option(parser, "profile_grade")
    args = parser.parse_args()
    with recording("profile_grade", args.results) as rec:
        return profile_run(args, rec)


def profile_run(args: argparse.Namespace, rec: Results) -> int:
    """Grade the course with the clock on; print and record where the time went."""
    imports = import_seconds()
    with tempfile.TemporaryDirectory(prefix="profile-grade-") as tmp:
        course, ids = workbook_course(Path(tmp), args.students)
        os.environ["AUTOGRADER_COURSE_DIR"] = str(course)
        os.chdir(course)
        from autograder.grading import batch
        from autograder.grading.grade.sandbox import client
        from autograder.settings import load_config

        profile = Profile()
        if not args.unsafe_no_sandbox:
            t0 = time.perf_counter()
            client.MODE.pool.warm()
            client.MODE.pool.current()
            print(f"sandbox start (bubblewrap, staging, preload): {time.perf_counter() - t0:.2f} s")
        options = batch.Options("workbook", load_config(str(support.ROOT / "grading_config.py")), str(course), jobs=args.jobs,
                                progress=False, unsafe_no_sandbox=args.unsafe_no_sandbox, clock=profile)
        t0 = time.perf_counter()
        rows = batch.run(options)
        wall = time.perf_counter() - t0
        counts: dict[str, int] = defaultdict(int)
        for row in rows:
            counts[row.notebook] += 1
        print(f"{len(rows)} notebooks of {len(ids)} students graded, {sum(r.score for r in rows):g} points in all"
              + ("" if not args.unsafe_no_sandbox else ", UNSANDBOXED"))
        report(profile, counts, wall, imports, args.jobs, rec)
        rec.figure("notebooks", len(rows), "notebooks", "notebooks graded", 0)
        rec.figure("wall_s", wall, "s", f"batch.run's wall time (jobs={args.jobs})")
        rec.figure("imports_s", imports, "s", "a fresh interpreter importing the grader")
        rec.note(f"{args.students} students, jobs={args.jobs}" + (", unsandboxed" if args.unsafe_no_sandbox else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
