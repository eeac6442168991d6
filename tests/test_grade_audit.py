"""The worker's audit hook: introspection by learner code is reported with where it happened; honest code never is.

Each test runs learner code the way a grading worker does (the worker's IPython shell, the hook installed
after it, the check catalogue probing the learner's objects) in a fresh Python process, since an audit hook
cannot be removed from the process that added it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import mistakes
import nbformat
import pytest
from adversarial import corpus

ROOT = Path(__file__).resolve().parent.parent
ENGINES = ROOT / "tests" / "engines"

RUNNER = r'''
import json, sys
from autograder.checks import run_checks
from autograder.cli import select_checks
from autograder.grading.grade.worker.audit import install_audit_hook
from autograder.settings import AUDIT_REPORTS
from autograder.grading.grade.worker.outputs import Outputs
from autograder.grading.grade.worker.shell import make_shell, run_cell

reports = []
outputs = Outputs(10**7)
shell = make_shell(outputs)
hook = install_audit_hook(lambda event, detail, where: reports.append(f"{event} ({detail}) at {where}"), AUDIT_REPORTS)
found = {}
for label, cells, probe in json.load(sys.stdin):
    hook.seen.clear()
    reports.clear()
    shell.reset(new_session=False)
    for source in cells:
        outputs.clear()
        run_cell(shell, outputs, source, 120)
    if probe:  # the catalogue's probes call the learner's methods, as the worker does at grade cells
        for hidden in (False, True):
            run_checks(select_checks(shell.user_ns), shell.user_ns, hidden=hidden)
    found[label] = list(reports)
print("@@" + json.dumps(found))
'''


def audited(programs: list[tuple[str, list[str], bool]]) -> dict[str, list[str]]:
    """label -> the reports of the hook while its cells ran (and, if asked, the catalogue probed them)."""
    result = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(programs), capture_output=True, text=True,
                            cwd=ROOT, timeout=900, env={**os.environ, "MPLBACKEND": "module://matplotlib_inline.backend_inline"})
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.rpartition("@@")[2])


def notebook_cells(nb: nbformat.NotebookNode) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "code"]


def honest_programs() -> list[tuple[str, list[str], bool]]:
    """Every honest submission the test corpora hold: engine styles, catalogue mistakes, the workbook done, partly done, blank."""
    programs = [(f"engine {p.stem}", [p.read_text()], True) for p in sorted(ENGINES.glob("*.py"))]
    programs += [(f"mistake {m.name}", [m.source()], True) for m in mistakes.MISTAKES]
    for name in sorted(p.stem for p in corpus.SOURCE.glob("*.ipynb")):
        first = next(iter(corpus.solutions(name)))
        programs += [(f"workbook {name} solved", notebook_cells(corpus.solved(name)), False),
                     (f"workbook {name} partly done", notebook_cells(corpus.solved(name, only=[first])), False),
                     (f"workbook {name} blank", notebook_cells(corpus.solved(name, only=[])), False)]
    return programs


@pytest.mark.slow
def test_no_honest_submission_in_the_test_corpora_raises_an_audit_report() -> None:
    programs = honest_programs()
    assert len(programs) >= 60
    found = audited(programs)
    assert set(found) == {label for label, _, _ in programs}
    assert {label: reports for label, reports in found.items() if reports} == {}


CHEATS = {
    "sys._getframe": "import sys\nframe = sys._getframe()",
    "sys._getframe through inspect": "import inspect\nframe = inspect.currentframe()",
    "frame from a traceback": "try:\n    1 / 0\nexcept ZeroDivisionError as exc:\n    frame = exc.__traceback__.tb_frame",
    "gc.get_objects": "import gc\nlive = gc.get_objects()",
    "gc.get_referrers": "import gc\nwho = gc.get_referrers(len)",
    "sys.setprofile": "import sys\nsys.setprofile(lambda *args: None)\nsys.setprofile(None)",
    "sys.settrace": "import sys\nsys.settrace(lambda *args: None)\nsys.settrace(None)",
    "a function's code read": "def f():\n    pass\ncode = f.__code__",
    "code replaced": "def f():\n    return 1\nf.__code__ = f.__code__.replace(co_consts=(None, 2))",
    "json encoder patched": "import json\njson.encoder.JSONEncoder.encode = lambda self, o: '{}'",
    "ctypes": "import ctypes\nctypes.string_at(id(1), 8)",
    "subprocess": "import subprocess\nsubprocess.run(['true'])",
    "signal to the parent": "import os, signal\nos.kill(os.getppid(), 0)",
    "socket": "import socket\nsocket.socket().close()",
    "channel fd hunted": "import os\nos.listdir('/proc/self/fd')",
    "grader module imported": "import autograder.grading.grade.judge",
}


def test_introspection_and_escapes_from_learner_code_are_reported_with_where() -> None:
    found = audited([(label, [code], False) for label, code in CHEATS.items()])
    missed = [label for label, reports in found.items() if not reports]
    assert missed == []
    assert all("<module> line" in reports[0] for reports in found.values())


def test_a_method_called_by_the_grader_s_probe_is_blamed_not_the_probe() -> None:
    engine = (ENGINES / "reference.py").read_text()
    spy = engine.replace("    def __add__(self, other):\n", "    def __add__(self, other):\n        import sys; sys._getframe(1)\n", 1)
    assert spy != engine
    found = audited([("spy", [spy], True)])
    assert found["spy"] and all("Value.__add__ line" in r for r in found["spy"])
