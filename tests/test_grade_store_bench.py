"""benchmarks/bench_store.py, run small: the writer's and the late step's output equals a plain per-notebook store
followed by nbgrader's own late step, and the figures are printed in the form the README quotes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import postgres_server
import pytest

ROOT = Path(__file__).resolve().parent.parent
LINE = re.compile(r"^store: 50 notebooks in \d+\.\d\d s: \d+ notebooks/s \((sqlite|postgresql)\)$")
FINISH = re.compile(r"^finish: 50 notebooks in \d+\.\d\d s: \d+ notebooks/s \((sqlite|postgresql)\)$")


@pytest.mark.slow  # grades 18 real workbook notebooks in the sandbox first, then stores and exports four times
def test_bench_store_stores_what_a_plain_per_notebook_store_stores_and_prints_its_rate() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_store.py"), "--notebooks", "50"],
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    kinds = ["sqlite"] + ([] if postgres_server.unavailable_reason() else ["postgresql"])
    last = lines[-len(kinds):]
    assert [LINE.match(ln).group(1) if LINE.match(ln) else ln for ln in last] == kinds
    assert [m.group(1) for m in map(FINISH.match, lines) if m] == kinds
    for kind in kinds:
        summary = next(ln for ln in lines if ln.startswith(f"{kind}: 50 rows"))
        assert "compared on 9 of 9 students" in summary and ", 18 late," in summary  # every student, some late
        assert "export equal to a plain per-notebook store and nbgrader's own late step: True" in summary
        assert "every gradebook row equal, cell by cell: True" in summary
