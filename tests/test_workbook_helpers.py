"""The workbook's helpers and its notebook-only checks: each check catches the mistake it was written for."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

from autograder import checks as catalog
from autograder.checks import run_check
from autograder.workbook import demo_size, make_moons, progress, summary


@pytest.fixture(scope="module")
def ref():
    spec = importlib.util.spec_from_file_location("reference_engine_h", Path(__file__).parent / "engines" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def outcome(name: str, ns: dict, hidden: bool = False):
    return run_check(catalog.get(name), ns, hidden=hidden)


def test_make_moons_is_seeded_balanced_and_two_dimensional():
    xs, ys = make_moons(60, seed=2)
    assert (xs, ys) == make_moons(60, seed=2)
    assert xs != make_moons(60, seed=3)[0]
    assert len(xs) == 60 and all(len(p) == 2 and all(math.isfinite(v) for v in p) for p in xs)
    assert sorted(set(ys)) == [-1.0, 1.0] and ys.count(1.0) == 30


def test_moons_are_not_linearly_separable_along_either_axis():
    xs, ys = make_moons(200, noise=0.0, seed=0)
    for axis in (0, 1):
        pos = [p[axis] for p, y in zip(xs, ys) if y > 0]
        neg = [p[axis] for p, y in zip(xs, ys) if y < 0]
        assert max(neg) > min(pos) and max(pos) > min(neg)  # the two moons overlap on each axis


def test_demo_size_is_short_under_nbgrader(monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    assert demo_size(80, 3) == 80
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert demo_size(80, 3) == 3


def test_progress_outside_jupyter_writes_to_stdout_not_stderr(capsys):
    assert list(progress(range(3), desc="x")) == [0, 1, 2]
    out, err = capsys.readouterr()
    assert err == "" and "3/3" in out


def test_summary_counts_passing_checks_and_never_raises(ref, capsys):
    summary("add_forward", "numerical_derivative", ns=vars(ref))
    out = capsys.readouterr().out
    assert "✓ add_forward" in out and "✗ numerical_derivative" in out and "1 of 2 checks pass" in out


def local_engine(ref, swapped=False, forget_upstream=False):
    class Value(ref.Value):
        def __mul__(self, other):
            out = Value(self.data * other.data, (self, other), "*")

            def _backward():
                up = 1.0 if forget_upstream else out.grad
                self.grad += (self.data if swapped else other.data) * up
                other.grad += (other.data if swapped else self.data) * up

            out._backward = _backward
            return out

    return {"Value": Value}


def test_mul_local_backward_passes_reference_and_names_unswapped_operands(ref):
    assert outcome("mul_local_backward", {"Value": ref.Value}, hidden=True).passed
    bad = outcome("mul_local_backward", local_engine(ref, swapped=True))
    assert not bad.passed and "unswapped" in bad.message
    bad = outcome("mul_local_backward", local_engine(ref, forget_upstream=True))
    assert not bad.passed and "missing `* out.grad`" in bad.message


def test_add_local_backward_says_when_backward_was_never_attached(ref):
    class Value(ref.Value):
        def __add__(self, other):
            return Value(self.data + other.data, (self, other), "+")

    bad = outcome("add_local_backward", {"Value": Value})
    assert not bad.passed and "out._backward = _backward" in bad.message


def test_tanh_from_bricks_needs_bricks_and_the_right_gradient(ref):
    def good(x):
        e = (2 * x).exp()
        return (e - 1) / (e + 1)

    assert outcome("tanh_from_bricks", {"Value": ref.Value, "tanh_from_bricks": good}, hidden=True).passed
    cheat = outcome("tanh_from_bricks", {"Value": ref.Value, "tanh_from_bricks": lambda x: x.tanh()})
    assert not cheat.passed and "bricks" in cheat.message
    wrong = outcome("tanh_from_bricks", {"Value": ref.Value, "tanh_from_bricks": lambda x: ((2 * x).exp() - 1) / 2})
    assert not wrong.passed


def test_grads_of_wants_fresh_values_on_every_call(ref):
    def good(f, xs):
        leaves = [ref.Value(x) for x in xs]
        f(*leaves).backward()
        return [v.grad for v in leaves]

    assert outcome("grads_of", {"Value": ref.Value, "grads_of": good}, hidden=True).passed
    kept: dict[int, object] = {}

    def stale(f, xs):
        leaves = [kept.setdefault(i, ref.Value(x)) for i, x in enumerate(xs)]
        f(*leaves).backward()
        return [v.grad for v in leaves]

    bad = outcome("grads_of", {"Value": ref.Value, "grads_of": stale})
    assert not bad.passed and "second call" in bad.message
    short = outcome("grads_of", {"Value": ref.Value, "grads_of": lambda f, xs: good(f, xs)[:1]})
    assert not short.passed and "one gradient per input" in short.message


def test_forward_only_diagnosis_reproduces_without_backward():
    # Notebook 2's Value has no backward() yet: its repro lines must not call it.
    class Value:
        def __init__(self, data, _children=(), _op=""):
            self.data = data

        def __add__(self, other):
            return Value(self.data - other.data)

    bad = outcome("add_forward", {"Value": Value})
    assert not bad.passed and "reproduce:" in bad.message and "backward" not in bad.message


def test_plots_work_headless_and_return_figures_outside_jupyter(capsys):
    from autograder.workbook import plot_decision_boundary, plot_loss

    class Out:
        def __init__(self, data):
            self.data = data

    xs, ys = make_moons(20, seed=1)
    fig = plot_loss([1.0, 0.5, 0.01], "loss")
    assert fig.axes[0].get_yscale() == "log" and len(fig.axes[0].lines[0].get_xdata()) == 3
    fig = plot_decision_boundary(lambda p: Out(p[1] - 0.2), xs, ys, resolution=6)
    assert fig.axes[0].collections  # the shaded regions and the scattered examples
    assert capsys.readouterr().err == ""
