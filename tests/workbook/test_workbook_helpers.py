"""The workbook's helpers and its notebook-only checks: each check catches the mistake it was written for."""

from __future__ import annotations

import importlib.util
import inspect
import math
import re
from pathlib import Path

import pytest
from engine_corpus import ENGINES

from autograder import checks as catalog
from autograder import notebook
from autograder.checks import run_check
from autograder.checks.messages import hint
from autograder.notebook import CheckFailed, check
from autograder.workbook import demo_size, make_moons, progress, summary


@pytest.fixture(scope="module")
def ref():
    spec = importlib.util.spec_from_file_location("reference_engine_h", ENGINES / "reference.py")
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


def test_demo_size_is_short_under_nbgrader_and_the_cell_says_so_once(monkeypatch, capsys):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    assert demo_size(80, 3) == 80 and capsys.readouterr().out == ""
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert demo_size(80, 3) == 3
    assert capsys.readouterr().out.startswith("(grading-size run: 3 here, 80 in your own run;")


def test_a_grading_size_demo_is_labelled_once_per_cell(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    shell = InteractiveShell.instance()
    shell.user_ns["demo_size"] = demo_size
    with capture_output() as one:
        shell.run_cell("for _ in range(2): demo_size(100, 1)\ndemo_size(60, 8)", store_history=True)
    with capture_output() as two:
        shell.run_cell("demo_size(80, 1)", store_history=True)
    assert one.stdout.count("grading-size run") == 1 and two.stdout.count("grading-size run: 1 here, 80 in") == 1


def test_progress_outside_jupyter_writes_to_stdout_not_stderr(capsys):
    assert list(progress(range(3), desc="x")) == [0, 1, 2]
    out, err = capsys.readouterr()
    assert err == "" and "3/3" in out


def checked(ns: dict, *names: str) -> dict:
    """The namespace after a learner's kernel ran the check cells of `names` (each result recorded where it ran)."""
    notebook.record(ns, catalog.run_checks([catalog.get(n) for n in names], ns))
    return ns


def test_summary_scores_whole_grade_cells_as_nbgrader_does_and_never_raises(ref, capsys):
    ns = checked(dict(vars(ref)), "add_forward", "mul_forward", "numerical_derivative")
    summary((1, "add_forward"), (2, "mul_forward", "numerical_derivative"), ns=ns)
    out = capsys.readouterr().out
    assert "✓ add_forward" in out and "⋯ numerical_derivative: not done yet" in out
    assert "1 of 3 points; 2 of 3 checks pass." in out  # one failing check costs its cell's 2 points
    assert "Not done yet: numerical_derivative." in out and "Failing" not in out


def test_summary_lists_failing_checks_apart_from_unfinished_ones(ref, capsys):
    class Value(ref.Value):
        def __mul__(self, other):
            other = other if isinstance(other, Value) else Value(other)
            return Value(self.data + other.data, (self, other), "*")

        def __add__(self, other):
            raise NotImplementedError()

    summary((1, "mul_forward"), (1, "add_forward"), ns=checked({"Value": Value}, "mul_forward", "add_forward"))
    out = capsys.readouterr().out
    assert "0 of 2 points; 0 of 2 checks pass." in out
    assert "Not done yet: add_forward." in out and "Failing: mul_forward." in out


def test_summary_scores_a_check_where_its_cell_stands_not_where_it_passes_at_the_end(ref, monkeypatch, capsys):
    """nbgrader runs top to bottom: a check that failed at its cell (the Neuron a Layer is made of, fixed only
    later) scores 0."""
    monkeypatch.setattr(notebook, "in_kernel", lambda: True)  # a learner's kernel: check shows and returns
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    ns = bias_first_net()
    check("add_forward", ns=ns)
    check("layer_forward", ns=ns)  # its check cell: fails here (its Neuron lists the bias first), as nbgrader scores it
    ns["Neuron"] = ref.Neuron  # the Neuron fixed afterwards
    summary((1, "add_forward"), (1, "layer_forward"), (1, "mul_forward"), ns=ns)
    out = capsys.readouterr().out.split("Points as nbgrader")[-1]
    assert "1 of 3 points; 1 of 3 checks pass." in out and "done" not in out.replace("Not done", "")
    assert re.search(r"0 of 1 point +✓ layer_forward: .*\(passes now, but failed when its check cell ran\)", out)
    assert "(passes now, but failed when its check cell ran)" in out
    assert "(passes now, but its check cell has not run)" in out  # mul_forward: no check cell ran it
    assert "Passing only now: layer_forward, mul_forward." in out and "Restart & Run All" in out
    check("layer_forward", ns=ns)  # re-run where it stands, now with the fixed Neuron: it counts
    check("mul_forward", ns=ns)
    summary((1, "add_forward"), (1, "layer_forward"), (1, "mul_forward"), ns=ns)
    out = capsys.readouterr().out.split("Points as nbgrader")[-1]
    assert "3 of 3 points; 3 of 3 checks pass: this notebook is done" in out and "Passing only now" not in out


def test_check_outside_a_kernel_raises_with_the_one_line_diagnosis(ref, monkeypatch, capsys):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    with pytest.raises(CheckFailed) as info:
        check("numerical_derivative", ns=vars(ref))
    assert str(info.value).startswith("numerical_derivative: not implemented yet")
    assert "\n" not in str(info.value)
    assert "✗ numerical_derivative" in capsys.readouterr().out
    lines = info.value._render_traceback_()  # what nbgrader's Validate dialog shows
    assert lines[0] == "CheckFailed: 1 of 1 checks failed" and lines[1].startswith("✗ numerical_derivative: not implemented")


def test_validate_shows_the_method_and_the_misconception_first_and_every_word_fits_its_width(ref, monkeypatch):
    from nbgrader.validator import Validator

    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")
    with pytest.raises(CheckFailed) as info:
        check("mul_local_backward", ns=local_engine(ref, swapped=True))
    sentence = hint("mul.unswapped", "a")
    assert str(info.value).startswith(f"mul_local_backward: Value.__mul__: {sentence.rstrip('.')}. Seen: out = a * b")
    assert "\n" not in str(info.value)
    lines = info.value._render_traceback_()  # what `nbgrader validate` prints and its Lab dialog shows
    validator = Validator()
    shown = [validator._indent(line) for line in lines]  # nbgrader's own indenting and cutting of each line
    assert not any(line.endswith("...") for line in shown), shown
    assert lines[1].startswith("✗ mul_local_backward: Value.__mul__: ")
    assert " ".join(" ".join(lines[1:]).split()) == f"✗ {info.value!s}"  # wrapped, not cut


def test_check_in_a_learners_kernel_shows_the_diagnosis_and_returns(ref, monkeypatch):
    monkeypatch.setattr(notebook, "in_kernel", lambda: True)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    check("numerical_derivative", ns=vars(ref))  # no exception: Run All goes on
    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")
    with pytest.raises(CheckFailed):
        check("numerical_derivative", ns=vars(ref))


def bias_first_net() -> dict:
    """The reference engine whose Neuron lists its bias first: a fresh module, so that its Layer (which looks Neuron
    up in the module) is made of the broken Neurons."""
    spec = importlib.util.spec_from_file_location("bias_first_engine", ENGINES / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    class Neuron(module.Neuron):
        def parameters(self):
            return [self.b, *self.w]

    module.Neuron = Neuron
    return vars(module)


def test_check_html_marks_pass_and_fail_leads_with_the_sentence_and_folds_the_reproduce_block(ref):
    bad = outcome("layer_forward", bias_first_net())  # a Layer made of the learner's (broken) Neurons
    good = outcome("mul_forward", {"Value": ref.Value})
    html = notebook.verdict_html([good, bad], hidden=False)
    assert f'color:{notebook.GREEN};font-weight:bold">✓ mul_forward</span>' in html
    assert f'color:{notebook.RED};font-weight:bold">✗ layer_forward</span>' in html
    # one order: the method and the misconception's sentence on the ✗ line, then the numbers, then the folded repro
    lead = html.index('class="autograder-lead"')
    assert "`Neuron`" in html[lead:lead + 200] and "bias before its weights" in html[lead:html.index("</div>", lead)]
    assert lead < html.index('class="autograder-evidence"') < html.index("<details")
    assert ('<summary style="display:list-item;cursor:pointer">reproduce</summary>' in html
            and "\nprint(model(x).data" in html)  # a disclosure whose triangle shows, whatever the page's CSS
    assert "white-space:pre-wrap" in html  # long lines wrap, in JupyterLab and in nbgrader's feedback HTML
    assert "hint:" not in html and "tested alone" not in html and "neuron_forward" not in html  # no probe names
    text = notebook.verdict_text([good, bad], hidden=False)
    assert text.startswith("✓ mul_forward") and "reproduce:" in text
    first = next(ln for ln in text.splitlines() if ln.startswith("✗ layer_forward"))
    assert first.startswith("✗ layer_forward: needs `Neuron` to pass first: ") and "bias before its weights" in first
    assert text.index(first) < text.index("    seen: ") < text.index("    reproduce:")
    outputs = notebook.check_outputs([good, bad], hidden=False)
    assert outputs[0]["data"] == {"text/plain": text, "text/html": html}
    assert outputs[1]["ename"] == "CheckFailed" and "layer_forward" in outputs[1]["evalue"]


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    sh.ast_transformers.append(notebook.UnfinishedGuard())
    yield sh
    sh.ast_transformers[:] = [t for t in sh.ast_transformers if not isinstance(t, notebook.UnfinishedGuard)]


def test_a_cell_reaching_an_unfinished_exercise_says_so_in_one_line_and_succeeds(shell, capsys):
    shell.run_cell("def __add__(self, other):\n    # YOUR CODE HERE\n    raise NotImplementedError()")
    result = shell.run_cell("x = 1\n__add__(None, None)\nx = 2")
    out = capsys.readouterr().out
    assert result.success and result.error_in_exec is None
    assert out.strip().splitlines() == [out.strip()] and "⋯ not done yet: __add__ still raises NotImplementedError" in out
    assert shell.user_ns["x"] == 1  # the rest of the cell did not run
    result = shell.run_cell("# YOUR CODE HERE\nraise NotImplementedError()")
    assert result.success and "replace the `raise NotImplementedError()` line" in capsys.readouterr().out


def test_the_guard_keeps_the_last_expressions_display_and_other_errors(shell, capsys):
    result = shell.run_cell("y = 20\ny + 1")
    assert result.result == 21 and "21" in capsys.readouterr().out
    assert shell.run_cell("y + 1;", store_history=True).result is None  # a trailing semicolon still hides it
    result = shell.run_cell("1 / 0")
    assert isinstance(result.error_in_exec, ZeroDivisionError)


# the reference engine, as a learner's cells define it, with tanh returning nothing and tanh from bricks wrong
WRONG_BRICKS = (ENGINES / "reference.py").read_text() + """

def _tanh(self):
    Value(0.0)


Value.tanh = _tanh


def tanh_from_bricks(x):
    return x ** -1
"""


def test_a_demo_stopped_inside_an_exercise_names_the_method_in_one_line_and_succeeds(shell, capsys):
    shell.run_cell(WRONG_BRICKS)
    result = shell.run_cell("x = 1\ntanh_from_bricks(Value(0.0))\nx = 2")
    out = capsys.readouterr().out.strip()
    assert result.success and result.error_in_exec is None and shell.user_ns["x"] == 1  # the rest did not run
    assert out.splitlines() == [out] and out.startswith("⋯ this demo needs tanh_from_bricks, which raised "
                                                        "ZeroDivisionError: ")
    assert "(in Value.__pow__) — see its check above" in out  # where it raised, when that is another method


def test_a_demo_stopped_on_what_a_failing_method_gave_back_names_it(shell, capsys):
    shell.run_cell(WRONG_BRICKS)
    shell.user_ns[notebook.RECORD] = {"tanh_backward": False}  # its check cell ran above, and failed
    result = shell.run_cell("t = Value(0.5).tanh()\nt.backward()")
    out = capsys.readouterr().out.strip()
    assert result.success and out.splitlines() == [out]
    assert out.startswith("⋯ this demo needs Value.tanh, which does not pass its check above: line 2 (`t.backward()`) "
                          "raised AttributeError: 'NoneType' object has no attribute 'backward'")


def test_an_error_outside_the_exercises_keeps_its_traceback(shell, capsys):
    shell.run_cell(WRONG_BRICKS)
    shell.user_ns.pop(notebook.RECORD, None)  # no check has failed above
    assert isinstance(shell.run_cell("Value(0.5).tanh().backward()").error_in_exec, AttributeError)
    shell.run_cell("def helper():\n    return 1 / 0")  # a function no check names
    assert isinstance(shell.run_cell("helper()").error_in_exec, ZeroDivisionError)
    assert "this demo needs" not in capsys.readouterr().out


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
    assert not bad.passed and "never attached to the result" in bad.message


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


def manual_graph(ref) -> dict:
    """Notebook 2's given cell: L = (a*b + c) * f, every grad as Value(...) left it."""
    V = ref.Value
    a, b, c, f = V(2.0), V(-3.0), V(10.0), V(-2.0)
    e = V(a.data * b.data, (a, b), "*")
    d = V(e.data + c.data, (e, c), "+")
    return {"Value": V, "a": a, "b": b, "c": c, "e": e, "d": d, "f": f, "L": V(d.data * f.data, (d, f), "*")}


def test_untouched_hand_filled_grads_are_not_done_yet_and_a_forgotten_root_is_a_mistake(ref):
    untouched = outcome("manual_backprop", manual_graph(ref))
    assert untouched.status == catalog.NOT_IMPLEMENTED and untouched.message.startswith("not done yet")
    ns = manual_graph(ref)  # the chain rule written out, but without L.grad = 1
    a, b, c, e, d, f, L = (ns[n] for n in ("a", "b", "c", "e", "d", "f", "L"))
    f.grad = d.data * L.grad
    d.grad = f.data * L.grad
    e.grad = c.grad = d.grad
    a.grad, b.grad = b.data * e.grad, a.data * e.grad
    forgot = outcome("manual_backprop", ns)
    assert forgot.status == catalog.FAILED and forgot.misconception == "manual.root_is_one"
    L.grad = 1.0
    f.grad, d.grad = d.data * L.grad, f.data * L.grad
    e.grad = c.grad = d.grad
    a.grad, b.grad = b.data * e.grad, a.data * e.grad
    assert outcome("manual_backprop", ns).passed


def test_a_diagnosis_is_shown_in_full_once_per_notebook_and_later_cells_say_same_cause(ref, monkeypatch, capsys):
    monkeypatch.setattr(notebook, "in_kernel", lambda: True)  # a learner's kernel: checks show and return
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    ns = bias_first_net()
    check("neuron_forward", ns=ns)  # the exercise's own check cell: in full
    first = capsys.readouterr().out
    assert "reproduce:" in first and "seen: " in first
    check("layer_forward", ns=ns)  # a later check cell, made of the same Neuron: the same cause
    later = capsys.readouterr().out
    assert later.strip() == "✗ layer_forward: needs `Neuron` to pass first: same cause as above"
    check("neuron_forward", ns=ns)  # its own cell run again: in full again
    assert "reproduce:" in capsys.readouterr().out
    ns["Neuron"] = ref.Neuron  # fixed: the cause is forgotten once its check passes
    check("neuron_forward", ns=ns)
    assert notebook.shown_in(ns).first == {}


def test_unless_passing_names_the_failing_method_in_one_line_and_is_silent_otherwise(ref, monkeypatch, capsys):
    from autograder.workbook import unless_passing

    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    unless_passing("mul_local_backward", "backward_accumulates", ns=local_engine(ref, swapped=True))
    assert capsys.readouterr().out == "(this differs from the text because `Value.__mul__` does not pass its check yet)\n"
    unless_passing("mul_local_backward", "backward_accumulates", ns={"Value": ref.Value})
    assert capsys.readouterr().out == ""

    class Stub(ref.Value):
        def __mul__(self, other):
            raise NotImplementedError()

    unless_passing("mul_local_backward", ns={"Value": Stub})  # a stub: named as not done yet, not as wrong
    said = capsys.readouterr().out
    assert said.startswith("(this differs from the text because `Value.__mul__` is not done yet: NotImplementedError "
                           "raised in ") and said.count("\n") == 1, said
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")  # demos are never graded
    unless_passing("mul_local_backward", ns=local_engine(ref, swapped=True))
    assert capsys.readouterr().out == ""


def test_the_second_backward_demo_says_why_its_numbers_differ_when_add_fails(monkeypatch):
    import contextlib
    import io

    import nbformat

    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    source = Path(__file__).resolve().parents[2] / "solutions" / "workbook" / "03_backward.ipynb"

    def demo_output(mistake: bool) -> str:
        nb = nbformat.read(source, as_version=4)
        ns: dict = {"__name__": "__main__"}
        printed = ""
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            src = cell.source
            if mistake and cell.metadata.get("nbgrader", {}).get("grade_id") == "ex_03_add":
                src = src.replace("self.grad += out.grad", "self.grad = out.grad")
            buf = io.StringIO()
            with contextlib.suppress(Exception), contextlib.redirect_stdout(buf):
                exec(compile(src, "<cell>", "exec"), ns)  # a failing check cell raises outside a kernel: go on
            if "after a second one" in src:
                printed = buf.getvalue()
        return printed

    wrong, right = demo_output(True), demo_output(False)
    assert wrong.splitlines()[-1] == "(this differs from the text because `Value.__add__` does not pass its check yet)"
    assert "a.grad = 24.0" not in wrong and "differs" not in right and "a.grad = 24.0" in right


# ---------------------------------------------------------------- what a learner reads names what a learner wrote


def solution_namespaces() -> list[dict]:
    """The definitions of each of the six solved notebooks, as a learner's kernel holds them."""
    from autograder.loader import load

    return [load(str(path)).namespace
            for path in sorted((Path(__file__).resolve().parents[2] / "solutions" / "workbook").glob("*.ipynb"))]


def test_every_learner_facing_name_of_a_check_is_a_method_function_or_the_check_never_a_variable():
    from autograder.checks import CheckResult
    from autograder.workbook import _learner_name

    spaces = solution_namespaces()
    seen = 0
    for check_ in catalog.notebook_checks():
        failed = CheckResult(check_.name, check_.targets, 0.0, 1.0, "wrong", status="failed")
        for ns in spaces:
            said = _learner_name(failed, ns)
            assert said.endswith("`") and (said.startswith("`") or said == f"the check `{check_.name}`"), said
            if said.startswith("the check"):
                continue
            head, _, attr = said.strip("`").partition(".")
            if head in ns:  # this notebook defines it: a class or function of the learner's, and its method
                assert inspect.isclass(ns[head]) or inspect.isfunction(ns[head]), (check_.name, said)
                assert not attr or any(callable(getattr(other.get(head), attr, None)) for other in spaces), (check_.name, said)
                seen += 1
    assert seen > 20
    manual = CheckResult("manual_backprop", catalog.get("manual_backprop").targets, 0.0, 2.0, "x", status="failed")
    assert _learner_name(manual, spaces[1]) == "the check `manual_backprop`"  # its targets: the nodes a, b, ..., L


def test_a_demo_run_on_untouched_hand_filled_grads_says_why_it_prints_zero():
    import contextlib
    import io

    import nbformat

    from autograder.loader import load

    path = Path(__file__).resolve().parents[2] / "notebooks" / "workbook" / "02_values.ipynb"
    ns = load(str(path)).namespace  # untouched: every .grad still the 0 Value(...) starts with
    demo = next(c.source for c in nbformat.read(path, as_version=4).cells if "unless_passing(\"manual_backprop\")" in c.source)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(demo, ns)
    first, why = out.getvalue().splitlines()
    assert "by hand 0.000000, relative error 1.0e+00" in first
    assert why.startswith("(this differs from the text because the check `manual_backprop` is not done yet: every "
                          ".grad is still 0"), why


def test_an_untouched_notebooks_summary_shows_each_unfinished_exercise_in_one_quiet_line(ref, capsys):
    class Value(ref.Value):  # + wrong (a mistake), * not written yet (a stub), tanh right
        def __add__(self, other):
            other = other if isinstance(other, Value) else Value(other)
            return Value(self.data * other.data, (self, other), "+")

        def __mul__(self, other):
            raise NotImplementedError()

        def exp(self):
            raise NotImplementedError()

    ns = checked({"Value": Value}, "add_forward", "mul_forward", "exp_backward")
    summary((1, "add_forward"), (1, "mul_forward"), (1, "exp_backward"), ns=ns)
    out = capsys.readouterr().out
    rows = out.split("\n")
    todo = [r for r in rows if "⋯" in r]
    assert len(todo) == 2 and todo[0].endswith("__mul__)") and todo[1].endswith("exp)"), todo  # one line each
    assert sum("✗" in r for r in rows) == 1 and "✗ add_forward" in out  # the one mistake stands apart, in red
    assert out.count("raise NotImplementedError()") == 1  # the stub's instruction, once
    from autograder.workbook import GREY, summary_html
    from autograder.workbook import stood_when_checked as stood

    scored = [(1.0, catalog.run_checks([catalog.get(n)], ns)) for n in ("add_forward", "mul_forward", "exp_backward")]
    html = summary_html(scored, stood(ns))
    todo_rows = [r for r in html.split("<tr>") if "⋯" in r]
    assert len(todo_rows) == 2 and all(GREY in r and notebook.RED not in r for r in todo_rows)
    assert notebook.RED in next(r for r in html.split("<tr>") if "add_forward" in r)
