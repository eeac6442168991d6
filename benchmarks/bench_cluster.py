"""`grade --cluster` on a Dask LocalCluster of 2 workers, side by side with plain nbgrader and the local pool.

Run by hand: .venv/bin/python benchmarks/bench_cluster.py [--students S]
S students (default 4) hand in the real six-notebook workbook (solutions, untouched stubs and solutions with
classic mistakes, in turn). One generated course is graded four ways in one run, each as a user runs it, by its
command line, timed from the command's start to its exit (Python's start, imports, sandbox start, grading, storing,
late penalties, the class report): plain `nbgrader autograde`; `python -m autograder grade --jobs 2` (the local
pool: 2 threads, one sandbox); the same command with `--cluster` on a LocalCluster of 2 worker processes of 1 thread
each, started before the run as a course's cluster is (its own start is printed, not included) with workers that
have imported nothing of the grader (the run includes each worker's imports and sandbox start); then the same
command again with `--force` on those now-warm workers (every run after a long-lived cluster's first). Scores must
be identical all four ways. Then where the cluster run's time goes (the workers' start reports, Dask's task stream)
and the capacity model: worker-thread-seconds per notebook -> workers for 120,000 notebooks in an hour.
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
from typing import Any

WORKERS = 2
TARGET, HOUR = 120_000, 3600.0
LOADED = ("nbformat", "autograder.grading.grade.pipeline")  # what a fresh worker must not have imported yet

# Only the standard library at module level: each LocalCluster worker process imports this module again (the
# `spawn` start method), and must start as a plain `dask worker` does, with nothing of the grader imported.


def main() -> int:
    """Build the corpus, grade it four ways, compare, print the figures and the capacity model."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import support
    from bench_grade import workbook_course  # the same course: generated workbook, solutions/blanks/mistakes
    from results import add_option, recording

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--students", type=int, default=4, help="students handing in the workbook (default 4)")
    add_option(parser, "bench_cluster")
    args = parser.parse_args()
    with recording("bench_cluster", args.results) as results:
        code = measure(args, support, workbook_course, results)
        results.ok = code == 0
    return code


def measure(args: Any, support: Any, workbook_course: Any, results: Any) -> int:
    """The four runs side by side; their figures printed and recorded."""
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
        ours = [sys.executable, "-m", "autograder", "grade", "workbook", "--config", config, "--no-progress"]
        t_plain, a = run([os.path.join(support.BIN, "nbgrader"), "autograde", "workbook", f"--NbGrader.config_file={config}"], plain)
        t_local, b = run([*ours, "--course", str(local), "--jobs", str(WORKERS)], local)
        if a.returncode or b.returncode:
            print(f"a grader failed: nbgrader exit {a.returncode}, ours exit {b.returncode}\n{b.stderr[-2000:]}")
            return 1
        runs = on_local_cluster([*ours, "--course", str(cluster)], cluster)
        if isinstance(runs, str):
            print(runs)
            return 1
        t_start, fresh, warm = runs
        n = 6 * len(ids)
        pa, pb = cells(plain, ids), cells(local, ids)
        same = pa == pb == fresh.scores == warm.scores and len(pa) > 0
        print(f"corpus: {len(ids)} students x 6 workbook notebooks, {len(pa)} grade cells; scores identical "
              f"(plain nbgrader, local pool, cluster, cluster again): {same}")
        print("each figure: the command's wall time, start to exit (Python's start, imports, sandbox start, grading, storing, "
              "late penalties, class report)")
        print(f"plain nbgrader autograde                   : {t_plain:6.1f} s  ({t_plain / n:.2f} s per notebook)")
        print(f"ours, local pool --jobs {WORKERS}                  : {t_local:6.1f} s  ({t_local / n:.2f} s per notebook)")
        print(f"ours, --cluster, fresh workers (2 x 1)     : {fresh.wall:6.1f} s  ({fresh.wall / n:.2f} s per notebook; the "
              f"workers' start included, the LocalCluster's own {t_start:.1f} s not)")
        print(f"ours, --cluster again, the same warm workers: {warm.wall:6.1f} s  ({warm.wall / n:.2f} s per notebook)")
        print(f"cluster / local pool: {fresh.wall / t_local:.2f}x on fresh workers, {warm.wall / t_local:.2f}x on warm ones; "
              f"speed-up over plain nbgrader: {t_plain / t_local:.1f}x local pool, {t_plain / fresh.wall:.1f}x cluster (fresh)")
        for name, r in (("fresh", fresh), ("warm", warm)):
            print(f"where the {name} cluster run goes: first task {r.first:.1f} s after the command's start (the driver's "
                  f"start, connecting; each worker's start: {r.setup}), tasks {r.last - r.first:.1f} s, "
                  f"{r.wall - r.last:.1f} s after the last (storing it, late penalties, class report, exit)")
        threads = capacity(warm.compute / n, warm.wall * WORKERS / n, fresh.wall * WORKERS / n)
        append_ms = journal_append(cluster)
        results.figure("students", len(ids), "students", "students, each handing in the six workbook notebooks", 0)
        results.figure("plain_s", t_plain, "s", "plain nbgrader autograde", 1)
        results.figure("local_s", t_local, "s", f"ours, the local pool --jobs {WORKERS}", 1)
        results.figure("fresh_s", fresh.wall, "s", "ours, --cluster on fresh workers (their start included)", 1)
        results.figure("warm_s", warm.wall, "s", "ours, --cluster again on the same warm workers", 1)
        results.figure("fresh_vs_local", fresh.wall / t_local, "x", "cluster on fresh workers / the local pool")
        results.figure("warm_vs_local", warm.wall / t_local, "x", "cluster on warm workers / the local pool")
        results.figure("task_s", warm.compute / n, "s", "worker-thread-seconds a notebook's grading task costs (warm)")
        results.figure("threads_for_target", threads, "worker threads",
                       f"worker threads for {TARGET:,} notebooks in an hour at that cost", 0)
        results.figure("journal_append_ms", append_ms, "ms", f"one journal append with {TARGET:,} records in it", 1)
        results.figure("same_scores", float(same), "", "1 when every grade cell scored the same four ways", 0)
        return 0 if same else 1


def run(cmd: list[str], course: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Time one command in the course folder."""
    import support

    env = support.env() | {"AUTOGRADER_COURSE_DIR": str(course)}
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=course, env=env, text=True, capture_output=True)
    return time.perf_counter() - t0, done


class ClusterRun:
    """One `--cluster` command: its wall time, when its tasks ran, what its workers' start cost, its scores."""

    def __init__(self, wall: float, tasks: list[dict[str, Any]], events: list[Any], t0: float, scores: dict[Any, Any]) -> None:
        spans = [(ss["start"], ss["stop"]) for t in tasks if str(t["key"]).startswith("grade-")
                 for ss in t["startstops"] if ss["action"] == "compute"]
        self.wall, self.scores = wall, scores
        self.first = min(s for s, _ in spans) - t0 if spans else 0.0
        self.last = max(e for _, e in spans) - t0 if spans else 0.0
        self.compute = sum(e - s for s, e in spans)  # worker-thread-seconds spent in grading tasks
        said = [m.get("seconds", {}) for when, m in events if when >= t0 and isinstance(m, dict) and not m.get("error")]
        self.setup = ", ".join(f"{s.get('setup', 0):.1f} s (imports {s.get('imports', 0):.1f} s, beside its sandbox's start, "
                               f"{s.get('sandbox', 0):.1f} s)" for s in said) or "none reported"


def on_local_cluster(cmd: list[str], course: Path) -> tuple[float, ClusterRun, ClusterRun] | str:
    """(LocalCluster start, the first run on its fresh workers, a second run on the same workers); or why not."""
    from distributed import Client, LocalCluster, get_task_stream

    from autograder.grading.grade.cluster import TOPIC

    t0 = time.perf_counter()
    with LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True, dashboard_address=":0") as lc, Client(lc) as client:
        t_start = time.perf_counter() - t0
        loaded = client.run(eval, f"[m for m in {LOADED!r} if m in __import__('sys').modules]")  # (eval: pickled by name)
        if any(loaded.values()):
            return f"the LocalCluster's workers were not fresh: they had imported {loaded}"
        runs = []
        for again in ((), ("--force",)):
            with get_task_stream(client) as stream:
                started = time.time()
                wall, done = run([*cmd, "--cluster", lc.scheduler_address, *again], course)
            if done.returncode:
                return f"the cluster run failed (exit {done.returncode}):\n{done.stderr[-2000:]}"
            runs.append(ClusterRun(wall, stream.data, client.get_events(TOPIC), started, cells(course, None)))
    return t_start, runs[0], runs[1]


def cells(course: Path, ids: list[str] | None) -> dict[tuple[str, str, str], float]:
    """Every grade cell's score (of the given students, or all)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        students = ids if ids is not None else [s.id for s in gb.students]
        return {(s, nb.name, g.name): g.score for s in students for nb in gb.find_submission("workbook", s).notebooks
                for g in nb.grades}


def capacity(task_s: float, warm_s: float, fresh_s: float) -> int:
    """Workers for TARGET notebooks in an hour, from the measured per-notebook cost."""
    need = TARGET / HOUR
    print(f"per-notebook cost on the cluster: {task_s:.2f} worker-thread-seconds in its grading task (Dask's task stream, "
          f"warm run); {warm_s:.2f} as wall time x threads / notebooks (warm run), {fresh_s:.2f} (fresh run), each with this "
          "small run's fixed start and tail spread over its notebooks")
    print(f"capacity model: {TARGET:,} notebooks in an hour = {need:.1f} notebooks/s -> {math.ceil(need * task_s)} worker "
          f"threads (one core each) at {task_s:.2f} s a notebook, this machine's speed")
    return math.ceil(need * task_s)


def journal_append(course: Path) -> float:
    """One journal append with TARGET records in the journal: it does not grow with the cohort."""
    from autograder.grading.store.journal import Journal

    secret = bytes.fromhex((course / ".autograder-secret").read_text().strip())
    journal = Journal(course, secret)
    record = next(iter(journal.records.values()))
    journal.append([(f"workbook/s{i}/nb", record) for i in range(TARGET)])
    journal.close()
    journal = Journal(course, secret)
    t0 = time.perf_counter()
    journal.append([("workbook/one/more", record)])
    t_append = time.perf_counter() - t0
    journal.close()
    print(f"driver: one journal append with {TARGET:,} records in it: {1000 * t_append:.1f} ms (it does not grow with the "
          "cohort); the driver's storing ceiling: benchmarks/bench_store.py")
    return 1000 * t_append


if __name__ == "__main__":
    sys.exit(main())
