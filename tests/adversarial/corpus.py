"""Broken, hostile and runaway submissions of the real workbook assignment, each derived from the committed notebooks.

Every case edits the learner notebook (notebooks/workbook) filled in with the instructor's solutions
(solutions/workbook), so the corpus follows the workbook when it changes. Most cases use notebook 02
(grade cells: check_02_value_repr 1, check_02_add 1, check_02_mul 1, check_02_manual_backprop 2).
`CASES[name].expect` is what the batch grader must record for it; `build(course)` submits them all.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / "notebooks" / "workbook"
SOURCE = ROOT / "solutions" / "workbook"
OTHER_ASSIGNMENT = ROOT / "tests" / "fixtures" / "source" / "ps1" / "engine.ipynb"
ASSIGNMENT = "workbook"
NB = "02_values"
GRADE_02 = ("check_02_value_repr", "check_02_add", "check_02_mul", "check_02_manual_backprop")
MARKER = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[^\n]*\n?", re.M)
BIG_MB = 100
# In the command line of every process an attack starts, and in every test's pgrep: a process left by an earlier run
# (or another checkout's run) can neither fail nor pass this run's tests. Made once per run.
TOKEN = f"pwned-{uuid.uuid4().hex[:12]}"
SLEEP = f"987.{uuid.uuid4().int % 10**6:06d}"  # the runaway's `sleep` argument (seconds), unique to this run


def gid(cell: nbformat.NotebookNode) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def solutions(name: str) -> dict[str, str]:
    """The instructor's solution cells of notebook `name`, markers removed."""
    nb = nbformat.read(SOURCE / f"{name}.ipynb", as_version=4)
    return {gid(c): MARKER.sub("", c.source) for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")}


def solved(name: str = NB, only: list[str] | None = None) -> nbformat.NotebookNode:
    """The learner notebook with its solution cells (or only those named) filled in from the instructor's source."""
    nb = nbformat.read(RELEASE / f"{name}.ipynb", as_version=4)
    for cell in nb.cells:
        answer = solutions(name).get(gid(cell))
        if answer is not None and (only is None or gid(cell) in only):
            cell.source = answer
    return nb


def cell(nb: nbformat.NotebookNode, grade_id: str) -> nbformat.NotebookNode:
    return next(c for c in nb.cells if gid(c) == grade_id)


def index(nb: nbformat.NotebookNode, grade_id: str) -> int:
    return next(i for i, c in enumerate(nb.cells) if gid(c) == grade_id)


def before_assignment(nb: nbformat.NotebookNode, grade_id: str, code: str) -> nbformat.NotebookNode:
    """Insert `code` into a solution cell just before its `Value.x = x` line: a runaway stops the method being attached."""
    c = cell(nb, grade_id)
    head, sep, tail = c.source.rpartition("\nValue.")
    assert sep, f"no `Value.` assignment in {grade_id}"
    c.source = f"{head}\n{code}\n{sep.lstrip(chr(10))}{tail}"
    return nb


def append(nb: nbformat.NotebookNode, grade_id: str, code: str) -> nbformat.NotebookNode:
    cell(nb, grade_id).source += "\n" + code
    return nb


def prepend(nb: nbformat.NotebookNode, grade_id: str, code: str) -> nbformat.NotebookNode:
    """`code` first in the cell: if it stops the cell (SystemExit), nothing of the cell is defined and points are lost."""
    c = cell(nb, grade_id)
    c.source = code + "\n" + c.source
    return nb


def left_behind(marker: str = TOKEN, user: int | None = None, wait: float = 10.0) -> str:
    """The processes whose command line holds `marker` (of `user`, if given), polled up to `wait` s until there are
    none: a killed process takes a moment to be reaped. "" when none is left."""
    argv = ["pgrep", "-a", *(("-u", str(user)) if user is not None else ()), "-f", marker]
    deadline = time.monotonic() + wait
    while True:
        left = subprocess.run(argv, capture_output=True, text=True).stdout.strip()
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def replace(nb: nbformat.NotebookNode, grade_id: str, old: str, new: str) -> nbformat.NotebookNode:
    c = cell(nb, grade_id)
    assert old in c.source, f"{old!r} not in {grade_id}"
    c.source = c.source.replace(old, new, 1)
    return nb


def text(nb: nbformat.NotebookNode) -> bytes:
    return nbformat.writes(nb).encode()


# ---------------------------------------------------------------- the submissions

def truncated() -> bytes:
    data = text(solved())
    return data[: len(data) // 2]


def latin1() -> bytes:
    nb = append(solved(), "ex_02_add", "# déjà vu: café")
    return nbformat.writes(nb).encode("latin-1")


def other_notebook() -> bytes:
    return text(solved("03_backward"))


def deleted() -> nbformat.NotebookNode:
    nb = solved()
    del nb.cells[index(nb, "check_02_mul")]
    del nb.cells[index(nb, "ex_02_add")]
    return nb


def duplicated() -> nbformat.NotebookNode:
    nb = solved()
    for grade_id in ("ex_02_mul", "check_02_add"):
        i = index(nb, grade_id)
        copy = nbformat.from_dict(json.loads(json.dumps(nb.cells[i])))
        copy["id"] = f"{copy.get('id', 'cell')}-copy"
        nb.cells.insert(i + 1, copy)
    return nb


def reordered() -> nbformat.NotebookNode:
    nb = solved()
    check = nb.cells.pop(index(nb, "check_02_mul"))
    nb.cells.insert(index(nb, "ex_02_mul"), check)  # the test now runs before the code it tests
    return nb


def retyped() -> nbformat.NotebookNode:
    nb = solved()
    cell(nb, "ex_02_mul").cell_type = "markdown"
    cell(nb, "check_02_add").cell_type = "raw"
    for grade_id in ("ex_02_mul", "check_02_add"):
        cell(nb, grade_id).pop("outputs", None)
        cell(nb, grade_id).pop("execution_count", None)
    return nb


def stripped() -> nbformat.NotebookNode:
    nb = solved()
    nb.metadata = nbformat.NotebookNode()
    for c in nb.cells:
        c.metadata = nbformat.NotebookNode()
    return nb


def edited_test() -> nbformat.NotebookNode:
    nb = replace(solved(), "ex_02_mul", "self.data * other.data", "self.data + other.data")
    cell(nb, "check_02_mul").source = "print('✓ mul_forward: a * b computes the product')"
    return nb


def add_table(hidden_too: bool) -> nbformat.NotebookNode:
    """`+` answers from a table of add_forward's package-derived inputs (recorded by running its probe on a recorder),
    0 elsewhere: the visible inputs only, or the hidden ones too (as anyone holding the package can tabulate)."""
    from autograder import checks, probes

    table: dict[tuple[float, float], float] = {}

    class Recorder:
        def __init__(self, data: float, _children: tuple = (), _op: str = "") -> None:
            self.data = data

        def __add__(self, other: Recorder) -> Recorder:
            table[(self.data, other.data)] = self.data + other.data
            return Recorder(self.data + other.data)

        def __mul__(self, other: Recorder) -> Recorder:
            return Recorder(self.data * other.data)

    for hidden in (False, True) if hidden_too else (False,):
        for case in checks.get("add_forward").make_cases(hidden):
            probes.observe("add_forward", {"Value": Recorder}, case, check_timeout=5.0)
    code = (f"ANSWERS = {table!r}\n\n\ndef __add__(self, other):\n"
            "    return Value(ANSWERS.get((self.data, other.data), 0.0), (self, other), \"+\")\n\n\nValue.__add__ = __add__")
    cell(nb := solved(), "ex_02_add").source = code
    return nb


def hard_coded() -> nbformat.NotebookNode:
    """`+` answers from a table of the visible check's inputs, 0 elsewhere."""
    return add_table(hidden_too=False)


ALWAYS_EQUAL = '''class Anything:
    """Equal to whatever it is compared with."""
    def __eq__(self, other):
        return True
    def __hash__(self):
        return 0
    def __float__(self):
        return 0.0


for node in (L, f, d, c, e, b, a):
    node.grad = Anything()'''

LYING_FLOAT = '''class Exactly(float):
    """A float that says it equals, and differs by nothing from, anything."""
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    def __sub__(self, other):
        return 0.0
    __rsub__ = __sub__
    def __abs__(self):
        return 0.0
    __hash__ = float.__hash__


for node in (L, f, d, c, e, b, a):
    node.grad = Exactly(0.0)'''

PATCH_CHECK = '''import autograder.checks.run
import autograder.notebook


def check(*names, **options):
    print("✓", *names)


autograder.notebook.check = check
autograder.checks.run.judge_checks = lambda *args, **kwargs: []'''

PATCH_MODULES = '''import autograder.probes.safe
import autograder.truth.numeric

autograder.probes.safe.read_number = lambda obj, what: 1.0
autograder.truth.numeric.grad_close = lambda *args, **kwargs: True'''

PATCH_BUILTINS = '''import builtins
import math

builtins.abs = lambda x: 0.0
math.isclose = lambda *args, **kwargs: True'''

PATCH_IN_PROBE = '''def __mul__(self, other):
    import autograder.probes.safe
    autograder.probes.safe.read_number = lambda obj, what: 0.0  # patched while the grader's probe calls this
    return Value(self.data * other.data, (self, other), "*")


Value.__mul__ = __mul__'''

LOOP_IGNORING_LIMITS = '''import signal
import subprocess
child = subprocess.Popen(["sleep", "@SLEEP@"])  # must die with the worker's process group
signal.signal(signal.SIGALRM, signal.SIG_IGN)
while True:
    pass'''

DELETES_FILES = '''import os
import shutil
for name in os.listdir("."):
    shutil.rmtree(name) if os.path.isdir(name) else os.remove(name)
open("scratch.txt", "w").write("the working directory is the grader's scratch copy")'''


@dataclass(frozen=True)
class Case:
    """One submission of notebook 02 (or raw bytes), and what the grader must record for it."""

    make: Callable[[], nbformat.NotebookNode | bytes]
    expect: dict[str, float]  # grade_id -> auto_score (notebook 02)
    reason: str = ""  # a fragment of the recorded reason ("" for none)
    flag: str = ""  # a fragment of the flags ("" for none: never flagged)
    status: str = "graded"
    extra_files: dict[str, str] = field(default_factory=dict)  # written beside the notebook


def scores(repr_: float, add: float, mul: float, manual: float) -> dict[str, float]:
    return dict(zip(GRADE_02, (repr_, add, mul, manual)))


FULL, ZERO = scores(1, 1, 1, 2), scores(0, 0, 0, 0)

HONEST: dict[str, Case] = {
    "honest_correct": Case(solved, FULL),
    "honest_partly_done": Case(lambda: solved(only=["ex_02_value_class", "ex_02_add"]), scores(1, 1, 0, 0)),
    "honest_mul_adds": Case(lambda: replace(solved(), "ex_02_mul", "self.data * other.data", "self.data + other.data"),
                            scores(1, 1, 0, 2)),
}

CASES: dict[str, Case] = {
    # unreadable files: 0 for every grade cell, a reason, status "not graded"
    "not_json": Case(lambda: b"print('this is a Python script, not a notebook')\n", ZERO, "not valid JSON", status="not graded"),
    "truncated_json": Case(truncated, ZERO, "not valid JSON", status="not graded"),
    "not_a_notebook": Case(lambda: b'{"cells": "none", "hello": [1, 2, 3]}', ZERO, "JSON but not a notebook", status="not graded"),
    "empty_file": Case(lambda: b"", ZERO, "file is empty", status="not graded"),
    "other_assignment": Case(lambda: OTHER_ASSIGNMENT.read_bytes(), ZERO, "another assignment's notebook", status="not graded"),
    "other_notebook": Case(other_notebook, ZERO, "it looks like 03_backward", status="not graded"),
    "huge_100mb": Case(lambda: b"", ZERO, f"{BIG_MB} MB (more than the limit of 20 MB)", status="not graded"),  # written by build()
    "latin1": Case(latin1, ZERO, "not UTF-8", status="not graded"),
    # damaged structure: graded as far as it goes, with a note
    "deleted_cells": Case(deleted, scores(1, 0, 0, 2), "test cell(s) deleted, scored 0: check_02_mul"),
    "duplicated_cells": Case(duplicated, FULL, "duplicate"),
    "reordered_cells": Case(reordered, scores(1, 1, 0, 2), "cells reordered"),
    "retyped_cells": Case(retyped, FULL, "restored to code"),
    "metadata_stripped": Case(stripped, FULL, "nbgrader metadata missing"),
    # runaways: the limits stop them, the rest of the notebook is graded
    "infinite_loop": Case(lambda: before_assignment(solved(), "ex_02_mul", "while True:\n    pass"),
                          scores(1, 1, 0, 2), "time limit"),
    "loop_ignoring_limits": Case(lambda: before_assignment(solved(), "ex_02_mul", LOOP_IGNORING_LIMITS.replace("@SLEEP@", SLEEP)),
                                 scores(1, 1, 0, 0), "no answer within", "subprocess.Popen (runs sleep)"),
    "memory_bomb": Case(lambda: before_assignment(solved(), "ex_02_mul", "hog = [bytearray(10**8) for _ in range(1000)]"),
                        scores(1, 1, 0, 2), "ran out of memory"),
    "print_gigabyte": Case(lambda: before_assignment(solved(), "ex_02_mul", "for _ in range(10**7):\n    print('x' * 99)"),
                           scores(1, 1, 0, 2), "printed more than"),
    "os_exit": Case(lambda: before_assignment(solved(), "ex_02_mul", "import os\nos._exit(0)"),
                    scores(1, 1, 0, 0), "ended the worker process (exit status 0)"),
    "sys_exit": Case(lambda: before_assignment(solved(), "ex_02_mul", "import sys\nsys.exit()"),
                     scores(1, 1, 0, 2), "called sys.exit()"),
    "segfault": Case(lambda: before_assignment(solved(), "ex_02_mul", "import ctypes\nctypes.string_at(0)"),
                     scores(1, 1, 0, 0), "SIGSEGV", "ctypes.string_at"),
    "deletes_files": Case(lambda: append(solved(), "ex_02_value_class", DELETES_FILES), FULL,
                          extra_files={"data.csv": "x,y\n1,2\n"}),
    # cheats: no points for what they target, always flagged
    "always_equal": Case(lambda: append(solved(), "ex_02_manual_grads", ALWAYS_EQUAL), scores(1, 1, 1, 0), "",
                         "always says True"),
    "lying_float": Case(lambda: append(solved(), "ex_02_manual_grads", LYING_FLOAT), scores(1, 1, 1, 0), "", "Exactly"),
    # in the sandbox the grader's modules are not there to patch: the import fails (the cell stops there) and is flagged
    "patch_check": Case(lambda: append(replace(solved(), "ex_02_mul", "self.data * other.data", "self.data + other.data"),
                                       "ex_02_add", PATCH_CHECK), scores(1, 1, 0, 2), "raised ModuleNotFoundError",
                        "import (autograder.checks.run)"),
    "patch_modules": Case(lambda: append(solved(), "ex_02_add", PATCH_MODULES), FULL, "raised ModuleNotFoundError",
                          "import (autograder.truth.numeric)"),
    "patch_builtins": Case(lambda: append(solved(), "ex_02_value_class", PATCH_BUILTINS), ZERO, "tampered with the grader", "builtins.abs"),
    "patch_in_probe": Case(lambda: _set(solved(), "ex_02_mul", PATCH_IN_PROBE), scores(1, 1, 0, 0), "tampered with the grader",
                           "called by the checks of cell"),
    # the table misses the `+` inside mul_forward's a * b + c too: 0 for that cell as well (an honest failure)
    # a correct * keeps its point: mul_forward runs * alone, never the tabulated +
    "hard_coded": Case(hard_coded, scores(1, 0, 1, 2), "", "hard-coded answers? add_forward"),
    "edited_test_cell": Case(edited_test, scores(1, 1, 0, 2), "", "locked cell check_02_mul edited"),
}


def _set(nb: nbformat.NotebookNode, grade_id: str, source: str) -> nbformat.NotebookNode:
    cell(nb, grade_id).source = source
    return nb


try:  # the message side's attacks (issue 9), built on the helpers above; they add themselves when imported first
    from .channel_cases import CASES as CHANNEL_CASES
except ImportError:
    CHANNEL_CASES = {}
CASES.update(CHANNEL_CASES)
from .escapes import CASES as ESCAPE_CASES  # noqa: E402  (the OS side's attacks, classes 4-6, built on the helpers above)

CASES.update(ESCAPE_CASES)
from .bounds import CASES as BOUND_CASES  # noqa: E402  (issue 19: bounds, teardown, deadlines, storable text)

CASES.update(BOUND_CASES)


def write_big(path: Path, mb: int = BIG_MB) -> None:
    """A valid notebook of `mb` MB (a huge output), written in chunks so the test never holds it all."""
    nb = solved()
    cell(nb, "ex_02_add").outputs = [nbformat.v4.new_output("stream", name="stdout", text="@@BIG@@")]
    head, tail = nbformat.writes(nb).split("@@BIG@@")
    chunk = "x" * 2**20
    with open(path, "w") as f:
        f.write(head)
        for _ in range(mb):
            f.write(chunk)
        f.write(tail)


def submit(course: Path, student: str, content: nbformat.NotebookNode | bytes, name: str = NB,
           extra: dict[str, str] | None = None) -> Path:
    """Place a submission at submitted/<student>/workbook/<name>.ipynb, with a timestamp, as `nbgrader collect` would."""
    folder = course / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.ipynb"
    path.write_bytes(content if isinstance(content, bytes) else text(content))
    (folder / "timestamp.txt").write_text("2025-01-15 10:00:00.000000 UTC")
    for fname, data in (extra or {}).items():
        (folder / fname).write_text(data)
    return path


def build(course: Path, cases: dict[str, Case] | None = None) -> dict[str, Case]:
    """Submit every case (default: the adversarial ones and the honest ones) into the course; return them."""
    chosen = cases if cases is not None else {**CASES, **HONEST}
    for student, case in chosen.items():
        path = submit(course, student, case.make(), extra=case.extra_files)
        if student == "huge_100mb":
            write_big(path)
    return chosen
