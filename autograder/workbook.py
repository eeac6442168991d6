"""What the workbook notebooks import: `summary` (the grade cells' points, scored as nbgrader will) and the
answer-free teaching aids of `autograder.aids` (graph pictures, the two-moons data, plots, progress bars, PyTorch's
numbers), re-exported here so that a notebook needs one import line.
"""

from __future__ import annotations

import inspect
import sys
import traceback
from typing import Any
from xml.sax.saxutils import escape

from .aids import (
    CPU_TORCH,
    TORCH_REFERENCE,
    GraphPicture,
    NotRecorded,
    demo_size,
    draw_graph,
    make_moons,
    plot_decision_boundary,
    plot_loss,
    plot_slopes,
    progress,
    recorded,
    torch_or_none,
    torch_reference,
)
from .checks import BY_NAME, NOT_IMPLEMENTED, CheckResult, get, run_checks
from .checks.exercises import MANUAL_NODES
from .checks.messages import NOT_IMPLEMENTED as NOT_IMPLEMENTED_TEXT
from .checks.messages import hint_level
from .notebook import BLOCK, GREEN, RED, grading, hint_level_here, result_html, show
from .notebook import recorded as stood_when_checked
from .report import result_lines

__all__ = ["CPU_TORCH", "TORCH_REFERENCE", "GraphPicture", "NotRecorded", "demo_size", "draw_graph", "make_moons",
           "plot_decision_boundary", "plot_loss", "plot_slopes", "progress", "recorded", "stopped_by_learner_code",
           "summary", "summary_html", "summary_text", "torch_or_none", "torch_reference", "unless_passing"]


# ---------------------------------------------------------------- summary

def summary(*cells: tuple[Any, ...], ns: dict[str, Any] | None = None) -> None:
    """Score each grade cell as nbgrader will (its points only if every check in it passes); never raises.

    Each argument is one grade cell: `(points, "check_name", ...)`. nbgrader runs the notebook top to bottom and
    scores each grade cell where it stands, so a check earns its cell's points here only if it passed when its
    check cell ran (recorded by `check`) and still passes now; one that passes now but failed (or never ran) at
    its position scores 0, and the summary says to Restart & Run All.
    """
    if ns is None:
        ns = sys._getframe(1).f_globals
    if grading():  # nbgrader scores the grade cells themselves; the summary is for the learner's own kernel
        print("Summary: skipped while nbgrader runs this notebook (each grade cell above is scored on its own).")
        return
    with hint_level(hint_level_here()):
        scored = [(float(points), run_checks([get(n) for n in names], ns)) for points, *names in cells]
    stood = stood_when_checked(ns)
    show(summary_text(scored, stood), summary_html(scored, stood))


Scored = list[tuple[float, list[CheckResult]]]


def unless_passing(*names: str, ns: dict[str, Any] | None = None) -> None:
    """Under a demo whose prose relies on these checks: one line naming what does not pass yet, else nothing.

    A demo's numbers come from the learner's code, so where a check fails they differ from the text around them;
    this says which method is why. A stub says so itself (the cell stops with "not done yet"), and under nbgrader
    demos are never graded, so nothing is printed then.
    """
    if ns is None:
        ns = sys._getframe(1).f_globals
    if grading():
        return
    results = run_checks([get(n) for n in names], ns)
    methods = _failing_methods(results, ns)
    if methods:
        what = " and ".join(methods)
        verb = "does not pass its check" if len(methods) == 1 else "do not pass their checks"
        print(f"(this differs from the text because {what} {verb} yet)")
        return
    # Not done yet, and the demo ran anyway (nothing it calls raises: notebook 2's hand-filled grads are still the
    # zeros Value(...) starts with): its numbers are those zeros', so say so, in the check's own words.
    todo = next((r for r in results if _not_done(r)), None)
    if todo is not None:
        said = todo.message.splitlines()[0].removeprefix("not done yet: ").removeprefix("not implemented yet: ")
        print(f"(this differs from the text because {_learner_name(todo, ns)} is not done yet: {said})")


def _learner_name(r: CheckResult, ns: dict[str, Any], quote: str = "`") -> str:
    """What a learner calls the thing a result is about: the method or function it pins (`Value.__mul__`, `train`),
    else the check itself (`the check `manual_backprop``); never one of the variables a check reads (notebook 2's
    hand-filled nodes `a`, `b`, ... are targets too)."""
    for name in (r.culprit, *get(r.name).own_methods, *r.targets):
        if name and _is_code(name, ns):
            return f"{quote}{name}{quote}"
    return f"the check {quote}{r.name}{quote}"


def _is_code(name: str, ns: dict[str, Any]) -> bool:
    """A method of a class (`Value.__add__`, `Neuron.__call__`), a class or a function the notebook defines."""
    head = name.split(".")[0]
    if "." in name:
        return isinstance(ns[head], type) if head in ns else head[:1].isupper()
    return inspect.isclass(ns.get(name)) or inspect.isfunction(ns.get(name))


def _failing_methods(results: list[CheckResult], ns: dict[str, Any], quote: str = "`") -> list[str]:
    """What the failing checks among `results` are about, as the learner names it, not counting those merely not
    done yet."""
    return list(dict.fromkeys(_learner_name(r, ns, quote) for r in results if not r.passed and not _not_done(r)))


def stopped_by_learner_code(exc: BaseException) -> bool:
    """A cell stopped inside an exercise's code: print one line naming the method, and True; else False.

    In a learner's kernel every cell runs under this (see `autograder.notebook.UnfinishedGuard`), so a demo that
    calls a wrong method (not an unfinished one) says which and Run All goes on to the summary. Only an error raised
    inside a method some check names counts, or one raised in the cell itself while a check above still fails (a
    method gave back something wrong); any other error is the cell's own and keeps its traceback. Under nbgrader the
    guard is not installed: a demo earns no points, and its error is nbgrader's to record as before.
    """
    frames = [f for f, _ in traceback.walk_tb(exc.__traceback__)]
    if not frames:
        return False
    error = f"{type(exc).__name__}: {_short(str(exc))}"
    methods = _exercise_frames(frames)
    if methods:
        called, raised = methods[0], methods[-1]
        where = f" (in {raised})" if raised != called else ""
        print(f"⋯ this demo needs {called}, which raised {error}{where} — see its check above; "
              "the rest of this cell did not run.")
        return True
    # raised in the cell itself, on what a method gave back (`t = x.tanh()` returning None, then `t.backward()`)
    ns, line = frames[0].f_globals, traceback.extract_tb(exc.__traceback__)[0]
    failed = [n for n, passed in stood_when_checked(ns).items() if passed is False]
    methods = _failing_methods(run_checks([get(n) for n in failed], ns), ns, quote="") if failed else []
    if not methods:
        return False
    what = " and ".join(methods)
    print(f"⋯ this demo needs {what}, which {'does' if len(methods) == 1 else 'do'} not pass {_their(methods)} above: "
          f"line {line.lineno} (`{_short(line.line or '')}`) raised {error} — see {_their(methods)}; the rest of this "
          "cell did not run.")
    return True


def _their(methods: list[str]) -> str:
    return "its check" if len(methods) == 1 else "their checks"


def _short(text: str) -> str:
    text = " ".join(text.split()) or "(no message)"
    return text if len(text) <= 160 else text[:157] + "..."


def _exercise_frames(frames: list[Any]) -> list[str]:
    """The exercise methods an error went through, outermost first (learner code is what the cell's globals define)."""
    ns = frames[0].f_globals  # the cell's own frame: its globals are the notebook's
    # the functions and classes exercises define (not notebook 2's hand-filled nodes a, b, ..., f, L: a learner's own
    # helper `f` is not an exercise)
    targets = {t for c in BY_NAME.values() for t in c.targets} - set(MANUAL_NODES)
    classes = {t.split(".")[0] for t in targets if len(t) > 1 and t[:1].isupper()}  # Value, Neuron, Layer, MLP
    names: list[str] = []
    for frame in frames[1:]:
        if frame.f_globals is not ns:
            continue
        own = getattr(frame.f_code, "co_qualname", frame.f_code.co_name).split(".<locals>")[0]
        if own not in targets and own.split(".")[0] not in classes:
            own = f"Value.{own}"  # a method written at top level, then set on Value (`Value.__radd__ = __radd__`)
            if own not in targets:
                continue
        if own not in names:
            names.append(own)
    return names


def _not_done(r: CheckResult) -> bool:
    return r.status == NOT_IMPLEMENTED


def _counts(r: CheckResult, stood: dict[str, bool]) -> bool:
    """The check passes now and passed where its check cell stands: what nbgrader's top-to-bottom run gives."""
    return r.passed and stood.get(r.name) is True


def _only_now(r: CheckResult, stood: dict[str, bool]) -> str:
    """'' for a check that counts or fails now; else why a check that passes now does not count."""
    if not r.passed or stood.get(r.name) is True:
        return ""
    if stood.get(r.name) is False:
        return "passes now, but failed when its check cell ran"
    return "passes now, but its check cell has not run"


def _totals(scored: Scored, stood: dict[str, bool]) -> tuple[float, float, list[CheckResult]]:
    earned = sum(p for p, rs in scored if all(_counts(r, stood) for r in rs))
    return earned, sum(p for p, _ in scored), [r for _, rs in scored for r in rs]


# Not started is not wrong: an unfinished exercise's line in the summary is one quiet (grey) line, apart from the
# red ✗ of a failing one, and the stub's instruction is said once at the end, not once per check.
TODO, GREY = "⋯", "#57606a"  # grey with a contrast of 6.4:1 on white
_STUB_HINT = NOT_IMPLEMENTED_TEXT.split("{error}")[-1]  # " (replace the `raise NotImplementedError()` line ...)"
REPLACE_STUBS = "In each unfinished exercise, replace the `raise NotImplementedError()` line with your code, then run its check cell."


def todo_line(r: CheckResult) -> str:
    """An unfinished exercise's check in one line: `⋯ name: not done yet (what is missing)`, no instruction repeated."""
    first = (r.message.splitlines() or [""])[0].removesuffix(_STUB_HINT)
    for lead in ("not implemented yet: ", "not done yet: "):
        first = first.removeprefix(lead)
    return f"{TODO} {r.name}: not done yet ({first})" if first else f"{TODO} {r.name}: not done yet"


def _line(r: CheckResult) -> str:
    return todo_line(r) if not r.passed and _not_done(r) else result_lines(r)[0]


def _to_do(results: list[CheckResult], stood: dict[str, bool]) -> list[str]:
    """The closing lines: which checks are not done yet, which fail, which pass only now."""
    todo = [r.name for r in results if not r.passed and _not_done(r)]
    failing = [r.name for r in results if not r.passed and not _not_done(r)]
    only_now = [r.name for r in results if _only_now(r, stood)]
    stubs = any(_STUB_HINT in r.message for r in results if not r.passed and _not_done(r))
    return ([f"Not done yet: {', '.join(todo)}."] if todo else []) + ([REPLACE_STUBS] if stubs else []) + (
        [f"Failing: {', '.join(failing)}."] if failing else []) + (
        [f"Passing only now: {', '.join(only_now)}. nbgrader runs the notebook from the top and scores each check "
         "where its check cell stands; there these failed or did not run. Restart & Run All (Kernel menu) to see "
         "what nbgrader will score."] if only_now else [])


def _pts(x: float) -> str:
    return f"{x:g} point" + ("" if x == 1 else "s")


def _closing(scored: Scored, stood: dict[str, bool]) -> tuple[str, list[str]]:
    earned, total, results = _totals(scored, stood)
    passed = sum(_counts(r, stood) for r in results)
    head = (f"{earned:g} of {_pts(total)}; {passed} of {len(results)} checks pass"
            + (": this notebook is done (nbgrader also runs hidden inputs)." if earned == total else "."))
    return head, _to_do(results, stood)


def summary_text(scored: Scored, stood: dict[str, bool]) -> str:
    """The summary as plain text: one block per grade cell with its points, then the totals and what is left.

    `stood`: {check name: passed} when its check cell ran (see `autograder.notebook.recorded`).
    """
    lines = ["Points as nbgrader will score them (a grade cell earns its points only when every check in it passes):"]
    for points, results in scored:
        got = points if all(_counts(r, stood) for r in results) else 0.0
        for i, r in enumerate(results):
            score = f"{got:g} of {_pts(points)}" if i == 0 else ""
            note = _only_now(r, stood)
            lines.append(f"  {score:<18}{_line(r)}" + (f" ({note})" if note else ""))
    head, rest = _closing(scored, stood)
    return "\n".join([*lines, head, *rest])


def summary_html(scored: Scored, stood: dict[str, bool]) -> str:
    """The summary as an HTML table: points per grade cell next to its checks' ✓ and ✗."""
    rows = []
    for points, results in scored:
        ok = all(_counts(r, stood) for r in results)
        unstarted = all(not r.passed and _not_done(r) for r in results)
        colour = GREEN if ok else GREY if unstarted else RED
        cell = (f'<td rowspan="{len(results)}" style="vertical-align:top;color:{colour};white-space:nowrap">'
                f"{(points if ok else 0):g} of {_pts(points)}</td>")
        for i, r in enumerate(results):
            note = _only_now(r, stood)
            extra = f' <span style="color:{RED}">({escape(note)})</span>' if note else ""
            shown = (f'<div class="autograder-todo" style="{BLOCK}color:{GREY}">{escape(todo_line(r))}</div>'
                     if not r.passed and _not_done(r) else result_html(r, brief=True))
            rows.append(f"<tr>{cell if i == 0 else ''}<td style=\"text-align:left\">{shown}{extra}</td></tr>")
    head, rest = _closing(scored, stood)
    intro = ("<p><b>Points as nbgrader will score them</b> (a grade cell earns its points only when every check "
             "in it passes)</p>")
    bold, _, tail = head.partition(";")
    foot = [f"<b>{escape(bold)}</b>;{escape(tail)}", *(escape(t) for t in rest)]
    return (f'<div class="autograder-summary">{intro}<table>{"".join(rows)}</table>'
            + "".join(f"<p>{t}</p>" for t in foot) + "</div>")
