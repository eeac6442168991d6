"""Plain `nbgrader autograde` vs `python -m autograder grade` on the same corpus: times, ratio, identical scores.

Run by hand: .venv/bin/python benchmarks/bench_grade.py [--jobs N]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import grading_corpus as gc


def main() -> int:
    """Build the corpus, grade it both ways, compare, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=0, help="workers for our grader (default: CPU count)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        plain = gc.make_course(Path(tmp) / "plain")
        students = gc.honest_corpus(plain)
        ours = Path(tmp) / "ours"
        shutil.copytree(plain, ours)
        (ours / "nbgrader_config.py").write_text(gc.CONFIG.format(root=str(ours), assignment=gc.ASSIGNMENT))

        t0 = time.perf_counter()
        result = gc.nbgrader(plain, "autograde", gc.ASSIGNMENT, check=False)
        t_plain = time.perf_counter() - t0
        t0 = time.perf_counter()
        mine = gc.grade_ours(ours, *(["--jobs", str(args.jobs)] if args.jobs else []))
        t_ours = time.perf_counter() - t0
        if result.returncode or mine.returncode:
            print(f"a grader failed: nbgrader exit {result.returncode}, ours exit {mine.returncode}\n{mine.stderr}")
            return 1
        a, b = gc.grade_cells(plain, students), gc.grade_cells(ours, students)
        same = a == b and len(a) == 4 * len(students)
        print(f"corpus: {len(students)} submissions, {len(a)} grade cells; scores identical: {same}")
        print(f"plain nbgrader autograde : {t_plain:6.1f} s  ({t_plain / len(students):.2f} s per notebook)")
        print(f"python -m autograder grade: {t_ours:6.1f} s  ({t_ours / len(students):.2f} s per notebook)")
        print(f"speed-up: {t_plain / t_ours:.1f}x")
        return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
