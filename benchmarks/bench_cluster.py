"""`grade --cluster` on a Dask LocalCluster of 2 workers, side by side with plain nbgrader and the local pool.

Run by hand: .venv/bin/python benchmarks/bench_cluster.py [--students S]
S students (default 4) hand in the real six-notebook workbook (solutions, untouched stubs and solutions with
classic mistakes, in turn). One generated course is graded three ways in one run: plain `nbgrader autograde`,
`python -m autograder grade --jobs 2` (the local pool) and the same grader with `--cluster` on a LocalCluster of
2 worker processes of 1 thread each (driver in this process, so that its own costs can be timed). Scores must be
identical. Then the capacity model: per-notebook cost on the cluster -> workers for 120,000 notebooks in an hour,
and the single driver's own cost (gradebook + notebook + journal writes per notebook).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import support
from bench_grade import workbook_course  # the same course: generated workbook, solutions/blanks/mistakes

WORKERS = 2
TARGET, HOUR = 120_000, 3600.0


def main() -> int:
    """Build the corpus, grade it three ways, compare, print the figures and the capacity model."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--students", type=int, default=4, help="students handing in the workbook (default 4)")
    args = parser.parse_args()
    config = str(support.ROOT / "grading_config.py")
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        try:
            plain, ids = workbook_course(Path(tmp), args.students)
        except RuntimeError as exc:  # generate_assignment failed
            print(exc)
            return 1
        local, cluster = Path(tmp) / "local", Path(tmp) / "cluster"
        shutil.copytree(plain, local)
        shutil.copytree(plain, cluster)
        t_plain, a = run([os.path.join(support.BIN, "nbgrader"), "autograde", "workbook", f"--NbGrader.config_file={config}"], plain)
        t_local, b = run([sys.executable, "-m", "autograder", "grade", "workbook", "--course", str(local), "--config", config,
                          "--no-progress", "--jobs", str(WORKERS)], local)
        if a.returncode or b.returncode:
            print(f"a grader failed: nbgrader exit {a.returncode}, ours exit {b.returncode}\n{b.stderr[-2000:]}")
            return 1
        t_start, t_cluster, store_s, state_s = grade_on_local_cluster(cluster, config)
        pa, pb, pc = cells(plain, ids), cells(local, ids), cells(cluster, ids)
        same = pa == pb == pc and len(pa) > 0
        n = 6 * len(ids)
        print(f"corpus: {len(ids)} students x 6 workbook notebooks, {len(pa)} grade cells; scores identical: {same}")
        print(f"plain nbgrader autograde           : {t_plain:6.1f} s  ({t_plain / n:.2f} s per notebook)")
        print(f"ours, local pool --jobs {WORKERS}          : {t_local:6.1f} s  ({t_local / n:.2f} s per notebook)")
        print(f"ours, --cluster ({WORKERS} Dask workers x 1) : {t_cluster:6.1f} s  ({t_cluster / n:.2f} s per notebook; "
              f"LocalCluster start {t_start:.1f} s not included)")
        print(f"speed-up over plain nbgrader: {t_plain / t_local:.1f}x local pool, {t_plain / t_cluster:.1f}x cluster")
        capacity(t_cluster * WORKERS / n, store_s / n, state_s)
        return 0 if same else 1


def run(cmd: list[str], course: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Time one command in the course folder."""
    env = support.env() | {"AUTOGRADER_COURSE_DIR": str(course)}
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=course, env=env, text=True, capture_output=True)
    return time.perf_counter() - t0, done


def grade_on_local_cluster(course: Path, config: str) -> tuple[float, float, float, float]:
    """(cluster start, grading wall time, driver's time storing results, one journal append at 120,000 records)."""
    from distributed import LocalCluster

    from autograder.grading import batch
    from autograder.grading.journal import Journal
    from autograder.settings import load_config

    os.environ["AUTOGRADER_COURSE_DIR"] = str(course)
    t0 = time.perf_counter()
    with LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True, dashboard_address=":0") as lc:
        t_start = time.perf_counter() - t0
        spent = [0.0]

        def clock(notebook: str, stage: str, seconds: float) -> None:  # the grader's own clock: the writer's stages
            if stage.startswith("store: "):
                spent[0] += seconds

        t0 = time.perf_counter()
        batch.run(batch.Options("workbook", load_config(config), str(course), progress=False, cluster=lc.scheduler_address,
                                clock=clock))
        t_grade = time.perf_counter() - t0
    journal = Journal(course, bytes.fromhex((course / ".autograder-secret").read_text().strip()))
    record = next(iter(journal.records.values()))
    journal.append([(f"workbook/s{i}/nb", record) for i in range(TARGET)])
    journal.close()
    journal = Journal(course, bytes.fromhex((course / ".autograder-secret").read_text().strip()))
    t0 = time.perf_counter()
    journal.append([("workbook/one/more", record)])
    t_append = time.perf_counter() - t0
    journal.close()
    return t_start, t_grade, spent[0], t_append


def cells(course: Path, ids: list[str]) -> dict[tuple[str, str, str], float]:
    """Every grade cell's score."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {(s, nb.name, g.name): g.score for s in ids for nb in gb.find_submission("workbook", s).notebooks
                for g in nb.grades}


def capacity(slot_s: float, store_s: float, state_s: float) -> None:
    """Workers for TARGET notebooks in an hour, from the measured per-notebook cost; and the driver's own ceiling."""
    need = TARGET / HOUR
    print(f"per-notebook cost on the cluster: {slot_s:.2f} worker-thread-seconds (wall time x threads / notebooks, "
          "start-up and tail included)")
    print(f"capacity model: {TARGET:,} notebooks in an hour = {need:.1f} notebooks/s -> "
          f"{math.ceil(need * slot_s)} worker threads (one core each) at this machine's speed")
    print(f"driver: {1000 * store_s:.1f} ms per notebook stored here (gradebook, notebook, journal) -> at most "
          f"{1 / store_s:.0f} notebooks/s at this run's group sizes (benchmarks/bench_store.py measures the ceiling); "
          f"one journal append with {TARGET:,} records in it: {1000 * state_s:.1f} ms (it does not grow with the cohort)")


if __name__ == "__main__":
    sys.exit(main())
