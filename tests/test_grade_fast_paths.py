"""The grading worker's fast paths keep their meaning: the guard's identity check sees every replacement the full
comparison sees, figures are shown by their text, tracebacks stay readable, plots are left out while grading, and
the resume state is written only when asked."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import nbformat
import pytest

from autograder.grading.grade.worker.guard import Guard
from autograder.grading.grade.worker.outputs import Outputs
from autograder.grading.grade.worker.shell import make_shell, plain_python, run_cell

OUTPUTS = Outputs(100_000)


@pytest.fixture(scope="module")
def shell():
    """The grading worker's shell (IPython's is one per process, as in a worker); gone afterwards, so that later
    tests of this process do not find an IPython shell (get_ipython()) and display instead of printing."""
    from IPython.core.interactiveshell import InteractiveShell

    InteractiveShell.clear_instance()  # a worker makes its shell in a fresh process: one an earlier module left is dropped
    made = make_shell(OUTPUTS)
    yield made
    type(made).clear_instance()
    InteractiveShell.clear_instance()


@pytest.fixture
def guarded(monkeypatch: pytest.MonkeyPatch):
    """A throwaway autograder module (a constant, a function, a class, a table) under a fresh guard."""
    module = types.ModuleType("autograder._fast_path_probe")
    exec("LIMIT = 3.5\ndef f(x=1.0):\n    return x\nclass C:\n    def m(self):\n        return 1\nTABLE = {'a': 1.5}\n",
         module.__dict__)
    for name in ("f", "C"):
        getattr(module, name).__module__ = module.__name__
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module, Guard({})


def replace_constant(m: types.ModuleType) -> None:
    m.LIMIT = 4.5


def replace_code(m: types.ModuleType) -> None:
    m.f.__code__ = (lambda x=1.0: -x).__code__


def replace_defaults(m: types.ModuleType) -> None:
    m.f.__defaults__ = (2.0,)


def replace_method(m: types.ModuleType) -> None:
    m.C.m = lambda self: 2


def replace_table_entry(m: types.ModuleType) -> None:
    m.TABLE["a"] = 9.0


def remove_module(m: types.ModuleType) -> None:
    del sys.modules[m.__name__]


@pytest.mark.parametrize("tamper", [replace_constant, replace_code, replace_defaults, replace_method,
                                    replace_table_entry, remove_module])
def test_the_guards_identity_check_sees_what_the_full_comparison_sees(guarded, tamper) -> None:
    module, guard = guarded
    assert guard.unchanged() and guard.changes() == []
    tamper(module)
    assert not guard.unchanged()
    assert any(name.startswith(module.__name__) for name in guard.changes()), guard.changes()


def test_replacing_any_guarded_item_of_any_table_or_module_is_seen_by_the_identity_check() -> None:
    import builtins

    guard = Guard({})
    sentinel = object()
    tried = singles = 0
    for mapping, keys, _ in guard.views:
        # (builtins left out: the check itself calls `all` and `map`; a class's attributes: replace_method above)
        if type(mapping) is not dict or mapping is vars(builtins) or not keys:
            continue
        singles += len(keys) == 1
        for key in dict.fromkeys((keys[0], keys[-1])):
            original = mapping[key]
            mapping[key] = sentinel
            try:
                assert not guard.unchanged(), key
            finally:
                mapping[key] = original
            assert guard.unchanged(), key
            tried += 1
    assert tried > 100 and singles > 0


def test_new_attributes_and_a_replaced_then_restored_item_are_no_change(guarded) -> None:
    module, guard = guarded
    module.EXTRA = 1
    module.TABLE["new"] = 2.0
    original = module.f
    module.f = lambda: 0
    module.f = original
    assert guard.unchanged() and guard.changes() == []


def test_a_functions_attribute_dict_made_on_first_use_is_no_change_and_the_fast_check_resumes(guarded) -> None:
    module, guard = guarded
    module.f.cache = {}  # the function's __dict__ appears: the collector's view of f moves, nothing guarded does
    assert guard.changes() == []
    assert guard.unchanged()
    replace_code(module)
    assert any(name.startswith(module.__name__) for name in guard.changes())


def test_reading_the_guarded_functions_raises_no_audit_event_per_function(guarded) -> None:
    # each audit event costs a call into the worker's Python audit hook; the guard runs after every cell
    _, guard = guarded
    events: list[str] = []
    sys.addaudithook(lambda event, args: events.append(event) if recording else None)
    recording = True
    try:
        guard.changes()
    finally:
        recording = False
    assert len(events) <= 2, events[:10]


ROOT = Path(__file__).resolve().parent.parent
TRICKY = ["%time x = 1\ny = 2\n", "x = 1\nfiles = !ls\n", "x = 1\nlen?\n", "pwd", "exit", "  x = 1\n  y = 2\n",
          "\nx = 1\ny = 2", ">>> x = 1\n>>> y = 2\n", "%%timeit\nx = 1\n", "x = 1\ny = x % 2", "x = 1\r\ny = 2\r\n",
          "s = '''\n%magic in a string\n'''\nprint(s)", "def f():\n    return 1\n\n\n", "x = 1\n;print x\n",
          "x = 1\ny = '\\d'\n"]


def every_code_cell() -> list[str]:
    """The tricky cells above, and every code cell of the workbook's and the tests' notebooks."""
    cells = list(TRICKY)
    for path in [*ROOT.glob("solutions/**/*.ipynb"), *ROOT.glob("notebooks/**/*.ipynb"), *ROOT.glob("tests/**/*.ipynb")]:
        cells += [c["source"] for c in nbformat.read(path, as_version=4).cells if c["cell_type"] == "code"]
    return cells


def test_a_cell_passed_by_without_ipythons_transformers_is_exactly_what_they_would_make(shell) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    passed = 0
    for source in every_code_cell():
        fast = plain_python(source, [])
        if fast is not None:
            passed += 1
            assert fast == InteractiveShell.transform_cell(shell, source), source
    assert passed > 50  # the workbook's multi-line cells take the fast path
    for source in ["%time x = 1\ny = 2\n", "x = 1\nfiles = !ls\n", "x = 1\nlen?\n", "pwd", "  x = 1\n  y = 2\n"]:
        assert plain_python(source, []) is None, source


def test_a_figure_in_the_grading_shell_is_shown_by_its_text_and_never_drawn(shell, monkeypatch) -> None:
    import matplotlib

    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    before = matplotlib.get_backend()
    matplotlib.use("module://matplotlib_inline.backend_inline")  # as in a worker, even if a test drew with Agg before
    outputs = OUTPUTS
    outputs.clear()
    try:
        run_cell(shell, outputs, "import matplotlib.pyplot as plt\nplt.figure(figsize=(5, 3))\nplt.plot([1, 2, 3])\n"
                 "plt.show()", 30)
    finally:
        matplotlib.use(before)
    shown = [o for o in outputs.export() if o["output_type"] == "display_data"]
    assert shown and all(set(o["data"]) == {"text/plain"} for o in shown), outputs.export()
    assert "Figure size 500x300" in shown[0]["data"]["text/plain"]


def test_a_traceback_while_grading_names_the_error_and_the_line(shell) -> None:
    outputs = OUTPUTS
    outputs.clear()
    run_cell(shell, outputs, "def stub():\n    raise NotImplementedError()\n\nstub()", 30)
    [error] = [o for o in outputs.export() if o["output_type"] == "error"]
    text = "".join(error["traceback"])
    assert error["ename"] == "NotImplementedError" and "raise NotImplementedError()" in text and "line 2" in text


def test_plots_are_left_out_while_grading_with_a_line_saying_so(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from autograder.workbook import plot_decision_boundary, plot_loss

    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    calls = []
    assert plot_loss([1.0, 0.5], "four examples") is None
    assert plot_decision_boundary(lambda p: calls.append(p), [[0.0, 0.0]], [1.0]) is None
    assert calls == []  # the boundary's grid is not even computed
    out = capsys.readouterr().out
    assert "plot 'four examples'" in out and "not while grading" in out


@pytest.mark.parametrize("cell, awaits", [("x = 1\nprint(x)", False), ("import asyncio\nawait asyncio.sleep(0)\nprint('awaited')", True),
                                          ("async def f():\n    return 2\nprint(await f())", True)])
def test_only_a_cell_that_could_await_is_compiled_again_to_ask_and_top_level_await_still_runs(
        shell, monkeypatch: pytest.MonkeyPatch, cell: str, awaits: bool) -> None:
    from IPython.core import interactiveshell

    asked = []
    real = interactiveshell._should_be_async
    monkeypatch.setattr(interactiveshell, "_should_be_async", lambda text: asked.append(text) or real(text))
    outputs = OUTPUTS
    outputs.clear()
    run_cell(shell, outputs, cell, 30)
    printed = "".join(o.get("text", "") for o in outputs.export())
    assert bool(asked) == awaits
    assert printed == ("awaited\n" if "sleep" in cell else "2\n" if awaits else "1\n"), outputs.export()


FIRST_CELL = '''
import sys
from autograder.grading.grade.sandbox.inside import PRELOAD
from autograder.grading.grade.worker import prepared
from autograder.grading.grade.worker.preload import load
from autograder.grading.grade.worker.shell import run_cell
load(PRELOAD, prepare_worker=True)  # as the fork server does, before it forks any worker
ready = prepared.take()
shell, outputs = ready.shell, ready.outputs

def built(obj):
    return {n for n in obj.trait_names() if n in obj._trait_values}

objects = {"shell": shell, "history": shell.history_manager, "formatter": shell.display_formatter}
before = ({k: built(v) for k, v in objects.items()}, set(sys.modules))
run_cell(shell, outputs, "a = 1\\na", 30)
run_cell(shell, outputs, "b = 2", 30)
after = ({k: built(v) for k, v in objects.items()}, set(sys.modules))
print({k: sorted(after[0][k] - before[0][k]) for k in objects}, sorted(after[1] - before[1]))
'''


def test_a_notebooks_first_cells_build_nothing_the_shell_made_in_the_fork_server_lacks() -> None:
    # what IPython builds on first use (a logger, transformers, history lists, formatters, bdb) is built with the
    # shell, once in the process that forks the workers, not again in every worker's first cells
    import subprocess

    done = subprocess.run([sys.executable, "-c", FIRST_CELL], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "{'shell': [], 'history': [], 'formatter': []} []", done.stdout
