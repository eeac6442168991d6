"""A learner method that is the grader's own: installed, wrapped or computed with the probe side's op table, it fails
its check with a sentence that says so (and graded runs flag it); every learner's own method is judged as before."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path
from typing import Any

import engine_corpus
import pytest
import twins

from autograder import checks as catalog
from autograder import probes
from autograder.checks import messages as msg
from autograder.checks import run_checks
from autograder.loader import load
from autograder.probes.provenance import graders_code
from autograder.probes.scaffold import operations
from autograder.settings import Limits, Tolerance


def reference() -> dict[str, Any]:
    """The reference engine with the workbook's single-notebook exercises: it passes every check."""
    return load_source(twins.BASE)


def load_source(source: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "engine.py"
        path.write_text(source)
        return load(path).namespace


def _installed(value: type) -> Any:
    return operations(value)["__add__"]


def _partial(value: type) -> Any:
    return functools.partial(operations(value)["__add__"])


def _lambda(value: type) -> Any:
    theirs = operations(value)["__add__"]
    return lambda self, other: theirs(self, other)


def _wraps(value: type) -> Any:
    theirs = operations(value)["__add__"]

    @functools.wraps(theirs)
    def __add__(self: Any, other: Any) -> Any:
        return theirs(self, other)

    return __add__


def _op_table(value: type) -> Any:
    """A method of the learner's own text whose numbers come from the generated op table."""
    from autograder.probes.op_table import METHODS

    def __add__(self: Any, other: Any) -> Any:
        other = other if isinstance(other, value) else value(other)
        _, label, forward, adds = METHODS["__add__"]
        out = value(forward(self.data, other.data, None), (self, other), label)

        def _backward() -> None:
            for kid, slope in zip((self, other), adds(self.data, other.data, out.data, None, out.grad)):
                kid.grad += slope

        out._backward = _backward
        return out

    return __add__


WAYS = {"installed": _installed, "partial": _partial, "lambda": _lambda, "wraps": _wraps, "op_table": _op_table}


@pytest.mark.parametrize("way", sorted(WAYS))
def test_the_graders_own_add_fails_its_checks_saying_so_and_nothing_else_does(way):
    ns = reference()
    assert all(r.passed for r in run_checks(catalog.notebook_checks(), ns))
    value = ns["Value"]
    value.__add__ = WAYS[way](value)
    results = {r.name: r for r in run_checks(catalog.notebook_checks(), ns)}
    failed = {n for n, r in results.items() if not r.passed}
    assert failed == {"add_forward", "add_local_backward", "add_backward", "number_operands"}, failed
    for name in failed:
        r = results[name]
        assert r.misconception == msg.GRADERS_CODE and r.status == "failed" and r.points == 0, (name, r.message)
    first = next(r for r in results.values() if not r.passed)  # said in full once, then "see above", as any cause
    assert "Value.__add__ is the grader's own code (autograder/probes/" in first.message
    assert msg.hint(msg.GRADERS_CODE) in first.message


def test_every_method_of_the_workbooks_engines_is_the_learners_own():
    for path in sorted(engine_corpus.ENGINES.glob("*.py")):
        ns = load(path).namespace
        for target in {t for c in catalog.CHECKS for t in c.targets}:
            assert probes.provenance.graders_code(probes.provenance.target_object(ns, target)) is None, (path.name, target)


def test_the_teaching_aids_are_the_learners_to_call():
    from autograder import workbook

    def train(model: Any, xs: Any, ys: Any, steps: int, lr: float) -> list[float]:
        return [workbook.demo_size(steps, 1) for _ in range(steps)]

    assert graders_code(train) is None
    assert graders_code(operations(float)["tanh"]) == "autograder/probes/scaffold.py"


class InProcess:
    """The worker's side of judging, run here on a namespace (as the worker's probes would)."""

    def __init__(self, ns: dict[str, Any]) -> None:
        self.ns = ns

    def missing(self, check: str) -> list[str]:
        return probes.missing(check, self.ns)

    def observe(self, check: str, case: dict[str, Any]) -> dict[str, Any]:
        return probes.observe(check, self.ns, case, Limits().check_timeout)


def test_a_graded_run_flags_the_graders_own_code_and_scores_it_zero():
    from autograder.grading.discover.assignment import CheckCall
    from autograder.grading.grade.judge import judge_cell

    ns = reference()
    calls = (CheckCall(("mul_forward", "add_forward"), False),)
    honest = judge_cell(InProcess(ns), calls, Tolerance(), b"k" * 32)
    ns["Value"].__add__ = _installed(ns["Value"])
    verdict = judge_cell(InProcess(ns), calls, Tolerance(), b"k" * 32)
    assert honest.flags == [] and [r.passed for r in honest.results] == [True, True]
    assert [r.points for r in verdict.results] == [1.0, 0.0]  # the learner's own * keeps its point
    assert verdict.flags == [msg.FLAG_GRADERS_CODE.format(name="add_forward")]
