"""The grader's model (scaffold.model_class) stands in for the learner's while a check runs: made for each probe that
reads it, fresh each time, and only then (an engine check never pays for building the net's classes)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
import twins

from autograder import checks
from autograder.checks import run_checks
from autograder.loader import load
from autograder.probes import scaffold


def namespace(drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """The reference engine and exercises (every check passes), without the names in `drop`."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "engine.py"
        path.write_text(twins.BASE)
        ns = load(path).namespace
    for name in drop:
        ns.pop(name, None)
    return ns


@pytest.fixture
def models_made(monkeypatch: pytest.MonkeyPatch) -> list[type]:
    made: list[type] = []
    real = scaffold.model_class

    def counted(value: type) -> Any:
        made.append(real(value))
        return made[-1]

    monkeypatch.setattr(scaffold, "model_class", counted)
    return made


@pytest.mark.parametrize("drop", [(), ("MLP",)], ids=["with MLP", "without MLP"])
def test_the_view_holds_the_graders_model_and_the_namespace_gets_its_own_back(drop):
    ns = namespace(drop)
    before = ns.get("MLP")
    with scaffold.scaffolded(ns, ()) as view:
        assert "MLP" in view and "MLP" in list(view)
        model = view["MLP"]
        assert model.__module__ == scaffold.__name__ and view.get("MLP") is model
        assert ns.get("MLP") is (model if drop == () else None)  # the learner's functions name the grader's
    assert ns.get("MLP") is before


def test_each_probe_gets_a_model_class_of_its_own(models_made):
    ns = namespace(("MLP",))
    with scaffold.scaffolded(ns, ()) as view:
        view["MLP"].zero_grad = None  # a learner's code patching the grader's class in one probe
    with scaffold.scaffolded(ns, ()) as view:
        assert callable(view["MLP"].zero_grad)
    assert len(models_made) == 2 and models_made[0] is not models_made[1]


def test_a_probe_that_never_reads_the_model_makes_none(models_made):
    ns = namespace(("MLP",))
    engine = run_checks([checks.get("add_forward"), checks.get("backward_accumulates")], ns)
    assert [r.status for r in engine] == [checks.PASSED] * 2
    assert models_made == []
    loss = run_checks([checks.get("mse_loss_backward")], ns)  # its probe builds the grader's model
    assert [r.status for r in loss] == [checks.PASSED] and models_made
