"""Time the check catalogue: every check cell of the workbook (right and wrong), and the whole catalogue on an engine.

Run by hand: `python benchmarks/bench_catalog.py [--repeats N]`. Prints seconds and ratios; asserts nothing.

Every check cell must answer within 1 s on 2 cores (issue 10), also when it fails and the blame runs each method's
isolated probe: the cells are timed on the solutions and on every notebook-level mistake of tests/checks/notebook_corpus.py.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "workbook"))  # the support modules
sys.path.insert(0, str(ROOT / "tests" / "checks"))

from notebook_corpus import DIAGNOSED, MISTAKES, SOURCE, notebook, run  # noqa: E402

from autograder import checks  # noqa: E402
from autograder.checks import run_checks  # noqa: E402
from autograder.checks.common import EXPRESSIONS  # noqa: E402
from autograder.loader import load  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from results import Results, add_option, recording  # noqa: E402

CELL_TARGET = 1.0
TARGETS = {"engine": 1.0, "engine+net": 3.0}


def timed(fn, repeats: int) -> list[float]:
    """Wall times of `repeats` calls."""
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def _median_seconds(nb_of: Callable[[], Any], repeats: int) -> tuple[dict[str, tuple[float, float]], Any]:
    """Per grade cell, the median over `repeats` runs of (visible, visible + hidden) seconds; and the last run."""
    runs = [run(nb_of()) for _ in range(repeats)]
    cells = runs[-1].seconds
    return {g: (statistics.median(r.seconds[g][0] for r in runs), statistics.median(r.seconds[g][1] for r in runs))
            for g in cells}, runs[-1]


def check_cells(repeats: int, results: Results) -> None:
    """The answer time of every check cell (median of `repeats` runs), on the solutions and on every corpus mistake."""
    import nbformat

    worst: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])  # visible ok, visible failing, + hidden
    for path in sorted(SOURCE.glob("*.ipynb")):
        seconds, _ = _median_seconds(lambda path=path: nbformat.read(path, as_version=4), repeats)
        for gid, (vis, both) in seconds.items():
            worst[gid][0], worst[gid][2] = vis, both
    for variant in [*MISTAKES.values(), *(d.variant for d in DIAGNOSED.values())]:
        seconds, ran = _median_seconds(lambda variant=variant: notebook(variant), repeats)
        for gid, visible, _ in ran.grades:
            vis, both = seconds[gid]
            w = worst[gid]
            if not all(r.passed for r in visible):
                w[1] = max(w[1], vis)
            w[2] = max(w[2], both)
    print(f"every check cell of the workbook: median answer in seconds over {repeats} runs, slowest case "
          f"(target {CELL_TARGET:g} s per cell)")
    print(f"  {'cell':<30} {'solution':>9} {'a mistake':>10} {'+ hidden':>9}")
    for gid, (ok, bad, both) in worst.items():
        print(f"  {gid:<30} {ok:9.3f} {bad:10.3f} {both:9.3f}")
    top = max(max(w[0], w[1]) for w in worst.values())
    print(f"  slowest learner-visible answer {top:.3f} s = {top / CELL_TARGET:.0%} of the target; "
          f"slowest with hidden inputs (nbgrader) {max(w[2] for w in worst.values()):.3f} s; "
          f"{len(MISTAKES) + len(DIAGNOSED)} mistakes")
    results.figure("slowest_cell_s", top, "s", "the slowest check cell's answer a learner waits for (median of the runs)")
    results.figure("slowest_cell_hidden_s", max(w[2] for w in worst.values()), "s",
                   "the slowest check cell with nbgrader's hidden inputs added")
    results.figure("cell_target_s", CELL_TARGET, "s", "the target for one check cell's answer", 1)
    results.figure("mistakes", len(MISTAKES) + len(DIAGNOSED), "mistakes", "notebook mistakes timed", 0)


def hand_written_check(ns: dict, cks: list[checks.Check]) -> int:
    """What a learner would otherwise run: the same graphs, finite differences of their OWN forward pass (h = 1e-6)."""
    value, graphs = ns["Value"], 0
    for check in cks:
        for case in check.make_cases():
            expr = EXPRESSIONS.get(case.get("expr", ""))
            if expr is None or not case.get("backward"):
                continue
            xs = case["inputs"]
            leaves = [value(x) for x in xs]
            expr.function(*leaves).backward()
            for i, leaf in enumerate(leaves):
                up, down = list(xs), list(xs)
                up[i] += 1e-6
                down[i] -= 1e-6
                f_up = expr.function(*(value(x) for x in up)).data
                f_down = expr.function(*(value(x) for x in down)).data
                assert abs((f_up - f_down) / 2e-6 - leaf.grad) < 1e-3 * max(1.0, abs(leaf.grad))
            graphs += 1
    return graphs


def catalogue(repeats: int, results: Results) -> None:
    """The whole catalogue on the reference engine, against the README's targets and a hand-written check."""
    ns = load(ROOT / "tests" / "engines" / "reference.py").namespace
    engine = [c for c in checks.spec_checks() if c.group == "engine"]
    spec = checks.spec_checks()
    expression_checks = [c for c in engine if any(k["probe"] == "expression" for k in c.make_cases())]
    t = time.perf_counter()
    assert all(r.passed for r in run_checks(spec, ns))  # the engine must earn full marks or the timing means nothing
    cold = time.perf_counter() - t
    cli = statistics.median(timed(lambda: subprocess.run(
        [sys.executable, "-m", "autograder", "check", str(ROOT / "tests" / "engines" / "reference.py")],
        check=True, capture_output=True), 3))
    rows = [
        ("engine checks", "engine", engine, False),
        ("engine + net + training checks", "engine+net", spec, False),
        ("engine + net + training, hidden inputs", "engine+net", spec, True),
    ]
    print(f"catalogue on tests/engines/reference.py, {repeats} repeats (best / median seconds)")
    for label, target_key, cks, hidden in rows:
        ts = timed(lambda cks=cks, hidden=hidden: run_checks(cks, ns, hidden=hidden), repeats)
        best, med = min(ts), statistics.median(ts)
        target = TARGETS[target_key]
        print(f"  {label:<42} {best:7.3f} / {med:7.3f} s   = {med / target:6.1%} of the {target:g} s target")
    print(f"  {'first run in this process (cold)':<42} {cold:7.3f} s           = {cold / 3.0:6.1%} of the 3 s target")
    print(f"  {'python -m autograder check (end to end)':<42} {cli:7.3f} s           = {cli / 3.0:6.1%} of the 3 s target")
    results.figure("catalogue_cold_s", cold, "s", "the whole catalogue on a correct engine, first run in a process")
    results.figure("check_cli_s", cli, "s", "python -m autograder check on an engine file, end to end")
    graphs = hand_written_check(ns, expression_checks)
    grader = statistics.median(timed(lambda: run_checks(expression_checks, ns), repeats))
    naive = statistics.median(timed(lambda: hand_written_check(ns, expression_checks), repeats))
    print(f"the same {graphs} expression graphs: grader {grader:.3f} s, hand-written finite differences of the learner's "
          f"own forward pass {naive:.3f} s; ratio grader / hand-written = {grader / naive:.2f}")
    results.figure("grader_vs_hand_written", grader / naive, "x",
                   "the grader's time / hand-written finite differences of the same graphs")
    print("  (the hand-written check proves only self-consistency: a wrong-sign __rsub__ passes it)")


def main() -> None:
    """Print the timings."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    add_option(parser, "bench_catalog")
    args = parser.parse_args()
    with recording("bench_catalog", args.results) as results:
        check_cells(args.repeats, results)
        catalogue(args.repeats, results)


if __name__ == "__main__":
    main()
