"""Isolate before you blame: each method is probed alone, a composite failure is pinned on the method whose own
probe fails, reported once, and later failures with the same culprit collapse to one line."""

import re
from pathlib import Path

import pytest
from mistakes import BY_NAME, graded, learner_namespace

from autograder import checks
from autograder.checks import FAILED, NOT_IMPLEMENTED, PASSED, run_checks
from autograder.checks.messages import MISCONCEPTIONS

BACKWARD_CELL = ["backward_seeds_root", "backward_through_add", "backward_through_mul", "backward_chain_order",
                 "backward_topological_order", "backward_equal_data", "backward_accumulates"]


def cell(mistake: str, names: list[str]) -> list:
    return run_checks([checks.get(n) for n in names], learner_namespace(mistake))


def test_assigning_in_add_fails_add_s_own_check_and_costs_the_backward_cell_nothing():
    """The backward cell runs the learner's backward() on graphs of the grader's own + and * (issue 34)."""
    own = cell("add_assigns_self", ["add_local_backward"])[0]
    assert own.status == FAILED and own.misconception == "add.assigns_instead_of_accumulating"
    results = cell("add_assigns_self", [*BACKWARD_CELL, "backward_once_per_node"])
    assert [(r.name, r.message) for r in results if not r.passed] == []


@pytest.mark.parametrize("mistake", ["mul_unswapped", "mul_missing_upstream", "add_uses_out_data", "add_missing_upstream",
                                     "mul_assigns_other", "mul_backward_never_assigned"])
def test_a_broken_operator_leaves_a_correct_backward_every_point(mistake):
    results = cell(mistake, BACKWARD_CELL)
    assert [(r.name, r.message[:200]) for r in results if not r.passed] == []


@pytest.mark.parametrize("mistake", ["forward_order", "breadth_first_order", "no_visited_set", "root_not_seeded"])
def test_a_broken_backward_is_blamed_on_backward_alone_with_the_operators_out_of_play(mistake):
    results = cell(mistake, BACKWARD_CELL)
    failed = [r for r in results if not r.passed]
    assert failed and "found by testing `Value.backward` alone" in failed[0].message
    assert failed[0].misconception.startswith("backward.")
    assert all(r.culprit == "Value.backward" for r in failed[1:])


def test_a_correct_backward_over_a_broken_operator_is_never_called_wrong():
    for mistake in ("add_assigns_self", "mul_unswapped", "mul_missing_upstream", "add_uses_out_data"):
        alone = cell(mistake, ["backward_alone"])[0]
        assert alone.status == PASSED, (mistake, alone.message)


def test_a_net_check_made_of_a_broken_neuron_says_the_neuron_must_pass_first_and_the_loss_and_train_do_not():
    """A Layer is made of the learner's Neurons (the notebook says so); mse_loss and train are judged on the grader's
    own model."""
    results = cell("neuron_graph_cut", ["neuron_forward", "layer_forward", "mlp_forward", "mse_loss_backward",
                                        "train_descends"])
    assert results[0].misconception == "neuron.graph_cut" and results[0].culprit is None
    layer, mlp, loss, train = results[1:]
    assert layer.message.startswith("needs `Neuron` to pass first; tested alone (neuron_forward), it fails")
    assert not mlp.passed and mlp.culprit == "Neuron"
    assert loss.passed and train.passed, (loss.message, train.message)


class Neuron:  # a stub, as the released notebook has it (top level: its qualname is the learner's)
    def __init__(self, nin):
        raise NotImplementedError()


class Layer:
    def __init__(self, nin, nout):
        raise NotImplementedError()


def test_a_stub_neuron_makes_the_layer_built_on_it_say_so_and_leaves_the_loss_alone():
    ns = learner_namespace("train_ignores_lr")
    ns["Neuron"] = Neuron  # in the namespace the learner's Layer looks its Neuron up in
    layer, loss = run_checks([checks.get("layer_forward"), checks.get("mse_loss_backward")], ns)
    assert layer.status == NOT_IMPLEMENTED and "needs `Neuron` to pass first" in layer.message
    assert loss.passed, loss.message


def test_a_stub_of_the_method_a_check_judges_is_not_implemented_never_a_dependency():
    ns = learner_namespace("neuron_graph_cut")  # a broken Neuron, which Layer is made of
    ns["Layer"] = Layer
    result = run_checks([checks.get("layer_forward")], ns)[0]
    assert result.status == NOT_IMPLEMENTED and result.message.startswith("not implemented yet"), result.message
    assert "pass first" not in result.message


def test_a_leftover_raise_below_written_code_is_told_to_go():
    result = next(r for r in graded("add_leftover_raise") if r.name == "add_local_backward")
    assert result.status == FAILED and result.misconception == "common.leftover_raise"
    assert "delete that line" in result.message and "not implemented" not in result.message


def test_a_stub_that_only_raises_is_not_implemented_and_told_to_replace_the_raise():
    ns = dict(learner_namespace("add_assigns_self"))
    source = "def __add__(self, other):\n    raise NotImplementedError()\n"
    exec(source, scope := {})
    ns["Value"].__add__ = scope["__add__"]
    result = run_checks([checks.get("add_local_backward")], ns)[0]
    assert result.status == NOT_IMPLEMENTED and result.misconception is None
    assert "replace the `raise NotImplementedError()` line" in result.message


RELATIVE_ERRORS = {
    "relerr.max_without_abs": lambda a, b: abs(a - b) / max(a, b) if max(a, b) else 0.0,
    "relerr.divides_by_b": lambda a, b: abs(a - b) / abs(b) if (a or b) else 0.0,
    "relerr.min": lambda a, b: abs(a - b) / min(abs(a), abs(b)) if (a and b) else 0.0,
    "relerr.no_abs": lambda a, b: (a - b) / max(abs(a), abs(b)) if (a or b) else 0.0,
    "relerr.zero_over_zero": lambda a, b: abs(a - b) / max(abs(a), abs(b)),
}


@pytest.mark.parametrize("misconception", sorted(RELATIVE_ERRORS))
def test_relative_error_inputs_separate_the_right_scale_from_plausible_wrong_ones(misconception):
    result = run_checks([checks.get("relative_error")], {"relative_error": RELATIVE_ERRORS[misconception]})[0]
    assert not result.passed and result.misconception == misconception, result.message


def test_every_misconception_id_in_the_catalogue_has_a_sentence():
    used = set()
    for path in (Path(checks.__file__).parent).glob("*.py"):
        used |= set(re.findall(r'"((?:[a-z]+)\.[a-z_]+)"', path.read_text()))
    ids = {u for u in used if u.split(".")[0] in {m.split(".")[0] for m in MISCONCEPTIONS}}
    assert ids - set(MISCONCEPTIONS) == set()


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_every_engine_mistake_s_first_failure_names_its_method_and_a_misconception_where_one_is_known(name):
    mistake = BY_NAME[name]
    failed = [r for r in graded(name) if not r.passed]
    assert failed
    first = failed[0]
    named = first.culprit or (first.targets[0] if len(first.targets) == 1 else None)
    assert mistake.target in first.targets or first.culprit == mistake.target or mistake.target in first.message, \
        (name, named, first.name, first.message[:200])
