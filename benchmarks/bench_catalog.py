"""Time the whole check catalog on the reference engine, against the issue's targets and a hand-written check.

Run by hand: `python benchmarks/bench_catalog.py [--repeats N]`. Prints seconds and ratios; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from autograder import checks as catalog
from autograder.checks import run_checks
from autograder.loader import load

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"engine": 1.0, "engine+net": 3.0}


def timed(fn, repeats: int) -> list[float]:
    """Wall times of `repeats` calls."""
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def hand_written_check(ns: dict, checks: list[catalog.Check]) -> int:
    """What a learner would otherwise run: the same graphs, finite differences of their OWN forward pass (h = 1e-6)."""
    value, graphs = ns["Value"], 0
    for check in checks:
        for case in check.make_cases():
            expr = catalog.EXPRESSIONS.get(case.get("expr", ""))
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


def main() -> None:
    """Print the timings."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    ns = load(ROOT / "tests" / "engines" / "reference.py").namespace
    engine = [c for c in catalog.spec_checks() if c.group == "engine"]
    spec = catalog.spec_checks()
    expression_checks = [c for c in engine if c.probe is catalog.probe_expression]
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
    print(f"catalog on tests/engines/reference.py, {args.repeats} repeats (best / median seconds)")
    for label, target_key, checks, hidden in rows:
        ts = timed(lambda checks=checks, hidden=hidden: run_checks(checks, ns, hidden=hidden), args.repeats)
        best, med = min(ts), statistics.median(ts)
        target = TARGETS[target_key]
        print(f"  {label:<42} {best:7.3f} / {med:7.3f} s   = {med / target:6.1%} of the {target:g} s target")

    print(f"  {'first run in a fresh process (cold)':<42} {cold:7.3f} s           = {cold / 3.0:6.1%} of the 3 s target")
    print(f"  {'python -m autograder check (end to end)':<42} {cli:7.3f} s           = {cli / 3.0:6.1%} of the 3 s target")

    graphs = hand_written_check(ns, expression_checks)
    grader = statistics.median(timed(lambda: run_checks(expression_checks, ns), args.repeats))
    naive = statistics.median(timed(lambda: hand_written_check(ns, expression_checks), args.repeats))
    print(f"the same {graphs} expression graphs: grader {grader:.3f} s, hand-written finite differences of the learner's "
          f"own forward pass {naive:.3f} s; ratio grader / hand-written = {grader / naive:.2f}")
    print("  (the hand-written check proves only self-consistency: a wrong-sign __rsub__ passes it)")


if __name__ == "__main__":
    main()
