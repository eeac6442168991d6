"""The pieces of hostile-submission handling that need no grading run: lying numbers, the nudge, the output cap."""

from __future__ import annotations

import fractions
import math
import os
import subprocess

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from autograder.checks.messages import probe_error
from autograder.grading.grade import channel
from autograder.grading.grade.judge import nudge
from autograder.grading.grade.sandbox.client import STAGING_PREFIX, remove_abandoned_stagings
from autograder.grading.grade.worker.outputs import OutputLimitExceeded, Outputs, _Stream
from autograder.probes import safe


class AlwaysEqual:
    def __eq__(self, other):
        return True

    __hash__ = None


class LyingFloat(float):
    def __sub__(self, other):
        return 0.0

    def __abs__(self):
        return 0.0


class FalseFloat(float):
    def __float__(self):
        return 1.0


@given(st.floats(allow_nan=False, allow_infinity=False, width=64))
def test_numpy_and_plain_numbers_are_never_taken_for_liars(x: float) -> None:
    for honest in (x, np.float64(x), fractions.Fraction(x)):
        assert safe.read_number(honest, "x") == pytest.approx(x, rel=1e-15, abs=0)
    assert safe.lie(np.float64(x), x) is None


def test_an_object_equal_to_anything_fails_the_read_and_is_recorded_for_the_flags() -> None:
    safe.SUSPICIONS.clear()
    with pytest.raises(safe.LearnerError) as caught:
        safe.read_number(AlwaysEqual(), "a.grad")
    assert "the grader reads only plain numbers" in probe_error(caught.value.as_data())
    assert len(safe.SUSPICIONS) == 1 and safe.SUSPICIONS[0].startswith("a.grad: a AlwaysEqual that compares equal")
    safe.SUSPICIONS.clear()


@pytest.mark.parametrize("liar", [LyingFloat(2.5), FalseFloat(2.5)], ids=["sub_abs", "float"])
def test_a_lying_float_is_read_by_its_stored_value_and_recorded_for_the_flags(liar: float) -> None:
    safe.SUSPICIONS.clear()
    assert safe.read_number(liar, "a.grad") == 2.5
    assert len(safe.SUSPICIONS) == 1 and safe.SUSPICIONS[0].startswith(f"a.grad: a {type(liar).__name__} that gives")
    safe.SUSPICIONS.clear()


def test_a_value_object_by_mistake_is_an_honest_error_not_a_lie() -> None:
    class Value:
        def __init__(self, data):
            self.data = data

        def __eq__(self, other):  # the catalog's "equal data" mistake
            return self.data == other.data

    safe.SUSPICIONS.clear()
    with pytest.raises(safe.LearnerError) as caught:
        safe.read_number(Value(1.0), "out.data")
    assert "expected a number" in probe_error(caught.value.as_data())
    assert safe.SUSPICIONS == []


def test_nudge_moves_only_non_integer_floats() -> None:
    case = {"expr": "mul_add", "inputs": [0.5, -1.25, 2.0, 0.0], "backward": True, "steps": 3, "pairs": [[1e-9, 3.0]]}
    moved = nudge(case)
    assert moved["expr"] == "mul_add" and moved["backward"] is True and moved["steps"] == 3
    assert moved["inputs"][2:] == [2.0, 0.0] and moved["pairs"][0][1] == 3.0
    assert all(a != b and math.isclose(a, b, rel_tol=2e-3) for a, b in zip(moved["inputs"][:2], case["inputs"][:2]))


def test_a_print_loop_is_stopped_at_the_output_cap_with_a_marker() -> None:
    outputs = Outputs(10_000)
    stream = _Stream(outputs, "stdout")
    with pytest.raises(OutputLimitExceeded):
        for _ in range(10**6):
            stream.write("x" * 99 + "\n")
    items = outputs.export()
    # the cap counts the output's JSON bytes: the printed text, its escapes and the output's own fields
    assert 10_000 - 100 < channel.output_size(items[0]) <= 10_000 and "output truncated" in items[-1]["text"]
    with pytest.raises(OutputLimitExceeded):
        stream.write("more")  # a loop that catches the error keeps failing rather than printing on


def test_staged_code_of_a_killed_grader_is_removed_and_a_running_graders_is_kept(tmp_path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    killed = tmp_path / f"{STAGING_PREFIX}{gone.pid}-abc"
    running = tmp_path / f"{STAGING_PREFIX}{os.getpid()}-def"
    unnamed = tmp_path / f"{STAGING_PREFIX}xyz"  # not one of ours by name: left alone
    for path in (killed, running, unnamed):
        (path / "autograder").mkdir(parents=True)
    assert remove_abandoned_stagings(tmp_path) == [killed]
    assert not killed.exists() and running.exists() and unnamed.exists()


def test_a_sandbox_that_cannot_start_its_python_is_not_blamed_on_user_namespaces() -> None:
    from autograder.grading.grade.sandbox.client import start_failure

    missing = start_failure("bwrap: execvp /runtime/venv/bin/python: No such file or directory")
    assert "could not be started inside it" in missing and "user namespaces" not in missing
    denied = start_failure("bwrap: setting up uid map: Permission denied")
    assert "unprivileged user namespaces" in denied and "--unsafe-no-sandbox" in denied
