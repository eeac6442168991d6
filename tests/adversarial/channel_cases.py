"""Attacks on the message side of batch grading (issue 9, classes 1, 2, 3 and 7), as submissions of notebook 02.

Class 1 forges observations from inside the worker, class 2 predicts the hidden inputs, class 3 tries to stop
the batch, class 7 floods the outputs. None may gain a point; every cheat is flagged with its evidence (a
runaway output is no cheat: it is capped, not flagged). Built on `corpus` (which merges these into CASES).
"""

from __future__ import annotations

import nbformat

from . import corpus
from .corpus import ZERO, Case, append, cell, scores, solved

FULL = scores(1, 1, 1, 2)

# ---------------------------------------------------------------- class 1: forged observations

FRAMES = '''def __mul__(self, other):
    """A stub that looks for the grader's objects up the stack and answers for the probe."""
    import sys
    frame = sys._getframe(1)
    while frame is not None:
        for name in ("writer", "kit", "conn", "guard"):
            if name in frame.f_locals:
                globals()["FOUND_" + name] = frame.f_locals[name]
        frame = frame.f_back
    return Value(0.0, (self, other), "*")


Value.__mul__ = __mul__'''

RAW_FD = '''import json, os, stat, struct


def frame(message):
    data = json.dumps(message).encode()
    return struct.pack("!i", len(data)) + data


try:
    fds = [int(x) for x in os.listdir("/proc/self/fd")]
except OSError:
    fds = list(range(64))
for fd in fds:
    try:
        if stat.S_ISSOCK(os.fstat(fd).st_mode) or stat.S_ISFIFO(os.fstat(fd).st_mode):
            # a forged report of this cell (and of the test cell after it) with made-up outputs
            for seq in range(1, 20):
                os.write(fd, frame({"op": "cell", "index": 5, "outputs": [], "tampered": [], "seq": seq}))
    except OSError:
        pass'''

PROFILE = '''import sys


def rewrite(frame, event, arg):
    """On every return of a grader function, overwrite the numbers it observed."""
    if event == "return" and isinstance(arg, dict):
        for key in list(arg):
            if isinstance(arg[key], float):
                arg[key] = 1.0


sys.setprofile(rewrite)


def __mul__(self, other):
    return Value(0.0, (self, other), "*")


Value.__mul__ = __mul__'''

JSON_PATCH = '''import json.encoder


def forged(self, o):
    """Every message the worker sends claims nothing was replaced."""
    if isinstance(o, dict) and "tampered" in o:
        o = {**o, "tampered": []}
    return "".join(json.encoder.JSONEncoder.iterencode(self, o))


json.encoder.JSONEncoder.encode = forged


def __mul__(self, other):
    return Value(0.0, (self, other), "*")


Value.__mul__ = __mul__'''

PATCH_THEN_RESTORE = '''import sys


def __mul__(self, other):
    """A stub that, while the grader's probe calls it, makes the probe read every number as 1.0, then undoes it."""
    for module in list(sys.modules.values()):
        read = getattr(module, "read_number", None)
        if callable(read) and hasattr(read, "__code__"):
            saved = read.__code__
            read.__code__ = (lambda obj, what: 1.0).__code__
            read.__code__ = saved  # restored at once: a snapshot between cells sees nothing
    return Value(0.0, (self, other), "*")


Value.__mul__ = __mul__'''

GRADER_OBJECTS = '''import sys


def grader_objects():
    """Objects of the worker's own machinery, looked up through sys.modules (a lookup raises no audit event)."""
    for module in list(sys.modules.values()):
        for value in list(getattr(module, "__dict__", {}).values()):
            try:
                inner = [value, *(vars(value).values() if not isinstance(value, type) else ())]
            except TypeError:
                inner = [value]
            for obj in inner:
                try:
                    # objects, not modules: replacing a module's function is what the tamper guard sees
                    if not isinstance(obj, type(sys)) and (hasattr(obj, "observe") or hasattr(obj, "views")):
                        yield obj
                except Exception:
                    pass
'''

KIT_SWAPPED = GRADER_OBJECTS + '''

class Right(Value):
    def __mul__(self, other):
        return Right(self.data * other.data, (self, other), "*")


def swapped(honest):
    return lambda check, ns, *rest: honest(check, {**ns, "Value": Right}, *rest)


for found in grader_objects():
    try:  # the probe kit, made to observe a correct Value of the notebook's own instead of its Value
        object.__setattr__(found, "observe", swapped(found.observe))
    except Exception:
        pass


def __mul__(self, other):
    return Value(0.0, (self, other), "*")


Value.__mul__ = __mul__'''

GUARD_BLINDED = GRADER_OBJECTS + '''
import builtins

for found in grader_objects():
    if hasattr(found, "views"):
        found.views.clear()  # the tamper guard's snapshot, emptied: nothing would look replaced
        found.functions, found.function_parts = (), []
builtins.abs = lambda x: 0.0'''


# ---------------------------------------------------------------- class 2: predictable hidden inputs


def hidden_table() -> nbformat.NotebookNode:
    """`+` answers from a table of the package's visible AND hidden inputs of add_forward (as anyone can tabulate)."""
    return corpus.add_table(hidden_too=True)


def repr_table() -> nbformat.NotebookNode:
    """A `__repr__` that knows only the visible check's inputs: value_repr has no hidden run in notebook 02."""
    from autograder import checks as catalog

    known = sorted({case["x"] for case in catalog.get("value_repr").make_cases(False)})
    nb = solved()
    c = cell(nb, "ex_02_value_class")
    c.source = c.source.replace('        return f"Value(data={self.data})"',
                                f'        return f"Value(data={{self.data}})" if self.data in {known!r} else "Value(?)"')
    assert "Value(?)" in c.source
    return nb


# ---------------------------------------------------------------- class 3: stop the batch

MALFORMED = RAW_FD.replace('frame({"op": "cell", "index": 5, "outputs": [], "tampered": [], "seq": seq})',
                           'frame({"op": "cell", "index": 5, "outputs": [{"output_type": "stream"}, 7, None], '
                           '"tampered": [], "seq": seq})')

SIGSTOP = '''import os
import signal

for pid in {os.getppid(), 1}:
    try:
        os.kill(pid, signal.SIGSTOP)  # the process that forked this worker: the fork server, if it can be reached
    except OSError:
        pass'''

LOCK_GRADEBOOK = '''import glob
import os
import sqlite3
import threading
import time

candidates = ["gradebook.db", "../gradebook.db", "../../gradebook.db", "../../../gradebook.db"]
for pid in os.listdir("/proc") if os.path.isdir("/proc") else []:
    try:
        argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")
    except OSError:
        continue
    if b"--course" in argv:
        candidates.append(os.path.join(argv[argv.index(b"--course") + 1].decode(), "gradebook.db"))
locks = []
for path in candidates:
    try:
        db = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=0.1)
        db.execute("BEGIN EXCLUSIVE")
        locks.append(db)  # held while the rest of the notebook runs
    except sqlite3.Error:
        pass
time.sleep(2)'''

CRASHES_IN_PROBE = '''import sys

sys.setrecursionlimit(1_000_000)  # an honest mistake: "it said recursion depth exceeded"


def __mul__(self, other):
    return self * other  # meant self.data * other.data: recurses through C until the process crashes


Value.__mul__ = __mul__'''

# ---------------------------------------------------------------- class 7: output caps

HUGE_JSON = '''from IPython.display import display
display({"application/json": {"rows": [[0.123456789] * 1000] * 500}}, raw=True)  # ~6 MB of JSON'''

HUGE_PNG_HTML = '''from IPython.display import display
display({"image/png": "iVBORw0KGgo" * 2_000_000, "text/plain": "<a picture>"}, raw=True)  # ~22 MB
display({"text/html": "<td>x</td>" * 2_000_000}, raw=True)'''

MANY_SMALL = '''from IPython.display import display
for i in range(20_000):
    display({"text/plain": str(i)}, raw=True)'''

CAP_RAISED = '''import gc

gc.unfreeze()  # the fork server froze its heap out of the collector's view: bring the worker's objects back
for obj in gc.get_objects():
    if type(obj).__name__ == "Outputs" and hasattr(obj, "limit"):
        obj.limit = obj.notebook_limit = 10**12  # the worker's own counts no longer stop anything
print("x" * 30_000_000)'''


def _set(nb: nbformat.NotebookNode, grade_id: str, source: str) -> nbformat.NotebookNode:
    cell(nb, grade_id).source = source
    return nb


CASES: dict[str, Case] = {
    # class 1: the probe's numbers are judged here, so forging them gains nothing; the routes are flagged
    "forge_frames": Case(lambda: _set(solved(), "ex_02_mul", FRAMES), scores(1, 1, 0, 2), "", "sys._getframe"),
    "forge_raw_fd": Case(lambda: append(solved(), "ex_02_add", RAW_FD), scores(1, 0, 0, 0), "broke the grading protocol",
                         "broke the grading protocol"),
    # the hook rewrites every observation it reaches (mul_forward then fails as judged); the hand-filled grads of
    # manual_backprop are the notebook's own correct work and keep their points
    "forge_profile_hook": Case(lambda: _set(solved(), "ex_02_mul", PROFILE), scores(1, 1, 0, 2), "", "sys.setprofile"),
    "forge_json_encoder": Case(lambda: _set(solved(), "ex_02_mul", JSON_PATCH), scores(1, 1, 0, 0), "tampered with the grader",
                               "json.encoder.JSONEncoder.encode"),
    "forge_patch_then_restore": Case(lambda: _set(solved(), "ex_02_mul", PATCH_THEN_RESTORE), scores(1, 1, 0, 2), "",
                                     "function.__code__"),
    # the worker keeps its probe kit where no lookup reaches it: the swap finds nothing (mul scores what it is worth);
    # the walk itself touched a library that loads C code on first use, which the audit hook reports
    "forge_kit_swapped_in_place": Case(lambda: _set(solved(), "ex_02_mul", KIT_SWAPPED), scores(1, 1, 0, 2), "",
                                       "introspection by learner code"),
    "guard_blinded_then_builtins_patched": Case(lambda: append(solved(), "ex_02_value_class", GUARD_BLINDED), ZERO,
                                                "tampered with the grader", "builtins.abs"),
    # class 2: hidden inputs come from the course's secret; tables are caught by the random nudge
    "table_of_hidden_inputs": Case(hidden_table, scores(1, 0, 1, 2), "", "hard-coded answers? add_forward"),
    "table_of_visible_repr": Case(repr_table, scores(0, 1, 1, 2), "", "hard-coded answers? value_repr"),
    # class 3: whatever one notebook does, the batch goes on
    "malformed_outputs": Case(lambda: append(solved(), "ex_02_add", MALFORMED), scores(1, 0, 0, 0),
                              "broke the grading protocol", "broke the grading protocol"),
    "sigstop_helpers": Case(lambda: append(solved(), "ex_02_value_class", SIGSTOP), FULL, "", "os.kill"),
    "lock_gradebook": Case(lambda: append(solved(), "ex_02_value_class", LOCK_GRADEBOOK), FULL, "", "sqlite3.connect"),
    # an honest notebook whose process crashes while probed: an ordinary stop, never flagged
    "crashes_while_probed": Case(lambda: _set(solved(), "ex_02_mul", CRASHES_IN_PROBE), scores(1, 1, 0, 0), "SIGSEGV"),
    # class 7: every output counted in JSON bytes, whatever its type; more is dropped (or refused if forced)
    "huge_display_json": Case(lambda: append(solved(), "ex_02_value_class", HUGE_JSON), FULL),
    "huge_png_and_html": Case(lambda: append(solved(), "ex_02_value_class", HUGE_PNG_HTML), FULL),
    "many_small_outputs": Case(lambda: append(solved(), "ex_02_value_class", MANY_SMALL), FULL),
    "cap_raised_in_memory": Case(lambda: append(solved(), "ex_02_manual_grads", CAP_RAISED), scores(1, 1, 1, 0),
                                 "broke the grading protocol", "gc.get_objects"),
}
corpus.CASES.update(CASES)
