"""The instructor's steps timed: the whole course flow as the instructor guide runs it (tests/test_course_flow.py's
steps), each step's wall and CPU seconds, so the docs can quote what an instructor waits for.

Run by hand: .venv/bin/python benchmarks/bench_course.py [--students N] [--without-hook]

A checkout with the six workbook notebooks and the repository's nbgrader_config.py; then, in order:
generate_assignment, the roster and the due date, release_assignment, each learner's fetch_assignment and submit
(solved, one with a mistake), collect, `python -m autograder grade`, grade again with nothing to do,
generate_feedback, release_feedback, each learner's fetch_feedback, export. `--without-hook` runs every command
with AUTOGRADER_LAZY_IRI=0 (jsonschema builds its IRI grammar at import, as before the venv's start-up hook), for
a before/after pair of runs. CPU: as root, of every process a step ran (a cpuacct cgroup); else of the commands'
reaped children. Results: benchmarks/results/course.json (or course-without-hook.json).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import results
import support
from support import WORKBOOK, WORKBOOK_MISTAKES

NOTEBOOKS = sorted(p.name for p in support.WORKBOOK_SOURCE.glob("*.ipynb"))


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=4, help="learners who fetch and submit (default 4)")
    parser.add_argument("--without-hook", action="store_true", help="AUTOGRADER_LAZY_IRI=0 for every command")
    args = parser.parse_args()
    if args.without_hook:
        os.environ["AUTOGRADER_LAZY_IRI"] = "0"  # (support's commands inherit this process's environment)
    steps: list[tuple[str, float, float]] = []

    account = results.CpuAccount() if results.TREE_CPU else None  # this process and every command it runs
    cpu_now = account.seconds if account is not None else children_cpu

    def step(name: str, run: Callable[[], Any]) -> Any:
        cpu, wall = cpu_now(), time.perf_counter()
        out = run()
        steps.append((name, time.perf_counter() - wall, cpu_now() - cpu))
        print(f"{name:44s} {steps[-1][1]:7.2f} s  (CPU {steps[-1][2]:6.2f} s)", flush=True)
        return out

    students = [f"learner{i}" for i in range(args.students)]
    load_before = os.getloadavg()
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory(prefix="bench-course-") as tmp:
        if account is not None:
            stack.enter_context(account)
        base = Path(tmp)
        c = support.make_checkout(base, NOTEBOOKS)
        roster = base / "roster.csv"
        roster.write_text("id,first_name,last_name\n" + "".join(f"{s},{s.title()},Doe\n" for s in students))
        due = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=7)).strftime("%Y-%m-%d %H:%M:%S UTC")
        print(f"{len(NOTEBOOKS)} notebooks, {len(students)} learners; wall and CPU seconds of each step")
        step("nbgrader generate_assignment", lambda: c.nbgrader("generate_assignment", WORKBOOK, "--force"))
        step("nbgrader db student import", lambda: c.nbgrader("db", "student", "import", str(roster)))
        step("nbgrader db assignment add (due date)", lambda: c.nbgrader("db", "assignment", "add", WORKBOOK, f"--duedate={due}"))
        step("nbgrader release_assignment", lambda: c.nbgrader("release_assignment", WORKBOOK))
        step(f"learners: fetch_assignment (x{len(students)})",
             lambda: [c.learner(s, "fetch_assignment", WORKBOOK) for s in students])
        for i, s in enumerate(students):  # (not timed: the learners' work)
            mistake = {"03_backward.ipynb": WORKBOOK_MISTAKES["03_backward.ipynb"]} if i % 2 else None
            support.solve(c.learners / s / WORKBOOK, mistake)
        step(f"learners: submit (x{len(students)})", lambda: [c.learner(s, "submit", WORKBOOK) for s in students])
        step("nbgrader collect", lambda: c.nbgrader("collect", WORKBOOK))
        step("python -m autograder grade", lambda: c.grade("--csv"))
        step("python -m autograder grade (nothing to do)", lambda: c.grade())
        step("nbgrader generate_feedback", lambda: c.nbgrader("generate_feedback", WORKBOOK))
        step("nbgrader release_feedback", lambda: c.nbgrader("release_feedback", WORKBOOK))
        step(f"learners: fetch_feedback (x{len(students)})",
             lambda: [c.learner(s, "fetch_feedback", WORKBOOK) for s in students])
        step("nbgrader export", lambda: c.nbgrader("export", "--to", str(c.root / "grades.csv")))
    total = sum(w for _, w, _ in steps)
    print(f"{'all steps':44s} {total:7.2f} s  (CPU {sum(x for _, _, x in steps):6.2f} s)")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in load_before)}, after: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs (other work slows every step)")
    results.write("course-without-hook" if args.without_hook else "course",
                  {"notebooks": len(NOTEBOOKS), "learners": len(students), "cpu_counted_by": results.CPU_HOW,
                   "steps": {name: {"wall_s": round(w, 2), "cpu_s": round(x, 2)} for name, w, x in steps},
                   "total_wall_s": round(total, 2)},
                  notes="AUTOGRADER_LAZY_IRI=0" if args.without_hook else "the project's venv as ./workbook sets it up")
    return 0


if __name__ == "__main__":
    sys.exit(main())
