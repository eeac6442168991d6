"""The expression graph picture: every value reachable from a root (label, data, grad), its ops and edges, as SVG.

Nothing here is an engine: the learner's Value is read through `data`, `grad`, `_op`, `_prev` and `label`.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

from ..probes.graphs import walk_graph
from ..probes.safe import LearnerError, short_repr

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
    """An expression graph drawn as SVG; `.svg` is the text, `.alt` says in words what it shows.

    Jupyter shows it as an image with that alternative text (`_repr_html_`); `_repr_svg_` is the SVG itself.
    """

    def __init__(self, svg: str, nodes: int, edges: int, alt: str = "") -> None:
        self.svg = svg
        self.nodes = nodes
        self.edges = edges
        self.alt = alt or f"expression graph: {nodes} values, {edges} edges"

    def _repr_svg_(self) -> str:
        return self.svg

    def _repr_html_(self) -> str:
        # JupyterLab draws SVG output as an <img> without alt text: this one carries it (feedback HTML too)
        data = base64.b64encode(self.svg.encode()).decode()
        return f'<img alt="{escape(self.alt, {chr(34): "&quot;"})}" src="data:image/svg+xml;base64,{data}">'

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
    alt = _alt_text(boxes, f"v{id(root)}")
    width = max(b.x + b.width for b in boxes.values()) + PAD
    height = max(b.y + b.height for b in boxes.values()) + PAD
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="monospace" font-size="12" role="img" '
        f'aria-label="{escape(alt, {chr(34): "&quot;"})}">',
        f"<title>{escape(alt)}</title>",
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
    return GraphPicture("\n".join(out), n_values, len(edges), alt)


def _alt_text(boxes: dict[str, _Box], root: str) -> str:
    """The picture in words: how many values and operations, and the output's label, data and grad."""
    values = sum(b.kind == "value" for b in boxes.values())
    ops = len(boxes) - values
    out = boxes.get(root)
    about = f"; the output {out.text[0] or '(no label)'} has {out.text[1]}, {out.text[2]}" if out else ""
    return (f"expression graph of {values} value{'s' if values != 1 else ''} and {ops} "
            f"operation{'s' if ops != 1 else ''}{about}")


