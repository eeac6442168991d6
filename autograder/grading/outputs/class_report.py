"""The class report: one HTML page per assignment, for the instructor ("what to re-teach on Monday").

The page is its `SECTIONS` in order, each a function of the rows that returns its HTML: score histograms per notebook
(inline SVG, so the page needs no server and no other file), the most common misconceptions behind failed checks
(`misconceptions`, also written as a CSV), and the students' table. A new section is one more function in the list.
The page carries the Content-Security-Policy every page a person opens does (feedback/page_policy.py: no script, no
request to any server).
"""

from __future__ import annotations

import html
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

from ...lines import one_line
from ..pages.page_policy import inert_page
from ..store.files import REPORT_DIR, atomic_write
from ..types import Row
from .misconceptions import common_misconceptions
from .text import valid_text


def _ticks(top: float, most: int = 10) -> list[float]:
    """Whole-number ticks from 0 to `top`, at most about `most` of them, `top` itself included."""
    step = max(1, math.ceil(top / most))
    ticks = [float(t) for t in range(0, math.floor(top) + 1, step)]
    if not ticks or ticks[-1] != top:
        ticks.append(float(top))
    return ticks


def histogram_svg(scores: Sequence[float], max_score: float, title: str, not_attempted: int = 0) -> str:
    """How many students got each score, on a numeric axis from 0 to `max_score`, as inline SVG.

    A bar stands where its score lies on the axis (0, 1 and 8 of 8 are spaced as numbers are); the students who
    did not attempt the notebook are the grey part of the bar at 0. No plotting library to start: ~1 s saved.
    """
    counts = Counter(round(s, 2) for s in scores)
    counts[0.0] = counts.get(0.0, 0) + not_attempted
    top_score = max([max_score, *counts]) or 1.0
    top = max(counts.values(), default=0) or 1
    width, height, left, right, above, below = 480, 280, 44, 24, 28, 56
    plot_w, plot_h = width - left - right, height - above - below
    bar_w = min(plot_w / (top_score + 1) * 0.8, 40.0)
    at = lambda score: left + bar_w / 2 + (plot_w - bar_w) * score / top_score  # noqa: E731  # the bar's centre
    step = max(1, -(-top // 5))  # at most ~5 whole-number ticks
    y = lambda n: above + plot_h * (1 - n / top)  # noqa: E731
    parts = [f"<svg class='histogram' width='{width}' height='{height}' "
             f"viewBox='0 0 {width} {height}' role='img' aria-label='score histogram of {_esc(title)}' "
             "font-family='sans-serif' font-size='11'>",
             f"<text x='{width / 2:g}' y='16' text-anchor='middle' font-size='13'>{_esc(title)}</text>"]
    for n in range(0, top + 1, step):
        parts.append(f"<line x1='{left}' x2='{width - right}' y1='{y(n):.1f}' y2='{y(n):.1f}' stroke='#ddd'/>"
                     f"<text x='{left - 6}' y='{y(n) + 4:.1f}' text-anchor='end'>{n}</text>")
    for x in sorted(counts):
        n, grey = counts[x], not_attempted if x == 0.0 else 0
        bx, label = at(x) - bar_w / 2, f"{x:g}"
        tip = f"{n} student{'s' if n != 1 else ''} scored {label}" + (f" ({grey} did not attempt it)" if grey else "")
        parts.append(f"<rect class='bar' data-score='{label}' data-students='{n}' x='{bx:.1f}' y='{y(n):.1f}' "
                     f"width='{bar_w:.1f}' height='{plot_h - (y(n) - above):.1f}' fill='#4c72b0'>"
                     f"<title>{tip}</title></rect>")
        if grey:
            parts.append(f"<rect class='not-attempted' data-students='{grey}' x='{bx:.1f}' y='{y(grey):.1f}' "
                         f"width='{bar_w:.1f}' height='{plot_h - (y(grey) - above):.1f}' fill='#aaa'>"
                         f"<title>{grey} did not attempt it</title></rect>")
    axis = above + plot_h
    for t in _ticks(top_score):
        parts.append(f"<line class='tick' data-score='{t:g}' x1='{at(t):.1f}' x2='{at(t):.1f}' y1='{axis}' "
                     f"y2='{axis + 4}' stroke='#333'/>"
                     f"<text x='{at(t):.1f}' y='{axis + 16}' text-anchor='middle'>{t:g}</text>")
    parts += [f"<line x1='{left}' x2='{width - right}' y1='{axis}' y2='{axis}' stroke='#333'/>",
              f"<text x='{left + plot_w / 2:g}' y='{height - 22}' text-anchor='middle'>score (of {max_score:g})</text>",
              f"<text transform='translate(12 {above + plot_h / 2:g}) rotate(-90)' text-anchor='middle'>students</text>"]
    if not_attempted:
        parts.append(f"<rect x='{left}' y='{height - 12}' width='10' height='10' fill='#aaa'/>"
                     f"<text x='{left + 14}' y='{height - 3}'>not attempted (every solution cell as released)</text>")
    parts.append("</svg>")
    return "".join(parts)


def _esc(text: object) -> str:
    return html.escape(one_line(text), quote=True)


def render_html(assignment: str, rows: Sequence[Row], more: Sequence[str] = ()) -> str:
    """The whole page as one self-contained HTML string: a heading, each of `SECTIONS` in order, then `more`:
    sections made elsewhere from what the rows do not hold (the score changes), their learner text escaped there."""
    students = {r.student for r in rows}
    notebooks = {r.notebook for r in rows}
    parts = [f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>Class report: {_esc(assignment)}</title>",
             "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}th{background:#eee}"
             "figure{display:inline-block;margin:0 1em 1em 0}</style></head><body>",
             f"<h1>Class report: {_esc(assignment)}</h1>",
             f"<p>{len(students)} students, {len(notebooks)} notebooks.</p>"]
    parts += [section(rows) for section in SECTIONS]
    parts += [text for text in more if text]
    parts.append("</body></html>\n")
    return inert_page("\n".join(parts))


def _by_notebook(rows: Sequence[Row]) -> dict[str, list[Row]]:
    by_notebook: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_notebook[r.notebook].append(r)
    return by_notebook


def scores_section(rows: Sequence[Row]) -> str:
    """A score histogram per notebook, the students who did not attempt it grey at 0."""
    by_notebook = _by_notebook(rows)
    parts = ["<h2>Scores per notebook</h2><div id='histograms'>"]
    for name in sorted(by_notebook):
        items = by_notebook[name]
        top = max((r.max_score for r in items), default=0.0)
        mean = sum(r.score for r in items) / len(items)
        idle = [r for r in items if not r.attempted]
        svg = histogram_svg([r.score for r in items if r.attempted], top, name, len(idle))
        parts.append(f"<figure class='histogram' data-notebook='{_esc(name)}'>{svg}<figcaption>{_esc(name)}: "
                     f"mean {mean:.2f} of {top:g}" + (f"; {len(idle)} not attempted" if idle else "")
                     + "</figcaption></figure>")
    parts.append("</div>")
    return "\n".join(parts)


def misconceptions_section(rows: Sequence[Row]) -> str:
    """The most common misconceptions behind failed checks, with counts, where, what to re-teach and who."""
    parts = ["<h2>Most common misconceptions</h2>"]
    common = common_misconceptions(rows)
    if not common:
        parts.append("<p id='no-misconceptions'>No failed check pointed at a known misconception.</p>")
    else:
        parts.append("<table id='misconceptions'><thead><tr><th>#</th><th>students</th><th>misconception</th>"
                     "<th>where</th><th>what to re-teach</th><th>who</th></tr></thead><tbody>")
        for i, m in enumerate(common, 1):
            parts.append(f"<tr><td>{i}</td><td>{len(m.students)}</td><td><code>{_esc(m.id)}</code></td>"
                         f"<td>{_esc(m.method)}<br><small>{_esc(', '.join(m.notebooks))}</small></td>"
                         f"<td>{_esc(m.sentence)}</td><td>{_esc(', '.join(m.students))}</td></tr>")
        parts.append("</tbody></table>")
    return "\n".join(parts)


def students_section(rows: Sequence[Row]) -> str:
    """Per student: each notebook's score (or "not attempted"), the total, and how late the work came in."""
    return "\n".join(_submissions_table(sorted({r.student for r in rows}), _by_notebook(rows)))


def _submissions_table(students: list[str], by_notebook: dict[str, list[Row]]) -> list[str]:
    """Per student: each notebook's score (or "not attempted"), the total, and how late the work came in."""
    names = sorted(by_notebook)
    cell = {(r.student, r.notebook): r for rows in by_notebook.values() for r in rows}
    parts = ["<h2>Students</h2><table id='students'><thead><tr><th>student</th>"
             + "".join(f"<th>{_esc(n)}</th>" for n in names) + "<th>total</th><th>late</th></tr></thead><tbody>"]
    for s in students:
        mine = [cell[(s, n)] for n in names if (s, n) in cell]
        late = next((r.late for r in mine if r.late), "")
        tds = []
        for n in names:
            r = cell.get((s, n))
            text = "" if r is None else (f"{r.score:g} / {r.max_score:g}" if r.attempted else "not attempted")
            tds.append(f"<td class='{'' if r is None or r.attempted else 'not-attempted'}'>{_esc(text)}</td>")
        total, most = sum(r.score for r in mine), sum(r.max_score for r in mine)
        parts.append(f"<tr><td>{_esc(s)}</td>{''.join(tds)}<td>{total:g} / {most:g}</td>"
                     f"<td class='late'>{_esc(f'late by {late}' if late else 'on time')}</td></tr>")
    parts.append("</tbody></table>")
    return parts


Section = Callable[[Sequence[Row]], str]  # the rows -> the section's HTML (every learner text escaped)
SECTIONS: list[Section] = [scores_section, misconceptions_section, students_section]


def page_path(course_root: Path, assignment: str) -> Path:
    """Where the class report of an assignment is: reports/<assignment>.html in the course."""
    return Path(course_root) / REPORT_DIR / f"{assignment}.html"


def write(path: Path, assignment: str, rows: Sequence[Row], more: Sequence[str] = ()) -> None:
    """Write the page whole or not at all (a run that dies leaves the previous one), from text every writer can
    encode."""
    atomic_write(path, valid_text(render_html(assignment, rows, more)).encode("utf-8"))
