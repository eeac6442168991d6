"""Plain `nbgrader autograde` vs `python -m autograder grade` on the same corpus: times, ratio, identical scores.

Run by hand: .venv/bin/python benchmarks/bench_grade.py [--jobs N] [--workbook STUDENTS [--repeat R] [--ours-only RUNS [--against REV]]]
                [--results]
Without --workbook: 20 submissions of the test fixture assignment (tests/fixtures/source/ps1).
With --workbook S: S students each handing in the real six-notebook workbook (solutions, untouched
stubs, and solutions with classic mistakes, in turn), graded three ways in one run: plain nbgrader, ours in
the OS sandbox (the default; R runs on fresh copies, the median compared) and ours with --unsafe-no-sandbox; then
the floor: the same learner code and the same checks run in one warm process with no isolation (cells executed in
one namespace per notebook, each grade cell's checks, hidden ones included, called in the process: a second pass
over the corpus is timed); then the sandbox's own costs (start, one worker).

Each command's CPU seconds are counted with its whole process tree, the sandbox's workers included: as root, in a
cgroup v1 `cpuacct` group of its own (exact, whatever else runs on the machine); elsewhere from wait4 (children a
command reaped; the sandbox's workers may be missed, and the figure says so). Ours per notebook is printed twice:
all of the run / notebooks, and past the start (the CPU of `grade` with nothing to do, which imports, reads the
course and writes the outputs, taken off). With --results: benchmarks/results/bench_grade.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import results
import support
from results import Results, add_option, machine_cpu, recording

TARGET_SPEEDUP = 30.0  # plain nbgrader's wall time / ours, in the sandbox, --workbook 12
TARGET_VS_FLOOR = 1.5  # ours' CPU per notebook / the floor's


def main() -> int:
    """Build the corpus, grade it both ways, compare, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=0, help="notebooks at a time for our grader (default: its own, one more than the CPUs)")
    parser.add_argument("--workbook", type=int, default=0, metavar="STUDENTS",
                        help="grade the real workbook handed in by this many students instead of the fixture corpus")
    parser.add_argument("--repeat", type=int, default=3, help="with --workbook: runs of ours in the sandbox (default 3)")
    parser.add_argument("--floor-of", metavar="COURSE", help=argparse.SUPPRESS)  # (the floor's own process)
    parser.add_argument("--ours-only", type=int, default=0, metavar="RUNS",
                        help="with --workbook: only our sandboxed grader, this many runs of it (a quick loop while "
                             "tuning; no nbgrader, so no ratio and no score comparison)")
    parser.add_argument("--against", metavar="REV",
                        help="with --ours-only: each run grades a second copy with the code of git revision REV "
                             "(e.g. the commit before a redesign), side by side, and prints the ratio")
    add_option(parser, "bench_grade")
    args = parser.parse_args()
    if args.against and not args.ours_only:
        parser.error("--against goes with --workbook STUDENTS --ours-only RUNS")
    if args.floor_of:
        print(json.dumps(floor_of(Path(args.floor_of))))
        return 0
    with recording("bench_grade", args.results) as rec:
        if args.workbook and args.ours_only:
            rec.ok = ours_only(args.workbook, args.jobs, args.ours_only, rec, args.against) == 0
        elif args.workbook:
            rec.ok = bench_workbook(args.workbook, args.jobs, args.repeat, rec) == 0
        else:
            rec.ok = bench_fixture(args.jobs, rec) == 0
    return 0 if rec.ok else 1


def bench_fixture(jobs: int, rec: Results) -> int:
    """The test fixture's assignment (20 honest submissions), graded by plain nbgrader and by ours."""
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
        mine = support.grade_ours(ours, *(["--jobs", str(jobs)] if jobs else []))
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
        rec.figure("fixture_submissions", len(students), "notebooks", "submissions of the fixture assignment", 0)
        rec.figure("fixture_plain_s", t_plain, "s", "plain nbgrader autograde, the fixture assignment", 1)
        rec.figure("fixture_ours_s", t_ours, "s", "ours in the OS sandbox, the fixture assignment", 1)
        rec.figure("fixture_speedup", t_plain / t_ours, "x", "plain nbgrader's wall time / ours", 1)
        rec.figure("same_scores", float(same), "", "1 when every grade cell scored the same both ways", 0)
        rec.note(f"jobs={jobs or 'default'}")
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


def bench_workbook(students: int, jobs: int, repeat: int, rec: Results) -> int:
    """The real workbook, graded both ways from one generated course; our CPU per notebook against the floor."""
    config = str(support.ROOT / "grading_config.py")
    with tempfile.TemporaryDirectory(prefix="bench-workbook-") as tmp:

        def run(cmd: list[str], course: Path) -> results.Timed:
            env = support.env() | {"AUTOGRADER_COURSE_DIR": str(course)}
            return results.timed_tree(cmd, cwd=course, env=env)

        try:
            plain, ids = workbook_course(Path(tmp), students)
        except RuntimeError as exc:
            print(exc)
            return 1
        ours_cmd = [sys.executable, "-m", "autograder", "grade", "workbook", "--config", config, "--no-progress",
                    *(["--jobs", str(jobs)] if jobs else [])]
        courses = [Path(tmp) / f"ours{n}" for n in range(max(repeat, 1))]
        unsafe = Path(tmp) / "unsafe"
        for course in [*courses, unsafe]:
            shutil.copytree(plain, course)
        load_before, busy0 = os.getloadavg(), machine_cpu()
        a = run([os.path.join(support.BIN, "nbgrader"), "autograde", "workbook", f"--NbGrader.config_file={config}"], plain)
        ours = [run([*ours_cmd, "--course", str(course)], course) for course in courses]
        c = run([*ours_cmd, "--course", str(unsafe), "--unsafe-no-sandbox"], unsafe)
        again = run([*ours_cmd, "--course", str(courses[0])], courses[0])  # nothing to do: the run's fixed part
        failed = [t for t in [a, *ours, c, again] if t.returncode]
        if failed:
            print(f"a grader failed: exit {failed[0].returncode}\n{failed[0].stderr[-2000:]}")
            return 1
        floor = subprocess.run([sys.executable, __file__, "--floor-of", str(plain)], capture_output=True, text=True)
        if floor.returncode:
            print(f"the floor's run failed:\n{floor.stderr[-2000:]}")
            return 1
        floor_cpu = json.loads(floor.stdout.strip().splitlines()[-1])
        from nbgrader.api import Gradebook

        def cells(course: Path) -> dict[tuple[str, str, str], float]:
            with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
                return {(s, nb.name, g.name): g.score for s in ids for nb in gb.find_submission("workbook", s).notebooks
                        for g in nb.grades}

        load_after, busy1 = os.getloadavg(), machine_cpu()
        pa, pc = cells(plain), cells(unsafe)
        same = all(cells(course) == pa for course in courses) and pa == pc
        notebooks = 6 * students
        mid = sorted(ours, key=lambda t: t.wall)[(len(ours) - 1) // 2]
        walls = ", ".join(f"{t.wall:.1f}" for t in ours)
        per_cpu = results.median([t.cpu for t in ours]) / notebooks
        past_start = (results.median([t.cpu for t in ours]) - again.cpu) / notebooks
        floor_per = floor_cpu["cpu_s"] / floor_cpu["notebooks"]
        how = results.CPU_HOW
        print(f"corpus: {students} students x 6 workbook notebooks, {len(pa)} grade cells; scores identical: {same}")
        print(f"{'':32s} {'wall s':>8s} {'per nb':>7s} {'CPU s':>8s} {'per nb':>7s}   (CPU: {how})")
        for label, t in (("plain nbgrader autograde", a), (f"ours, in the OS sandbox (median of {len(ours)})", mid),
                         ("ours, --unsafe-no-sandbox", c), ("ours, nothing to do (start)", again)):
            print(f"{label:32s} {t.wall:8.1f} {t.wall / notebooks:7.3f} {t.cpu:8.1f} {t.cpu / notebooks:7.3f}")
        print(f"ours in the sandbox, each run's wall: {walls} s")
        print(f"speed-up over plain nbgrader (wall): {a.wall / mid.wall:.1f}x sandboxed, {a.wall / c.wall:.1f}x unsandboxed; "
              f"in CPU: {a.cpu / max(mid.cpu, 1e-9):.1f}x sandboxed")
        print(f"the floor (the same learner code and checks in one warm process, no isolation): "
              f"{1000 * floor_per:.1f} ms CPU per notebook")
        print(f"ours in the sandbox: {1000 * per_cpu:.1f} ms CPU per notebook = {per_cpu / floor_per:.1f}x the floor; past "
              f"the start: {1000 * past_start:.1f} ms = {past_start / floor_per:.1f}x")
        print(f"targets: {TARGET_SPEEDUP:g}x plain nbgrader (now {a.wall / mid.wall:.1f}x: "
              f"{'reached' if a.wall / mid.wall >= TARGET_SPEEDUP else 'not reached'}), at most {TARGET_VS_FLOOR:g}x the "
              f"floor (now {per_cpu / floor_per:.1f}x: {'reached' if per_cpu / floor_per <= TARGET_VS_FLOOR else 'not reached'})")
        print(f"load average (1, 5, 15 min) before: {' '.join(f'{x:.2f}' for x in load_before)}, after: "
              f"{' '.join(f'{x:.2f}' for x in load_after)} on {os.cpu_count()} CPUs; the machine's cores meanwhile busy "
              f"{busy1[0] - busy0[0]:.0f} s, idle {busy1[1] - busy0[1]:.0f} s")
        costs = sandbox_costs()
        ours_wall = mid.wall
        ours_cpu = results.median([t.cpu for t in ours])
        for key, value, unit, what, digits in (
                ("students", students, "students", "students, each handing in the six workbook notebooks", 0),
                ("notebooks", notebooks, "notebooks", "notebooks graded by each grader", 0),
                ("same_scores", float(same), "", "1 when every grade cell scored the same three ways", 0),
                ("plain_s", a.wall, "s", "plain nbgrader autograde, the whole course (wall)", 1),
                ("ours_s", ours_wall, "s", f"python -m autograder grade in the OS sandbox, the whole course (wall, "
                                           f"median of {len(ours)})", 1),
                ("unsafe_s", c.wall, "s", "python -m autograder grade --unsafe-no-sandbox, the whole course (wall)", 1),
                ("nothing_to_do_s", again.wall, "s", "python -m autograder grade with every notebook graded (wall)", 1),
                ("plain_per_notebook_s", a.wall / notebooks, "s", "plain nbgrader, per notebook (wall)", 2),
                ("ours_per_notebook_s", ours_wall / notebooks, "s", "ours in the sandbox, per notebook (wall)", 2),
                ("speedup", a.wall / ours_wall, "x", "plain nbgrader's wall time / ours in the sandbox", 1),
                ("speedup_unsandboxed", a.wall / c.wall, "x", "plain nbgrader's wall time / ours unsandboxed", 1),
                ("plain_cpu_s", a.cpu, "s", "plain nbgrader's CPU time, its whole process tree", 1),
                ("ours_cpu_s", ours_cpu, "s", "ours in the sandbox, CPU time of its whole process tree (median)", 1),
                ("speedup_cpu", a.cpu / max(ours_cpu, 1e-9), "x", "plain nbgrader's CPU time / ours in the sandbox", 1),
                ("floor_cpu_ms", 1000 * floor_per, "ms", "the floor: CPU per notebook of the same learner code and "
                                                        "checks in one warm process, no isolation", 1),
                ("ours_cpu_ms", 1000 * per_cpu, "ms", "ours in the sandbox: CPU per notebook, the whole run", 1),
                ("ours_vs_floor", per_cpu / floor_per, "x", "ours' CPU per notebook / the floor's", 1),
                ("ours_past_start_cpu_ms", 1000 * past_start, "ms", "ours: CPU per notebook past the start (the run "
                                                                   "less the one with nothing to do)", 1),
                ("ours_past_start_vs_floor", past_start / floor_per, "x", "ours past the start / the floor", 1),
                ("sandbox_start_s", costs["sandbox_start_s"], "s", "starting the sandbox, once per batch", 2),
                ("target_speedup", TARGET_SPEEDUP, "x", "the target: plain nbgrader's wall time / ours (issue 36)", 0),
                ("target_vs_floor", TARGET_VS_FLOOR, "x", "the target: ours' CPU per notebook / the floor's (issue 36)", 1)):
            rec.figure(key, value, unit, what, digits)
        for name, ms in costs.items():
            if name.startswith("empty_worker_ms_"):
                mode = name.removeprefix("empty_worker_ms_")
                rec.figure(f"empty_worker_{mode}_ms", ms, "ms", f"one empty worker, launch to done ({mode})", 0)
        rec.note(f"jobs={jobs or 'default'}; {len(ours)} runs of ours in the sandbox; CPU counted by {how}")
        rec.note(f"load average before {' '.join(f'{x:.2f}' for x in load_before)}, after "
                 f"{' '.join(f'{x:.2f}' for x in load_after)}; the machine's cores busy {busy1[0] - busy0[0]:.0f} s and "
                 f"idle {busy1[1] - busy0[1]:.0f} s meanwhile (other work on a shared machine slows the wall times)")
        return 0 if same else 1


def floor_of(course: Path) -> dict[str, float]:
    """The floor: every submitted notebook's cells run in one warm process, no isolation, each grade cell replaced by
    its source (hidden tests included) and its checks called here; the CPU seconds of a second pass over all."""
    import contextlib
    import io

    import nbformat

    os.environ["NBGRADER_EXECUTION"] = "autograde"  # as in the sandbox: demos short, a failed check raises
    os.environ["MPLBACKEND"] = "Agg"
    markers = ("### BEGIN SOLUTION", "### END SOLUTION", "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")

    def grade_id(cell: Any) -> str | None:
        return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")

    tests = {}
    for path in support.WORKBOOK_SOURCE.glob("*.ipynb"):
        tests[path.stem] = {grade_id(c): "\n".join(ln for ln in c.source.splitlines() if ln.strip() not in markers)
                            for c in nbformat.read(path, as_version=4).cells
                            if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")}
    work = []
    for path in sorted(course.glob("submitted/*/workbook/*.ipynb")):
        cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        work.append([tests[path.stem].get(grade_id(c), c.source) for c in cells])

    def run(sources: list[str]) -> None:
        ns: dict[str, Any] = {"__name__": "__main__"}
        for i, source in enumerate(sources):
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    exec(compile(source, f"<cell {i}>", "exec"), ns)
            except BaseException:  # a failing check or a broken cell: the next cell runs, as under nbgrader
                pass
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")

    for sources in work:  # warm: imports, caches, what one batch's first notebooks warm in ours
        run(sources)
    t0 = time.process_time()
    for sources in work:
        run(sources)
    return {"cpu_s": time.process_time() - t0, "notebooks": len(work)}


def code_at(rev: str, into: Path) -> Path:
    """The package, grading config and all of git revision `rev`, unpacked into `into` (no worktree left behind)."""
    into.mkdir()
    archive = subprocess.run(["git", "-C", str(support.ROOT), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def grade_copy(plain: Path, course: Path, code: Path | None, jobs: int) -> tuple[float, dict[str, float], str]:
    """Grade a fresh copy of `plain` at `course` with this checkout's code, or the code unpacked at `code`: the wall
    seconds, the points by student and notebook, and stderr's tail when it failed."""
    shutil.copytree(plain, course)
    root = code or support.ROOT
    env = support.env() | {"AUTOGRADER_COURSE_DIR": str(course)}
    if code is not None:  # its package first on the path, ahead of this checkout's editable install
        env["PYTHONPATH"] = str(code) + os.pathsep + env.get("PYTHONPATH", "")
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", "workbook", "--course", str(course),
                           "--config", str(root / "grading_config.py"), "--no-progress", "--csv",
                           str(course / "summary.csv"), *(["--jobs", str(jobs)] if jobs else [])],
                          cwd=course, env=env, text=True, capture_output=True)
    wall = time.perf_counter() - t0
    if done.returncode:
        return wall, {}, f"exit {done.returncode}:\n{done.stderr[-2000:]}"
    with open(course / "summary.csv", newline="") as f:
        points = {f"{line['student_id']}/{line['notebook']}": float(line["score"]) for line in csv.DictReader(f)}
    return wall, points, ""


def ours_only(students: int, jobs: int, runs: int, rec: Results, against: str | None = None) -> int:
    """Our sandboxed grader alone, `runs` times on fresh copies of one course: each run's wall time and points; with
    `against`, each run also grades a copy with that revision's code, the two alternating."""
    with tempfile.TemporaryDirectory(prefix="bench-workbook-") as tmp:
        try:
            plain, _ = workbook_course(Path(tmp), students)
        except RuntimeError as exc:
            print(exc)
            return 1
        other = code_at(against, Path(tmp) / "against") if against else None
        times: list[float] = []
        theirs: list[float] = []
        scored: dict[str, dict[str, float]] = {}
        for n in range(runs):
            sides = [("ours", None, times)] + ([(against, other, theirs)] if other else [])
            for name, code, into in sides if n % 2 == 0 else sides[::-1]:  # alternating: neither always goes first
                cpu0 = machine_cpu()
                wall, points, failed = grade_copy(plain, Path(tmp) / f"{'ours' if code is None else 'theirs'}{n}", code, jobs)
                busy, idle = (b - a for a, b in zip(cpu0, machine_cpu()))
                if failed:
                    print(f"{name} failed ({failed})")
                    return 1
                into.append(wall)
                scored[name] = points
                print(f"run {n + 1}: {name}, in the OS sandbox: {wall:6.2f} s, {sum(points.values()):g} points; the "
                      f"machine's cores busy {busy:.1f} s, idle {idle:.1f} s")
        print(f"ours: best {min(times):.2f} s, median {results.median(times):.2f} s of {runs} runs "
              f"({students} students x 6 notebooks); load average now {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        rec.figure("ours_only_best_s", min(times), "s", f"ours in the sandbox, best of {runs} runs (wall)", 2)
        rec.figure("ours_only_median_s", results.median(times), "s", f"ours in the sandbox, median of {runs} runs (wall)", 2)
        rec.note(f"--ours-only: {students} students, jobs={jobs or 'default'}; no nbgrader, so no ratio to it")
        if other:
            ratio = results.median(times) / results.median(theirs)
            moved = sorted(k for k in scored["ours"].keys() | scored[against].keys()
                           if scored["ours"].get(k) != scored[against].get(k))
            print(f"notebooks scored differently by ours and {against}: {len(moved)} of {len(scored['ours'])}"
                  + (f" ({', '.join(moved[:6])}{' ...' if len(moved) > 6 else ''})" if moved else ""))
            rec.figure("notebooks_scored_differently", len(moved), "", f"notebooks whose points differ from {against}'s")
            print(f"{against}: best {min(theirs):.2f} s, median {results.median(theirs):.2f} s; ours / {against} "
                  f"(medians) {ratio:.2f}x")
            rec.figure("against_median_s", results.median(theirs), "s", f"the code of {against}, median of {runs} runs (wall)", 2)
            rec.figure("ours_vs_against", ratio, "x", f"ours / the code of {against}, median wall times", 2)
            rec.note(f"--against {against}: the same course graded by that revision's code, runs alternating")
        return 0


def sandbox_costs(workers: int = 20) -> dict[str, float]:
    """The sandbox's own costs: starting it (bubblewrap + the fork server's preload), and one empty worker in it; as
    root, also without the notebook's cgroups (the unprivileged mode), to show what joining them costs."""
    from autograder.grading.grade.sandbox import client
    from autograder.grading.grade.sandbox.cgroup import Cgroups

    box = client.Sandbox().start()  # the batch's mode
    started, mode, root = box.started, box.cgroups.mode.split(":")[0], box.cgroups.available
    medians = {mode: empty_workers(box, workers)}
    if root:
        medians["unprivileged"] = empty_workers(client.Sandbox(Cgroups(enabled=False)).start(), workers)
    print(f"sandbox start (bubblewrap, staging, preload of numpy/matplotlib/IPython): {started:.2f} s, once per batch")
    print(f"one empty worker in the sandbox, launch to done (median of {workers}): "
          + ", ".join(f"{ms:.0f} ms {name}" for name, ms in medians.items())
          + " (own namespaces, tmpfs scratch, no capabilities; the root mode's cgroups joined on the way)")
    return {"sandbox_start_s": started, **{f"empty_worker_ms_{name}": ms for name, ms in medians.items()}}


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
