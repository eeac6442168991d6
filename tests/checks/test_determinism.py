"""The same engine gets the same verdicts and the same sentences on every run (issue 34): `python -m autograder check
FILE --json` prints the same JSON under any PYTHONHASHSEED and whatever order the allocator hands out addresses in,
for every buggy engine of the corpus and the third-party-style ones of tests/engines (one whose `__pow__` sets
`self.grad = ...` failed `all_bricks` in 4 of 6 runs).

Each run is a fresh process (tests/checks/verdicts_run.py) that checks many files; the runs differ in PYTHONHASHSEED and in
how the allocator was shuffled before each file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from engine_corpus import ENGINES, THIRD_PARTY
from mistakes import BY_NAME

RUNNER = Path(__file__).resolve().parent / "verdicts_run.py"
RUNS = [("0", 0), ("1", 1), ("2024", 2)]  # (PYTHONHASHSEED, allocator shuffle)
# the engines whose verdicts depend on an order when a walk follows a set: each walk of the graph, a `grad = ...`
# that wins or loses by the order its _backward runs in, nodes merged by a value hash
ORDER_SENSITIVE = ["forward_order", "topo_preorder", "no_visited_set", "recursion_without_topo", "breadth_first_order",
                   "eq_hash_by_value", "add_assigns_self", "mul_assigns_other", "div_other_sign"]


def files(tmp: Path, mistakes: list[str], engines: list[str]) -> list[str]:
    """The engine files to check: the corpus mistakes written out, then the engines of tests/engines."""
    out = []
    for name in mistakes:
        path = tmp / f"{name}.py"
        path.write_text(BY_NAME[name].source())
        out.append(str(path))
    return out + [str(ENGINES / f"{name}.py") for name in engines]


def verdicts(paths: list[str], seed: str, shuffle: int) -> dict[str, str]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    proc = subprocess.run([sys.executable, str(RUNNER), str(shuffle), *paths], capture_output=True, text=True, env=env,
                          timeout=1200, check=True)
    return json.loads(proc.stdout)


def assert_same_everywhere(paths: list[str]) -> None:
    runs = [verdicts(paths, seed, shuffle) for seed, shuffle in RUNS]
    for path in paths:
        outputs = [run[path] for run in runs]
        assert json.loads(outputs[0]), path  # each run checked it
        differs = [o for o in outputs if o != outputs[0]]
        assert differs == [], (path, outputs[0][:1500], differs[0][:1500] if differs else "")


def test_order_sensitive_and_third_party_engines_get_the_same_json_on_every_run(tmp_path):
    assert_same_everywhere(files(tmp_path, ORDER_SENSITIVE, THIRD_PARTY))


@pytest.mark.slow
def test_every_engine_of_the_corpus_gets_the_same_json_on_every_run(tmp_path):
    engines = sorted(p.stem for p in ENGINES.glob("*.py"))
    assert_same_everywhere(files(tmp_path, sorted(BY_NAME), engines))


def test_a_learner_object_is_described_without_its_address():
    """A message that shows a learner object (a Value where a number belongs) reads the same on every run: its
    memory address never appears, nor anything its own __repr__ says."""
    from autograder.probes.safe import short_repr

    class Value:
        def __repr__(self):
            raise RuntimeError("a learner repr never runs")

    shown = {short_repr(Value()) for _ in range(3)}
    assert shown == {"<Value object>"}
