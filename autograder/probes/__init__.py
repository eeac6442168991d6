"""The probe side: what runs next to the learner's code, and all that does.

It builds graphs from the learner's `Value` with the data a self-contained case carries (the expression's
text, the inputs, the net's shape and weights), reads plain numbers back through `safe.read_number`, under a
time limit with the learner's printing captured, and reports raw observations as plain JSON; what went wrong is
reported as a key and the facts seen (`{"error": key, "fields": {...}}`), phrased on the answer side
(checks/messages.PROBE_ERRORS). It holds no answer: no expected value, no judge, no case generator, no numerical
truth, no sentence; what each check needs defined (`needs.py`) is written from the checks' declarations. It imports
only the standard library and its own modules (a test proves it), so the batch grader's sandboxed worker can load it
alone.

A probe runs only the learner functions its check names: while it runs, every other Value operation, backward(), the
net's model and loss are the grader's own (`scaffold.py`), so each check judges its own exercise; and every graph is
walked in the order the grader built it (`graphs.py`), so a verdict never depends on hash seeds or addresses. A
target that is the grader's own code, installed or wrapped in the learner's place (`provenance.py`), is reported
instead of judged. The grader's operations come from `op_table.py`, written like `needs.py` from the answer side's declarations
(autograder/checks/ops.py): a new operation is declared there, never here.

API (called by the grading worker and by the in-kernel `check`):
    missing(check_name, ns) -> list[str]                        targets the namespace lacks
    observe(check_name, ns, case, check_timeout) -> dict        the observation, or {"error", "status", ...}
"""

from __future__ import annotations

import dis
import linecache
import sys
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from . import engine, exercises, graphs, net
from .graphs import EXPRESSION_FILE
from .needs import COMPANIONS, NEEDS
from .provenance import borrowed
from .safe import LearnerError, captured_output, describe, time_limit
from .scaffold import scaffolded

__all__ = ["NEEDS", "PROBES", "is_defined", "missing", "observe"]

# What each check needs defined before its probes can run, by check name: written from the checks' own declarations
# (`python -m autograder.checks`), since the probe side may not import them.
Probe = Callable[[Mapping[str, Any], dict[str, Any]], dict[str, Any]]

# The probe a case asks for, by its "probe" key.
PROBES: dict[str, Probe] = {
    "expression": engine.probe_expression,
    "node": engine.probe_node,
    "backward": engine.probe_backward,
    "backward_again": engine.probe_backward_again,
    "again": engine.probe_again,
    "ladder": engine.probe_ladder,
    "seed": engine.probe_seed,
    "twins": engine.probe_twins,
    "repr": engine.probe_repr,
    "neuron": net.probe_neuron,
    "init": net.probe_init,
    "layer": net.probe_layer,
    "mlp": net.probe_mlp,
    "loss": net.probe_loss,
    "train": net.probe_train,
    "derivative": exercises.probe_derivative,
    "relative_error": exercises.probe_relative_error,
    "manual": exercises.probe_manual,
    "tanh_bricks": exercises.probe_tanh_bricks,
    "grads_of": exercises.probe_grads_of,
}

_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)


def is_defined(ns: Mapping[str, Any], target: str) -> bool:
    """True when the namespace defines a target such as `Value.__mul__`, `MLP` or `train`."""
    head, _, attr = target.partition(".")
    obj = ns.get(head)
    if obj is None:
        return False
    if not attr:
        return True
    if not isinstance(obj, type):
        return False
    # object's own __repr__, __eq__, ... do not count as the learner's definition.
    return any(attr in vars(k) for k in obj.__mro__ if k is not object)


def missing(check_name: str, ns: Mapping[str, Any]) -> list[str]:
    """The targets check `check_name` needs that the namespace lacks."""
    return [t for t in NEEDS[check_name] if not is_defined(ns, t)]


def kept(check_name: str, ns: Mapping[str, Any]) -> tuple[str, ...]:
    """The learner's own functions while the check runs: its targets, and the companions the namespace defines."""
    return (*NEEDS.get(check_name, ()), *(t for t in COMPANIONS.get(check_name, ()) if is_defined(ns, t)))


def _learner_frames(tb: Any) -> list[Any]:
    """The traceback's frames that run learner code (not the grader's, not the expression text)."""
    return [f for f, _ in _learner_entries(tb)]


def _learner_entries(tb: Any) -> list[tuple[Any, int]]:
    """(frame, line number) of each traceback entry in learner code, outermost first."""
    return [(f, n) for f, n in traceback.walk_tb(tb)
            if not f.f_code.co_filename.startswith((_PACKAGE_DIR, EXPRESSION_FILE))]


def _cell_label(filename: str) -> str:
    """`Cell In[5]` for a notebook cell run by IPython, else the file's own name."""
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython else None
    number = getattr(getattr(shell, "compile", None), "_filename_map", {}).get(filename)
    if number is not None:
        return f"Cell In[{number}]"
    return filename.rsplit("/", 1)[-1] if filename.startswith("/") else filename


def _place(tb: Any) -> dict[str, Any] | None:
    """Where the learner's own code raised: the cell (or file), the line number and the line's text."""
    entries = _learner_entries(tb)
    if not entries:
        return None
    frame, lineno = entries[-1]
    filename = frame.f_code.co_filename
    text = linecache.getline(filename, lineno, frame.f_globals).strip()
    return {"file": _cell_label(filename)[:200], "line": lineno, "text": text[:200]}


def _name(frame: Any) -> str:
    code = frame.f_code
    return getattr(code, "co_qualname", code.co_name)


def _did_work_before(frame: Any, lineno: int) -> bool:
    """Whether the function stored attributes or made functions before the line that raised: the learner's code
    is there, and the `raise NotImplementedError()` of the stub was left below it."""
    line = 0
    for ins in dis.get_instructions(frame.f_code):
        starts = getattr(ins, "line_number", None) if isinstance(ins.starts_line, bool) else ins.starts_line
        line = starts or line  # Python 3.13 moved the line number to line_number
        if line >= lineno:
            break
        if ins.opname in ("STORE_ATTR", "MAKE_FUNCTION", "STORE_SUBSCR"):
            return True
    return False


def _error(exc: BaseException) -> dict[str, Any]:
    """An exception from learner code as data: what (a key and its facts, phrased on the answer side), where, and
    its status."""
    frames = _learner_frames(exc.__traceback__)
    where = _name(frames[-1]) if frames else ""
    at = f" in {where}" if where else ""
    obs: dict[str, Any] = {"status": "error", "where": where, "raised": True, "fields": {"at": at}}
    place = _place(exc.__traceback__)
    if place:
        obs["place"] = place
    if isinstance(exc, NotImplementedError):
        leftover = bool(frames) and _did_work_before(frames[-1], frames[-1].f_lineno)
        obs.update(status="failed" if leftover else "not_implemented", leftover_raise=leftover, error="not_implemented")
    elif isinstance(exc, RecursionError):
        obs["error"] = "recursion"
        cycle = _cycle([_name(f) for f in frames])
        if cycle:
            obs["fields"]["cycle"] = " > ".join(cycle)[:400]
    elif isinstance(exc, SystemExit):
        obs["error"] = "exit"
    else:
        obs["error"] = "raised" if isinstance(exc, Exception) else "raised_base"
        obs["fields"]["exception"] = describe(exc)[:2000]
    return obs


def _cycle(names: list[str], longest: int = 6) -> list[str]:
    """The learner functions that call each other without end, in call order from the first of them to be called:
    the shortest run of names that repeats three times at the deep end of the traceback ([] if none does)."""
    for p in range(1, longest + 1):
        tail = names[-3 * p:]
        if len(tail) == 3 * p and tail[:p] == tail[p:2 * p] == tail[2 * p:]:
            cycle = tail[-p:]
            first = next(n for n in names if n in cycle)  # where the walk entered the cycle
            k = cycle.index(first)
            return cycle[k:] + cycle[:k]
    return []


def observe(check_name: str, ns: Mapping[str, Any], case: dict[str, Any], check_timeout: float) -> dict[str, Any]:
    """Run the probe the case asks for on learner code, with a time limit and captured output; errors become data.

    `check_timeout` is the caller's `Limits.check_timeout` (the probe side imports no settings: it runs in the sandbox).
    """
    probe = PROBES[case["probe"]]
    theirs = borrowed(ns, kept(check_name, ns))
    if theirs:  # the grader's own operation in the learner's place: nothing of the learner's to judge
        return {"status": "failed", "error": "graders_code", "where": theirs[0], "raised": False,
                "fields": {"target": theirs[0], "file": theirs[1]}}
    graphs.BUILT.__init__()  # a fresh record of what the grader builds for this case
    try:
        # the scaffolding goes in before the time limit starts and out after it stopped: an alarm never lands in
        # the middle of putting the learner's methods back
        with captured_output(), scaffolded(ns, kept(check_name, ns)) as view, time_limit(check_timeout):
            return probe(view, case)
    except LearnerError as exc:  # nothing raised: a result misread
        return {**exc.as_data(), "status": "error", "where": "", "raised": False}
    except KeyboardInterrupt:
        raise  # the person running the grader pressed Ctrl-C
    except BaseException as exc:  # learner code may raise anything, SystemExit and GeneratorExit included
        return _error(exc)
    finally:
        graphs.BUILT.__init__()  # let go of the case's nodes
