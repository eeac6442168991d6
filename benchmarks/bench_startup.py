"""Start-up of every command a learner or an instructor types, before and after, side by side in one run.

Run by hand: .venv/bin/python benchmarks/bench_startup.py [--repeat N] [--before REV] [--results]

Builds a small course (the real workbook, `nbgrader generate_assignment`, three students: a solution, an untouched
notebook and one with mistakes), grades it once with ours and one student with plain nbgrader, then times, N times
each with before and after interleaved (so both see the same load), the median wall and CPU seconds (its whole
process tree: `results.timed_tree`) of:

  python -m autograder --version | check NOTEBOOK (a learner's notebook: its own code and checks included) |
  grade with nothing to do (every notebook graded and unchanged)
  nbgrader --version | generate_assignment | autograde with nothing to do | generate_feedback (one student) |
  export | db student list

"after" is this checkout in the project's venv. "before" is the same command without the venv's start-up hook
(AUTOGRADER_LAZY_IRI=0: jsonschema builds the IRI grammar at import, as before it) and, with --before REV, our
commands run from that revision's `autograder/` (git archive, first on PYTHONPATH). Then, for each of our commands
and `nbgrader --version`, where the start-up goes: `python -X importtime`'s total and the modules that cost most
themselves. With --results: benchmarks/results/bench_startup.json.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import results
import support
from bench_grade import workbook_course
from results import Results, add_option, recording, slug

ROOT = support.ROOT
CONFIG = str(ROOT / "grading_config.py")
NBGRADER = os.path.join(support.BIN, "nbgrader")


def commands(course: Path) -> dict[str, list[str]]:
    """Each timed command (run from the course folder), by the name printed."""
    learner = course / "submitted" / "mistaken2" / "workbook"
    py = [sys.executable, "-m", "autograder"]
    config = f"--NbGrader.config_file={CONFIG}"
    return {
        "python -m autograder --version": [*py, "--version"],
        "check 01_derivatives.ipynb (mistakes)": [*py, "check", str(learner / "01_derivatives.ipynb")],
        "check 04_bricks.ipynb (mistakes)": [*py, "check", str(learner / "04_bricks.ipynb")],
        "grade, nothing to do": [*py, "grade", "workbook", "--course", str(course), "--config", CONFIG, "--no-progress"],
        "nbgrader --version": [NBGRADER, "--version"],
        "nbgrader generate_assignment": [NBGRADER, "generate_assignment", "workbook", "--force", config],
        "nbgrader autograde, nothing to do": [NBGRADER, "autograde", "workbook", config],
        "nbgrader generate_feedback (1 student)": [NBGRADER, "generate_feedback", "workbook", "--force",
                                                   "--student=solution0", config],
        "nbgrader export": [NBGRADER, "export", f"--to={course / 'grades.csv'}", config],
        "nbgrader db student list": [NBGRADER, "db", "student", "list", config],
    }


def environments(course: Path, before_tree: Path | None) -> dict[str, dict[str, str]]:
    """The environment of each side: after (as the venv is), before (no start-up hook; the old code with --before)."""
    after = support.env() | {"AUTOGRADER_COURSE_DIR": str(course)}
    before = after | {"AUTOGRADER_LAZY_IRI": "0"}
    if before_tree is not None:
        before["PYTHONPATH"] = str(before_tree)
    return {"before": before, "after": after}


def old_tree(rev: str, into: Path) -> Path:
    """`autograder/` as it was at `rev`, extracted into `into` (first on PYTHONPATH for the "before" side)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "autograder"], capture_output=True, check=True)
    into.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def import_profile(cmd: list[str], env: dict[str, str], cwd: Path, top: int = 4) -> tuple[float, list[tuple[str, float]]]:
    """`-X importtime` of one run: the seconds spent importing, and the `top` modules costliest by themselves."""
    python = [sys.executable, "-X", "importtime"]
    argv = [*python, *cmd[1:]] if cmd[0] == sys.executable else [*python, *cmd]
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    rows = []
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if m:
            rows.append((m.group(4), int(m.group(1)) / 1e6, int(m.group(2)) / 1e6, len(m.group(3))))
    total = sum(cumulative for _, _, cumulative, depth in rows if depth == 1)
    costly = sorted(((name, own) for name, own, _, _ in rows), key=lambda x: -x[1])[:top]
    return total, costly


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command on each side (default 3)")
    parser.add_argument("--before", metavar="REV", help="also run our commands from this revision's autograder/")
    add_option(parser, "bench_startup")
    args = parser.parse_args()
    with recording("bench_startup", args.results) as rec:
        rec.ok = startup(args, rec) == 0
    return 0 if rec.ok else 1


def startup(args: argparse.Namespace, rec: Results) -> int:
    """Time every command before and after, interleaved; print and record the medians and where start-up goes."""
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        course, _ = workbook_course(Path(tmp), 3)
        sides = environments(course, old_tree(args.before, Path(tmp) / "before") if args.before else None)
        setup = [[sys.executable, "-m", "autograder", "grade", "workbook", "--course", str(course), "--config", CONFIG,
                  "--no-progress"],
                 [NBGRADER, "autograde", "workbook", "--student=solution0", f"--NbGrader.config_file={CONFIG}"]]
        for cmd in setup:  # everything graded once (ours), one student by plain nbgrader too (its autograde skips it then)
            done = subprocess.run(cmd, cwd=course, env=sides["after"], capture_output=True, text=True)
            if done.returncode:
                print(f"set-up failed: {' '.join(cmd[:4])}...\n{done.stderr[-2000:]}")
                return 1
        runs: dict[str, dict[str, list[results.Timed]]] = {}
        for _ in range(args.repeat):
            for name, cmd in commands(course).items():
                for side, env in sides.items():
                    t = results.timed_tree(cmd, cwd=course, env=env)
                    if t.returncode not in (0, 1):  # (check exits 1 on a failing check: that is its answer)
                        print(f"{name} ({side}) failed, exit {t.returncode}:\n{t.stderr[-2000:]}")
                        return 1
                    runs.setdefault(name, {}).setdefault(side, []).append(t)
        print(f"\nmedian of {args.repeat} runs each, before and after interleaved; wall s (CPU s: {results.CPU_HOW}"
              f")\n{'command':42s} {'before':>16s} {'after':>16s} {'wall ratio':>10s} {'CPU ratio':>9s}")
        for name, by_side in runs.items():
            row = {side: (results.median([t.wall for t in ts]), results.median([t.cpu for t in ts]))
                   for side, ts in by_side.items()}
            (bw, bc), (aw, ac) = row["before"], row["after"]
            print(f"{name:42s} {bw:6.2f} ({bc:5.2f}) {aw:8.2f} ({ac:5.2f}) {bw / max(aw, 1e-9):9.1f}x "
                  f"{bc / max(ac, 1e-9):8.1f}x")
            key = slug(name)
            for side, (wall, cpu) in row.items():
                rec.figure(f"{key}_{side}_s", wall, "s", f"{name}, {side}: median wall time", 2)
                rec.figure(f"{key}_{side}_cpu_s", cpu, "s", f"{name}, {side}: median CPU time of its process tree", 2)
            rec.figure(f"{key}_cpu_ratio", bc / max(ac, 1e-9), "x", f"{name}: CPU before / after", 1)
        print("\nwhere start-up goes (after; python -X importtime, one run): seconds importing, costliest modules by "
              "their own time")
        for name, cmd in commands(course).items():
            if name.startswith("nbgrader") and name != "nbgrader --version":
                continue
            total, costly = import_profile(cmd, sides["after"], course)
            rec.figure(f"{slug(name)}_import_s", total, "s", f"{name}: seconds importing (python -X importtime)", 2)
            print(f"{name:42s} {total:5.2f} s: " + ", ".join(f"{m} {s:.2f}" for m, s in costly))
        print(f"\nload average now {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs (other "
              "work on the machine slows both sides alike; CPU seconds are less noisy than wall)")
        rec.note(f"{args.repeat} runs of each command on each side, interleaved; before: AUTOGRADER_LAZY_IRI=0"
                 + (f" and autograder/ from {args.before}" if args.before else " (this checkout's code)"))
        rec.note(f"CPU counted by {results.CPU_HOW}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
