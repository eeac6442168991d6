"""Helpers the workbook notebooks use: graph pictures, the two-moons data, plots, progress bars, summaries.

Nothing here is an engine: the learner's Value is read through `data`, `grad`, `_op`, `_prev` and `label`.
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from .checks import NOT_IMPLEMENTED, CheckResult, get, run_checks
from .notebook import GREEN, RED, grading, result_html, show
from .notebook import in_kernel as _in_kernel
from .notebook import recorded as stood_when_checked
from .probes.graphs import walk_graph
from .probes.safe import LearnerError, short_repr
from .report import result_lines

# ---------------------------------------------------------------- grading mode


def demo_size(interactive: int, graded: int) -> int:
    """`interactive` for a learner, the smaller `graded` under nbgrader (demo output is never graded)."""
    return graded if grading() else interactive


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
    scored = [(float(points), run_checks([get(n) for n in names], ns)) for points, *names in cells]
    stood = stood_when_checked(ns)
    show(summary_text(scored, stood), summary_html(scored, stood))


Scored = list[tuple[float, list[CheckResult]]]


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


def _to_do(results: list[CheckResult], stood: dict[str, bool]) -> list[str]:
    """The closing lines: which checks are not done yet, which fail, which pass only now."""
    todo = [r.name for r in results if not r.passed and _not_done(r)]
    failing = [r.name for r in results if not r.passed and not _not_done(r)]
    only_now = [r.name for r in results if _only_now(r, stood)]
    return ([f"Not done yet: {', '.join(todo)}."] if todo else []) + ([f"Failing: {', '.join(failing)}."] if failing else []) + (
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
            lines.append(f"  {score:<18}{result_lines(r)[0]}" + (f" ({note})" if note else ""))
    head, rest = _closing(scored, stood)
    return "\n".join([*lines, head, *rest])


def summary_html(scored: Scored, stood: dict[str, bool]) -> str:
    """The summary as an HTML table: points per grade cell next to its checks' ✓ and ✗."""
    rows = []
    for points, results in scored:
        ok = all(_counts(r, stood) for r in results)
        colour = GREEN if ok else RED
        cell = (f'<td rowspan="{len(results)}" style="vertical-align:top;color:{colour};white-space:nowrap">'
                f"{(points if ok else 0):g} of {_pts(points)}</td>")
        for i, r in enumerate(results):
            note = _only_now(r, stood)
            extra = f' <span style="color:{RED}">({escape(note)})</span>' if note else ""
            rows.append(f"<tr>{cell if i == 0 else ''}<td style=\"text-align:left\">{result_html(r, brief=True)}{extra}"
                        "</td></tr>")
    head, rest = _closing(scored, stood)
    intro = ("<p><b>Points as nbgrader will score them</b> (a grade cell earns its points only when every check "
             "in it passes)</p>")
    bold, _, tail = head.partition(";")
    foot = [f"<b>{escape(bold)}</b>;{escape(tail)}", *(escape(t) for t in rest)]
    return (f'<div class="autograder-summary">{intro}<table>{"".join(rows)}</table>'
            + "".join(f"<p>{t}</p>" for t in foot) + "</div>")


# ---------------------------------------------------------------- PyTorch side by side (notebook 05)

TORCH_REFERENCE = Path(__file__).with_name("torch_reference.json")
CPU_TORCH = ".venv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu"


class NotRecorded(LookupError):
    """The recorded PyTorch numbers are for other inputs; shown in Jupyter as one line."""

    def _render_traceback_(self) -> list[str]:
        return [f"NotRecorded: {self}"]


def torch_reference() -> dict[str, Any]:
    """The numbers scripts/record_torch_reference.py recorded with PyTorch, and that PyTorch's version."""
    return json.loads(TORCH_REFERENCE.read_text(encoding="utf-8"))


def torch_or_none() -> Any:
    """PyTorch if it is installed (and nbgrader is not running the notebook), else None; says which numbers show."""
    if not grading():
        try:
            import torch
        except ImportError:
            pass
        else:
            print(f"PyTorch {torch.__version__}: the PyTorch cells compute their numbers live.")
            return torch
    version = torch_reference()["torch_version"]
    why = "nbgrader is running this notebook" if grading() else "PyTorch is not installed"
    print(f"{why}: the PyTorch cells show the numbers PyTorch {version} computed for the same code "
          "(recorded by scripts/record_torch_reference.py).")
    if not grading():
        print(f"To run them live, install PyTorch's CPU-only build (about 200 MB; a plain `pip install torch` on Linux "
              f"fetches the CUDA build, several GB), then restart the kernel:\n    {CPU_TORCH}")
    return None


def recorded(name: str, inputs: Any) -> dict[str, Any]:
    """What PyTorch computed for `name` (neuron, wobble, custom_tanh), provided `inputs` are the recorded ones."""
    entry = torch_reference()[name]
    if entry["inputs"] != inputs:
        raise NotRecorded(f"PyTorch's numbers were recorded at {entry['inputs']}, not at {inputs}: "
                          "put the inputs back to compare, or install PyTorch to compute at any inputs")
    return entry


# ---------------------------------------------------------------- the expression graph picture

MAX_NODES = 300
BOX_W, BOX_H, OP_R = 132, 54, 18
GAP, ROW_H, PAD = 36, 66, 12


def _number(x: Any) -> str:
    """A node's data or grad as the picture shows it (4 decimals), whatever the learner stored."""
    try:
        return f"{float(x):.4f}"
    except Exception:
        text = str.__repr__(x) if isinstance(x, str) else short_repr(x, 20)
        return text if len(text) <= 20 else text[:17] + "..."


@dataclass
class _Box:
    key: str
    kind: str  # "value" or "op"
    text: list[str]
    depth: int = 0
    row: int = 0
    x: float = 0.0
    y: float = 0.0

    @property
    def width(self) -> float:
        return BOX_W if self.kind == "value" else 2 * OP_R

    @property
    def height(self) -> float:
        return BOX_H if self.kind == "value" else 2 * OP_R

    def left(self) -> tuple[float, float]:
        return self.x, self.y + self.height / 2

    def right(self) -> tuple[float, float]:
        return self.x + self.width, self.y + self.height / 2


class GraphPicture:
    """An expression graph drawn as SVG: Jupyter displays it through `_repr_svg_`; `.svg` is the text."""

    def __init__(self, svg: str, nodes: int, edges: int) -> None:
        self.svg = svg
        self.nodes = nodes
        self.edges = edges

    def _repr_svg_(self) -> str:
        return self.svg

    def __repr__(self) -> str:
        return f"<GraphPicture: {self.nodes} boxes, {self.edges} edges>"

    def save(self, path: str) -> None:
        """Write the SVG to a file."""
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(self.svg)


def _layout(root: Any) -> tuple[dict[str, _Box], list[tuple[str, str]]]:
    """Boxes for values and ops, with edges child -> op -> result; found by identity, never by __eq__."""
    try:
        found, children = walk_graph(root, MAX_NODES)
    except LearnerError as exc:
        raise LearnerError(f"cannot draw this graph (too big to read, or not a graph of Values): {exc}") from None
    nodes = {id(n): n for n in found}

    boxes: dict[str, _Box] = {}
    edges: list[tuple[str, str]] = []
    for i, n in nodes.items():
        label = getattr(n, "label", "") or ""
        title = str(label) if isinstance(label, str) else short_repr(label, 20)
        key = f"v{i}"
        boxes[key] = _Box(key, "value", [title, f"data {_number(getattr(n, 'data', '?'))}",
                                         f"grad {_number(getattr(n, 'grad', '?'))}"])
        kids = children[i]
        if kids:
            op = getattr(n, "_op", "") or "?"
            opkey = f"o{i}"
            boxes[opkey] = _Box(opkey, "op", [str(op) if isinstance(op, str) else short_repr(op, 8)])
            edges.append((opkey, key))
            for k in {id(c): c for c in kids}:
                edges.append((f"v{k}", opkey))

    # Columns by longest distance from the root (root on the right, each input just left of its first use),
    # rows ordered by where their consumers sit, which keeps edges short and mostly uncrossed.
    outgoing: dict[str, list[str]] = {k: [] for k in boxes}
    incoming: dict[str, list[str]] = {k: [] for k in boxes}
    for a, b in edges:
        outgoing[a].append(b)
        incoming[b].append(a)
    order: list[str] = []  # topological: every box after its inputs
    state: dict[str, int] = {}
    for start in boxes:
        work = [(start, False)]
        while work:
            k, done = work.pop()
            if done:
                order.append(k)
            elif k not in state:
                state[k] = 1
                work.append((k, True))
                work.extend((p, False) for p in incoming[k] if p not in state)
    for k in reversed(order):
        boxes[k].depth = max((boxes[c].depth + 1 for c in outgoing[k]), default=0)
    columns: dict[int, list[_Box]] = {}
    for k in reversed(order):
        columns.setdefault(boxes[k].depth, []).append(boxes[k])
    deepest = max(columns)
    widths = {d: max(b.width for b in col) for d, col in columns.items()}
    x = PAD
    xs = {}
    for d in range(deepest, -1, -1):
        xs[d] = x
        x += widths.get(d, 0) + GAP
    for d in range(deepest + 1):
        col = columns.get(d, [])
        col.sort(key=lambda b: sum(boxes[c].y for c in outgoing[b.key]) / max(1, len(outgoing[b.key])))
        for row, b in enumerate(col):
            b.row = row
            b.x = xs[d] + (widths[d] - b.width) / 2
            b.y = PAD + row * ROW_H + (BOX_H - b.height) / 2
    return boxes, edges


def draw_graph(root: Any) -> GraphPicture:
    """Draw every value reachable from `root` (label, data, grad), its op nodes and every edge, as SVG."""
    boxes, edges = _layout(root)
    width = max(b.x + b.width for b in boxes.values()) + PAD
    height = max(b.y + b.height for b in boxes.values()) + PAD
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="monospace" font-size="12">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" '
        'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>',
    ]
    for a, b in edges:
        (x1, y1), (x2, y2) = boxes[a].right(), boxes[b].left()
        if boxes[a].depth - boxes[b].depth > 1:
            # Skips a column: run along the free lane under the source's row, not through the boxes between.
            lane = PAD + boxes[a].row * ROW_H + BOX_H + (ROW_H - BOX_H) / 2
            r = GAP / 2
            d = (f"M {x1:.1f} {y1:.1f} C {x1 + r:.1f} {y1:.1f} {x1 + r:.1f} {lane:.1f} {x1 + GAP:.1f} {lane:.1f} "
                 f"L {x2 - GAP:.1f} {lane:.1f} C {x2 - r:.1f} {lane:.1f} {x2 - r:.1f} {y2:.1f} {x2:.1f} {y2:.1f}")
        else:
            mid = (x1 + x2) / 2
            d = f"M {x1:.1f} {y1:.1f} C {mid:.1f} {y1:.1f} {mid:.1f} {y2:.1f} {x2:.1f} {y2:.1f}"
        out.append(f'<path class="edge" data-from="{a}" data-to="{b}" d="{d}" fill="none" stroke="#555" '
                   'marker-end="url(#arrow)"/>')
    for b in boxes.values():
        if b.kind == "value":
            out.append(f'<g class="value" id="{b.key}">')
            out.append(f'<rect x="{b.x:.1f}" y="{b.y:.1f}" width="{b.width}" height="{b.height}" rx="4" '
                       'fill="#eef4ff" stroke="#335"/>')
            for j, line in enumerate(b.text):
                weight = ' font-weight="bold"' if j == 0 else ""
                out.append(f'<text x="{b.x + 8:.1f}" y="{b.y + 15 + j * 16:.1f}"{weight}>{escape(line)}</text>')
        else:
            cx, cy = b.x + OP_R, b.y + OP_R
            out.append(f'<g class="op" id="{b.key}">')
            out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{OP_R}" fill="#fff4e0" stroke="#753"/>')
            out.append(f'<text x="{cx:.1f}" y="{cy + 4:.1f}" text-anchor="middle">{escape(b.text[0])}</text>')
        out.append("</g>")
    out.append("</svg>")
    n_values = sum(b.kind == "value" for b in boxes.values())
    return GraphPicture("\n".join(out), n_values, len(edges))


# ---------------------------------------------------------------- data


def make_moons(n: int = 100, noise: float = 0.1, seed: int = 0) -> tuple[list[list[float]], list[float]]:
    """Two interleaved half circles in 2-D, labels -1.0 and +1.0 (seeded, pure Python)."""
    rng = random.Random(seed)
    xs: list[list[float]] = []
    ys: list[float] = []
    for i in range(n):
        upper = i % 2 == 0
        t = math.pi * rng.random()
        if upper:
            x, y = math.cos(t), math.sin(t)
        else:
            x, y = 1 - math.cos(t), 0.5 - math.sin(t)
        # centred and scaled so that tanh units start in their useful range
        xs.append([(x - 0.5) + rng.gauss(0, noise), (y - 0.25) * 2 + rng.gauss(0, noise)])
        ys.append(1.0 if upper else -1.0)
    return xs, ys


# ---------------------------------------------------------------- progress and plots


def progress(iterable: Iterable[Any], total: int | None = None, desc: str = "") -> Iterator[Any]:
    """A tqdm progress bar: a widget in JupyterLab, text on stdout elsewhere (never on stderr)."""
    in_kernel = _in_kernel()
    if in_kernel:  # only a kernel shows widgets: elsewhere (a grading worker) the slow import is not worth it
        try:
            import ipywidgets  # noqa: F401  # tqdm.auto needs it for the widget bar
        except ImportError:
            in_kernel = False
    if in_kernel:
        from tqdm.notebook import tqdm

        return iter(tqdm(iterable, total=total, desc=desc))
    from tqdm import tqdm as text_tqdm

    return iter(text_tqdm(iterable, total=total, desc=desc, file=sys.stdout))


def _pyplot() -> Any:
    import matplotlib

    if not _in_kernel() and "MPLBACKEND" not in os.environ:
        matplotlib.use("Agg")  # no display outside Jupyter
    import matplotlib.pyplot as plt

    return plt


def _shown(fig: Any) -> Any:
    """In Jupyter: show the figure now and return None (no second copy); elsewhere return it for saving."""
    if _in_kernel():
        _pyplot().show()
        return None
    return fig


def _not_drawn(title: str) -> bool:
    """While grading, say that a plot is left out and return True: no grade depends on a picture, and drawing
    one took most of a graded notebook's time."""
    if grading():
        print(f"(plot '{title}': drawn when you run this cell yourself, not while grading)")
        return True
    return False


def plot_loss(losses: Sequence[float] | dict[str, Sequence[float]], title: str = "training loss") -> Any:
    """Plot the loss after each step (several labelled curves when given a dict), log scale when it spans > 10x."""
    if _not_drawn(title):
        return None
    plt = _pyplot()
    curves = losses if isinstance(losses, dict) else {"": losses}
    fig, ax = plt.subplots(figsize=(5, 3))
    for label, ys in curves.items():
        ax.plot(range(len(ys)), ys, marker="." if len(ys) < 40 else None, label=label or None)
    if len(curves) > 1:
        ax.legend(fontsize=8)
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(title)
    positive = [x for ys in curves.values() for x in ys if x > 0]
    if positive and max(positive) > 10 * min(positive):
        ax.set_yscale("log")
    fig.tight_layout()
    return _shown(fig)


def plot_decision_boundary(model: Any, xs: Sequence[Sequence[float]], ys: Sequence[float], resolution: int = 30) -> Any:
    """Colour the plane by the sign of model(x) and scatter the examples on top."""
    if _not_drawn("decision boundary"):
        return None
    plt = _pyplot()
    x0s = [p[0] for p in xs]
    x1s = [p[1] for p in xs]
    lo0, hi0 = min(x0s) - 0.3, max(x0s) + 0.3
    lo1, hi1 = min(x1s) - 0.3, max(x1s) + 0.3
    g0 = [lo0 + (hi0 - lo0) * i / (resolution - 1) for i in range(resolution)]
    g1 = [lo1 + (hi1 - lo1) * j / (resolution - 1) for j in range(resolution)]
    score = [[float(getattr(model([a, b]), "data", 0.0)) for a in g0] for b in g1]
    fig, ax = plt.subplots(figsize=(4.5, 4))
    ax.contourf(g0, g1, score, levels=[-10, 0, 10], colors=["#f4c7c3", "#c6dbef"], alpha=0.8)
    ax.contour(g0, g1, score, levels=[0], colors="k", linewidths=1)
    ax.scatter(x0s, x1s, c=["#1f77b4" if y > 0 else "#d62728" for y in ys], s=14, edgecolors="k", linewidths=0.3)
    ax.set_title("decision boundary: sign of model(x)")
    fig.tight_layout()
    return _shown(fig)
