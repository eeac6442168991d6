"""Isolate before you blame: each method is probed alone, a composite failure is pinned on the method whose own
probe fails, reported once, and later failures with the same culprit collapse to one line."""

import re
from pathlib import Path

import pytest
from mistakes import BY_NAME, graded, learner_namespace

from autograder import checks
from autograder.checks import FAILED, NOT_IMPLEMENTED, PASSED, run_checks
from autograder.checks.messages import MISCONCEPTIONS

BACKWARD_CELL = ["backward_seeds_root", "add_backward", "mul_backward", "backward_chain_order",
                 "backward_topological_order", "backward_once_per_node", "backward_equal_data", "backward_accumulates"]


def cell(mistake: str, names: list[str]) -> list:
    return run_checks([checks.get(n) for n in names], learner_namespace(mistake))


def test_assigning_in_add_fails_add_s_own_check_and_the_backward_cell_names_add_once():
    own = cell("add_assigns_self", ["add_local_backward"])[0]
    assert own.status == FAILED and own.misconception == "add.assigns_instead_of_accumulating"
    results = cell("add_assigns_self", BACKWARD_CELL)
    failed = [r for r in results if not r.passed]
    assert failed and all(r.culprit == "Value.__add__" for r in failed)
    assert failed[0].message.startswith("needs `Value.__add__` to pass first; tested alone (add_local_backward), it fails")
    assert all(r.message == "fails because of `Value.__add__`, see above" for r in failed[1:])
    assert not any("topological" in r.message or "__eq__" in r.message for r in failed)


def test_a_broken_mul_gives_the_backward_cell_one_diagnosis_not_seven():
    results = cell("mul_unswapped", BACKWARD_CELL)
    failed = [r for r in results if not r.passed]
    full = [r for r in failed if "see above" not in r.message]
    assert len(full) == 1 and full[0].misconception == "mul.unswapped"
    assert sum(len(r.message.splitlines()) for r in failed) < 25


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


def test_a_net_check_that_runs_through_a_broken_neuron_says_the_neuron_must_pass_first():
    results = cell("neuron_graph_cut", ["neuron_forward", "layer_forward", "mlp_forward", "mse_loss_backward",
                                        "train_descends"])
    assert results[0].misconception == "neuron.graph_cut" and results[0].culprit is None
    later = results[1:]
    assert later[0].message.startswith("needs `Neuron` to pass first; tested alone (neuron_forward), it fails")
    assert all(r.culprit == "Neuron" and not r.passed for r in later)


def test_a_stub_method_makes_the_exercises_built_on_it_say_so():
    ns = learner_namespace("train_ignores_lr")

    class Stub:
        def __init__(self, nin, nouts):
            raise NotImplementedError()

    ns = {**ns, "MLP": Stub}
    result = run_checks([checks.get("mse_loss_backward")], ns)[0]
    assert result.status == NOT_IMPLEMENTED and "needs `MLP` to pass first" in result.message


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
