"""The instructor's steps timed: the whole course flow as the instructor guide runs it (tests/test_course_flow.py's
steps), each step's wall and CPU seconds, so the docs can quote what an instructor waits for.

Run by hand: .venv/bin/python benchmarks/bench_course.py [--students N] [--results]

A checkout with the six workbook notebooks and the repository's nbgrader_config.py; then, in order:
generate_assignment, the roster and the due date, release_assignment, each learner's fetch_assignment and submit
(solved, one with a mistake), collect, `python -m autograder grade`, grade again with nothing to do,
generate_feedback, release_feedback, each learner's fetch_feedback, export. Two courses go through the flow side
by side, each step run on one then the other: "with the hook" as the project's venv runs every command, and
"without" with AUTOGRADER_LAZY_IRI=0 (jsonschema builds its IRI grammar at import, as before the venv's start-up
hook), so both sides see the same load. CPU: as root, of every process a step ran (a cpuacct cgroup); else of the
commands' reaped children. With --results: benchmarks/results/bench_course.json.
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
from results import Results, add_option, recording, slug
from support import WORKBOOK, WORKBOOK_MISTAKES, Course

NOTEBOOKS = sorted(p.name for p in support.WORKBOOK_SOURCE.glob("*.ipynb"))


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=4, help="learners who fetch and submit (default 4)")
    add_option(parser, "bench_course")
    args = parser.parse_args()
    with recording("bench_course", args.results) as rec:
        course_flow(args.students, rec)
    return 0


SIDES = {"with": None, "without": "0"}  # AUTOGRADER_LAZY_IRI for each side's commands (None: as the venv has it)


def course_flow(learners: int, rec: Results) -> None:
    """Both courses through every step, side by side; print and record each step's wall and CPU seconds."""
    steps: dict[str, dict[str, tuple[float, float]]] = {}
    account = results.CpuAccount() if results.TREE_CPU else None  # this process and every command it runs
    cpu_now = account.seconds if account is not None else children_cpu

    def on_side(side: str, run: Callable[[], Any]) -> Any:
        before = os.environ.pop("AUTOGRADER_LAZY_IRI", None)
        if SIDES[side] is not None:
            os.environ["AUTOGRADER_LAZY_IRI"] = SIDES[side]  # (support's commands inherit this process's environment)
        try:
            return run()
        finally:
            os.environ.pop("AUTOGRADER_LAZY_IRI", None)
            if before is not None:
                os.environ["AUTOGRADER_LAZY_IRI"] = before

    def step(name: str, run: Callable[[Course], Any]) -> None:
        for side, c in courses.items():
            cpu, wall = cpu_now(), time.perf_counter()
            on_side(side, lambda c=c: run(c))
            steps.setdefault(name, {})[side] = (time.perf_counter() - wall, cpu_now() - cpu)
        (ww, wc), (ow, oc) = steps[name]["with"], steps[name]["without"]
        print(f"{name:44s} {ow:7.2f} ({oc:6.2f}) {ww:7.2f} ({wc:6.2f}) {ow / max(ww, 1e-9):6.1f}x {oc / max(wc, 1e-9):6.1f}x",
              flush=True)

    students = [f"learner{i}" for i in range(learners)]
    load_before = os.getloadavg()
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory(prefix="bench-course-") as tmp:
        if account is not None:
            stack.enter_context(account)
        courses = {side: support.make_checkout(Path(tmp) / side, NOTEBOOKS) for side in SIDES}
        roster = Path(tmp) / "roster.csv"
        roster.write_text("id,first_name,last_name\n" + "".join(f"{s},{s.title()},Doe\n" for s in students))
        due = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=7)).strftime("%Y-%m-%d %H:%M:%S UTC")
        print(f"{len(NOTEBOOKS)} notebooks, {len(students)} learners; each step's wall s (CPU s), without the venv's "
              f"start-up hook and with it, side by side\n{'step':44s} {'without':>16s} {'with':>16s} {'wall':>7s} {'CPU':>7s}")
        step("nbgrader generate_assignment", lambda c: c.nbgrader("generate_assignment", WORKBOOK, "--force"))
        step("nbgrader db student import", lambda c: c.nbgrader("db", "student", "import", str(roster)))
        step("nbgrader db assignment add (due date)", lambda c: c.nbgrader("db", "assignment", "add", WORKBOOK, f"--duedate={due}"))
        step("nbgrader release_assignment", lambda c: c.nbgrader("release_assignment", WORKBOOK))
        step(f"learners: fetch_assignment (x{len(students)})",
             lambda c: [c.learner(s, "fetch_assignment", WORKBOOK) for s in students])
        for c in courses.values():
            for i, s in enumerate(students):  # (not timed: the learners' work)
                mistake = {"03_backward.ipynb": WORKBOOK_MISTAKES["03_backward.ipynb"]} if i % 2 else None
                support.solve(c.learners / s / WORKBOOK, mistake)
        step(f"learners: submit (x{len(students)})", lambda c: [c.learner(s, "submit", WORKBOOK) for s in students])
        step("nbgrader collect", lambda c: c.nbgrader("collect", WORKBOOK))
        step("python -m autograder grade", lambda c: c.grade("--csv"))
        step("python -m autograder grade (nothing to do)", lambda c: c.grade())
        step("nbgrader generate_feedback", lambda c: c.nbgrader("generate_feedback", WORKBOOK))
        step("nbgrader release_feedback", lambda c: c.nbgrader("release_feedback", WORKBOOK))
        step(f"learners: fetch_feedback (x{len(students)})",
             lambda c: [c.learner(s, "fetch_feedback", WORKBOOK) for s in students])
        step("nbgrader export", lambda c: c.nbgrader("export", "--to", str(c.root / "grades.csv")))
    totals = {side: (sum(v[side][0] for v in steps.values()), sum(v[side][1] for v in steps.values())) for side in SIDES}
    (ww, wc), (ow, oc) = totals["with"], totals["without"]
    print(f"{'all steps':44s} {ow:7.2f} ({oc:6.2f}) {ww:7.2f} ({wc:6.2f}) {ow / max(ww, 1e-9):6.1f}x {oc / max(wc, 1e-9):6.1f}x")
    load_after = os.getloadavg()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in load_before)}, after: "
          f"{' '.join(f'{x:.2f}' for x in load_after)} on {os.cpu_count()} CPUs (other work slows every step)")
    for name, by_side in [*steps.items(), ("all steps", totals)]:
        key = slug(name.split(" (x")[0].removeprefix("python -m autograder ").replace("nothing to do", "again"))
        for side, (wall, cpu) in by_side.items():
            label = "as the venv runs it" if side == "with" else "without the venv's start-up hook"
            rec.figure(f"{key}_{side}_s", wall, "s", f"{name}, {label}: wall", 1)
            rec.figure(f"{key}_{side}_cpu_s", cpu, "s", f"{name}, {label}: CPU", 1)
    rec.figure("learners", len(students), "learners", "learners who fetch, submit and fetch feedback", 0)
    rec.note(f"CPU counted by {results.CPU_HOW}")
    rec.note(f"load average before {' '.join(f'{x:.2f}' for x in load_before)}, after "
             f"{' '.join(f'{x:.2f}' for x in load_after)}")


if __name__ == "__main__":
    sys.exit(main())
