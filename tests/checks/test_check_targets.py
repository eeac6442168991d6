"""A check's declared targets are exactly the learner methods it runs: every learner function the grader calls itself
(from a probe, or from the text of a graph it builds) belongs to a target, and every target it needs is called.

What a learner method calls in turn is the grader's where it is a Value operation, backward(), the model or the loss
(a Neuron's `+`, `__neg__` written as `self * -1`: probes/scaffold.py swaps them in), so a check runs no learner
function beyond its targets and the exercises it is declared to be made of (`prerequisites`: a Layer of Neurons).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from twins import BASE

from autograder import checks
from autograder.checks import run_checks
from autograder.loader import load
from autograder.probes.graphs import EXPRESSION_FILE

PACKAGE = str(Path(checks.__file__).resolve().parent.parent)


def namespace() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "learner.py"
        path.write_text(BASE)
        return load(path).namespace


def targets_by_qualname(ns: dict[str, Any]) -> dict[str, str]:
    """The target each learner function stands for, by its qualname: `Value.<attr>` for whatever Value holds (a
    function assigned as `Value.__rtruediv__ = _rtruediv` too), the class for a net class's methods, else the name."""
    names: dict[str, str] = {}
    for key, obj in ns.items():
        if isinstance(obj, type):
            for attr, fn in vars(obj).items():
                if callable(fn) and hasattr(fn, "__qualname__"):
                    names.setdefault(fn.__qualname__, f"Value.{attr}" if key == "Value" else key)
        elif callable(obj) and hasattr(obj, "__qualname__"):
            names.setdefault(obj.__qualname__, key)
    vattrs = vars(ns["Value"])
    for attr, fn in vattrs.items():  # Value's own attributes win over the module-level name they were made from
        if callable(fn) and hasattr(fn, "__qualname__"):
            names[fn.__qualname__] = f"Value.{attr}"
    return names


def called_by_the_grader(check: checks.Check, hidden: bool) -> set[str]:
    """The targets of the learner functions the grader's own frames (probes, graph text) call while `check` runs."""
    ns = namespace()
    learner_file = ns["__file__"]
    names = targets_by_qualname(ns)
    seen: set[str] = set()

    def grader(frame: FrameType | None) -> bool:
        name = frame.f_code.co_filename if frame else ""
        return name.startswith((PACKAGE, EXPRESSION_FILE))

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename == learner_file and grader(frame.f_back):
            qualname = frame.f_code.co_qualname.split(".<locals>.")[0]
            seen.add(names.get(qualname, qualname))

    sys.setprofile(profile)
    try:
        results = run_checks([check], ns, hidden=hidden)
    finally:
        sys.setprofile(None)
    assert results[0].passed, results[0].message
    return seen - {"Value.__init__"}  # the constructor is the fixed API every check builds with


@pytest.mark.parametrize("hidden", [False, pytest.param(True, marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", sorted(checks.BY_NAME))
def test_a_check_runs_exactly_its_declared_targets(name, hidden):
    check = checks.get(name)
    ran = called_by_the_grader(check, hidden) - set(check.companions)  # the exercise's other methods, when defined
    assert ran <= set(check.targets), f"{name} runs {sorted(ran - set(check.targets))}, not among its targets"
    data = {t for t in check.needs if not t.startswith("Value.") and t not in targets_by_qualname(namespace()).values()}
    assert set(check.needs) - data <= ran, f"{name} declares {sorted(set(check.needs) - data - ran)} but never runs them"


def run_by_anyone(check: checks.Check, hidden: bool) -> set[str]:
    """The targets of every learner function that runs while `check` runs, whoever calls it."""
    ns = namespace()
    learner_file = ns["__file__"]
    names = targets_by_qualname(ns)
    seen: set[str] = set()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename == learner_file:
            qualname = frame.f_code.co_qualname.split(".<locals>.")[0]
            seen.add(names.get(qualname, qualname))

    sys.setprofile(profile)
    try:
        results = run_checks([check], ns, hidden=hidden)
    finally:
        sys.setprofile(None)
    assert results[0].passed, results[0].message
    return seen - {"Value.__init__"}


def made_of(check: checks.Check) -> set[str]:
    """The targets of the checks `check` is declared to be made of, and of theirs."""
    out: set[str] = set()
    for name in check.prerequisites:
        other = checks.get(name)
        out |= set(other.targets) | made_of(other)
    return out


@pytest.mark.parametrize("name", sorted(checks.BY_NAME))
def test_a_check_runs_no_learner_function_beyond_its_targets_and_what_it_is_made_of(name):
    """Issue 34: exercises judged apart. A method another exercise's method calls (Neuron's tanh, __truediv__'s
    **) is the grader's while this check runs, so a slip there cannot cost this check."""
    check = checks.get(name)
    allowed = set(check.targets) | set(check.companions) | made_of(check)
    ran = run_by_anyone(check, hidden=False)
    assert ran <= allowed, f"{name} ran {sorted(ran - allowed)}"
