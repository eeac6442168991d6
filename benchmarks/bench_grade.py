"""Plain `nbgrader autograde` vs `python -m autograder grade` on the same corpus: times, ratio, identical scores.

Run by hand: .venv/bin/python benchmarks/bench_grade.py [--jobs N] [--workbook STUDENTS [--ours-only RUNS]]
Without --workbook: 20 submissions of the test fixture assignment (tests/fixtures/source/ps1).
With --workbook S: S students each handing in the real six-notebook workbook (solutions, untouched
stubs, and solutions with classic mistakes, in turn), graded three ways in one run: plain nbgrader, ours in
the OS sandbox (the default) and ours with --unsafe-no-sandbox; then the sandbox's own costs (start, one worker).
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import support
from results import Results, add_option, recording


def main() -> int:
    """Build the corpus, grade it both ways, compare, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=0, help="notebooks at a time for our grader (default: its own, one more than the CPUs)")
    parser.add_argument("--workbook", type=int, default=0, metavar="STUDENTS",
                        help="grade the real workbook handed in by this many students instead of the fixture corpus")
    parser.add_argument("--ours-only", type=int, default=0, metavar="RUNS",
                        help="with --workbook: only our sandboxed grader, this many runs of it (a quick loop while "
                             "tuning; no nbgrader, so no ratio and no score comparison)")
    add_option(parser, "bench_grade")
    args = parser.parse_args()
    if args.workbook and args.ours_only:
        return ours_only(args.workbook, args.jobs, args.ours_only)
    if args.workbook:
        with recording("bench_grade", args.results) as results:
            code = bench_workbook(args.workbook, args.jobs, results)
            results.ok = code == 0
        return code
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        plain = support.make_course(Path(tmp) / "plain")
        students = support.honest_corpus(plain)
        ours = Path(tmp) / "ours"
        shutil.copytree(plain, ours)
        (ours / "nbgrader_config.py").write_text(support.CONFIG.format(root=str(ours), assignment=support.ASSIGNMENT))

        t0 = time.perf_counter()
        result = support.nbgrader(plain, "autograde", support.ASSIGNMENT, check=False)
        t_plain = time.perf_counter() - t0
        t0 = time.perf_counter()
        mine = support.grade_ours(ours, *(["--jobs", str(args.jobs)] if args.jobs else []))
        t_ours = time.perf_counter() - t0
        if result.returncode or mine.returncode:
            print(f"a grader failed: nbgrader exit {result.returncode}, ours exit {mine.returncode}\n{mine.stderr}")
            return 1
        a, b = support.grade_cells(plain, students), support.grade_cells(ours, students)
        same = a == b and len(a) == 4 * len(students)
        print(f"corpus: {len(students)} submissions, {len(a)} grade cells; scores identical: {same}")
        print(f"plain nbgrader autograde : {t_plain:6.1f} s  ({t_plain / len(students):.2f} s per notebook)")
        print(f"python -m autograder grade: {t_ours:6.1f} s  ({t_ours / len(students):.2f} s per notebook)")
        print(f"speed-up: {t_plain / t_ours:.1f}x")
        return 0 if same else 1


def workbook_course(tmp: Path, students: int) -> tuple[Path, list[str]]:
    """A course in `tmp`/plain with the workbook generated and `students` submissions (solutions, blanks, mistakes)."""
    config = str(support.ROOT / "grading_config.py")
    plain, release = tmp / "plain", tmp / "release"
    plain.mkdir()
    env = support.env() | {"AUTOGRADER_COURSE_DIR": str(plain)}
    gen = subprocess.run([os.path.join(support.BIN, "nbgrader"), "generate_assignment", "workbook", "--force",
                          f"--CourseDirectory.release_directory={release}", f"--NbGrader.config_file={config}"],
                         cwd=plain, env=env, text=True, capture_output=True)
    if gen.returncode:
        raise RuntimeError(f"generate_assignment failed:\n{gen.stderr[-2000:]}")
    kinds = ["solution", "blank", "mistaken"]
    ids = [f"{kinds[i % 3]}{i}" for i in range(students)]
    for sid in ids:
        folder = plain / "submitted" / sid / "workbook"
        if sid.startswith("solution"):
            shutil.copytree(support.WORKBOOK_SOURCE, folder)
        elif sid.startswith("blank"):
            shutil.copytree(release / "workbook", folder)
        else:
            support.submit_workbook_with_mistakes(folder)
    return plain, ids


def bench_workbook(students: int, jobs: int, results: Results) -> int:
    """The real workbook, graded both ways from one generated course."""
    config = str(support.ROOT / "grading_config.py")
    with tempfile.TemporaryDirectory(prefix="bench-workbook-") as tmp:

        def run(cmd: list[str], course: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
            env = support.env() | {"AUTOGRADER_COURSE_DIR": str(course)}
            t0 = time.perf_counter()
            done = subprocess.run(cmd, cwd=course, env=env, text=True, capture_output=True)
            return time.perf_counter() - t0, done

        try:
            plain, ids = workbook_course(Path(tmp), students)
        except RuntimeError as exc:
            print(exc)
            return 1
        ours, unsafe = Path(tmp) / "ours", Path(tmp) / "unsafe"
        shutil.copytree(plain, ours)
        shutil.copytree(plain, unsafe)
        load_before = os.getloadavg()
        t_plain, a = run([os.path.join(support.BIN, "nbgrader"), "autograde", "workbook", f"--NbGrader.config_file={config}"],
                         plain)
        t_ours, b = run([sys.executable, "-m", "autograder", "grade", "workbook", "--course", str(ours), "--config", config,
                         "--no-progress", *(["--jobs", str(jobs)] if jobs else [])], ours)
        t_unsafe, c = run([sys.executable, "-m", "autograder", "grade", "workbook", "--course", str(unsafe), "--config",
                           config, "--no-progress", "--unsafe-no-sandbox", *(["--jobs", str(jobs)] if jobs else [])], unsafe)
        if a.returncode or b.returncode or c.returncode:
            print(f"a grader failed: nbgrader exit {a.returncode}, ours exit {b.returncode}, unsandboxed exit "
                  f"{c.returncode}\n{b.stderr[-2000:]}{c.stderr[-2000:]}")
            return 1
        from nbgrader.api import Gradebook

        def cells(course: Path) -> dict[tuple[str, str, str], float]:
            with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
                return {(s, nb.name, g.name): g.score for s in ids for nb in gb.find_submission("workbook", s).notebooks
                        for g in nb.grades}

        load_after = os.getloadavg()
        pa, pb, pc = cells(plain), cells(ours), cells(unsafe)
        same = pa == pb == pc
        notebooks = 6 * students
        print(f"corpus: {students} students x 6 workbook notebooks, {len(pa)} grade cells; scores identical: {same}")
        print(f"plain nbgrader autograde      : {t_plain:6.1f} s  ({t_plain / notebooks:.2f} s per notebook)")
        print(f"ours, in the OS sandbox       : {t_ours:6.1f} s  ({t_ours / notebooks:.2f} s per notebook)")
        print(f"ours, --unsafe-no-sandbox     : {t_unsafe:6.1f} s  ({t_unsafe / notebooks:.2f} s per notebook)")
        print(f"speed-up over plain nbgrader: {t_plain / t_ours:.1f}x sandboxed, {t_plain / t_unsafe:.1f}x unsandboxed; "
              f"the sandbox costs {100 * (t_ours - t_unsafe) / t_unsafe:+.0f}% of the whole run")
        print(f"load average (1, 5, 15 min) before: {' '.join(f'{x:.2f}' for x in load_before)}, after: "
              f"{' '.join(f'{x:.2f}' for x in load_after)} on {os.cpu_count()} CPUs")
        results.figure("students", students, "students", "students, each handing in the six workbook notebooks", 0)
        results.figure("plain_s", t_plain, "s", "plain nbgrader autograde, the whole course", 1)
        results.figure("ours_s", t_ours, "s", "python -m autograder grade in the OS sandbox, the whole course", 1)
        results.figure("unsafe_s", t_unsafe, "s", "python -m autograder grade --unsafe-no-sandbox, the whole course", 1)
        results.figure("plain_per_notebook_s", t_plain / notebooks, "s", "plain nbgrader, per notebook")
        results.figure("ours_per_notebook_s", t_ours / notebooks, "s", "ours in the sandbox, per notebook")
        results.figure("speedup", t_plain / t_ours, "x", "plain nbgrader's time / ours in the sandbox", 1)
        results.figure("speedup_unsandboxed", t_plain / t_unsafe, "x", "plain nbgrader's time / ours unsandboxed", 1)
        results.figure("same_scores", float(same), "", "1 when every grade cell scored the same three ways", 0)
        started, medians = sandbox_costs()
        results.figure("sandbox_start_s", started, "s", "starting the sandbox, once per batch")
        for name, ms in medians.items():
            results.figure(f"empty_worker_{name}_ms", ms, "ms", f"one empty worker, launch to done ({name})", 0)
        return 0 if same else 1


def ours_only(students: int, jobs: int, runs: int) -> int:
    """Our sandboxed grader alone, `runs` times on fresh copies of one course: each run's wall time and points."""
    config = str(support.ROOT / "grading_config.py")
    with tempfile.TemporaryDirectory(prefix="bench-workbook-") as tmp:
        try:
            plain, _ = workbook_course(Path(tmp), students)
        except RuntimeError as exc:
            print(exc)
            return 1
        times = []
        for n in range(runs):
            course = Path(tmp) / f"ours{n}"
            shutil.copytree(plain, course)
            env = support.env() | {"AUTOGRADER_COURSE_DIR": str(course)}
            cpu0, t0 = machine_cpu(), time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "autograder", "grade", "workbook", "--course", str(course),
                                   "--config", config, "--no-progress", "--csv", str(course / "summary.csv"),
                                   *(["--jobs", str(jobs)] if jobs else [])], cwd=course, env=env, text=True,
                                  capture_output=True)
            times.append(time.perf_counter() - t0)
            busy, idle = (b - a for a, b in zip(cpu0, machine_cpu()))
            if done.returncode:
                print(f"ours failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
                return 1
            with open(course / "summary.csv", newline="") as f:
                points = sum(float(line["score"]) for line in csv.DictReader(f))
            print(f"run {n + 1}: ours, in the OS sandbox: {times[-1]:6.2f} s, {points:g} points; the machine's cores "
                  f"busy {busy:.1f} s, idle {idle:.1f} s")
        print(f"best {min(times):.2f} s, median {sorted(times)[len(times) // 2]:.2f} s of {runs} runs "
              f"({students} students x 6 notebooks); load average now {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return 0


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


def sandbox_costs(workers: int = 20) -> tuple[float, dict[str, float]]:
    """The sandbox's own costs: starting it (bubblewrap + the fork server's preload), and one empty worker in it; as
    root, also without the notebook's cgroups (the unprivileged mode), to show what joining them costs."""
    from autograder.grading import sandbox
    from autograder.grading.sandbox.cgroup import Cgroups

    box = sandbox.Sandbox().start()  # the batch's mode
    started, mode, root = box.started, box.cgroups.mode.split(":")[0], box.cgroups.available
    medians = {mode: empty_workers(box, workers)}
    if root:
        medians["unprivileged"] = empty_workers(sandbox.Sandbox(Cgroups(enabled=False)).start(), workers)
    print(f"sandbox start (bubblewrap, staging, preload of numpy/matplotlib/IPython): {started:.2f} s, once per batch")
    print(f"one empty worker in the sandbox, launch to done (median of {workers}): "
          + ", ".join(f"{ms:.0f} ms {name}" for name, ms in medians.items())
          + " (own namespaces, tmpfs scratch, no capabilities; the root mode's cgroups joined on the way)")
    return started, medians


def empty_workers(box: Any, workers: int) -> float:
    """The median milliseconds from launch to done of `workers` empty workers, one after another; the sandbox closed
    after."""
    plan = {"cells": [{"kind": "code", "source": "pass"}], "limits": {"cell_timeout": 10.0}}
    times = []
    try:
        for _ in range(workers):
            t0 = time.perf_counter()
            worker = box.launch({"plan": plan, "files": {}})
            deadline = time.monotonic() + 30
            while b'"done"' not in worker.channel.recv(deadline, 2**24):
                pass
            worker.close()
            times.append(time.perf_counter() - t0)
    finally:
        box.close()
    return 1000 * sorted(times)[workers // 2]


if __name__ == "__main__":
    sys.exit(main())
