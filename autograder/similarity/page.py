"""The similarity page: the ranking, the groups, and each standing-out pair's matched regions side by side.

Inert by construction: one self-contained HTML file whose head starts with the grader's Content-Security-Policy
(`page_policy.inert_page`, as every page the grader writes: no script, no request, inline style only), and every
string from a submission (student ids, code) escaped with `html.escape` after its invalid characters are replaced.
It says on its face that it shows evidence, not a verdict.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..grading.outputs.text import valid_text
from ..grading.pages.page_policy import inert_page

_TAG = re.compile("</?mark>")
CONTEXT = 2  # lines shown around a match in a long text
LONG = 60  # a text with more lines than this shows only the lines around its matches
STYLE = ("body{font-family:sans-serif;max-width:1200px;margin:2em auto}table{border-collapse:collapse}"
         "td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}th{background:#eee}"
         ".flag{font-weight:bold}.side{display:grid;grid-template-columns:1fr 1fr;gap:1em}"
         "pre{background:#f8f8f8;padding:.5em;overflow-x:auto;white-space:pre;font-size:90%}"
         "mark{background:#ffd54f}.verdict{border:2px solid #c62828;padding:.5em 1em}")


def esc(text: object) -> str:
    """Any text as HTML text: invalid characters replaced, then escaped (quotes too)."""
    return html.escape(valid_text(str(text)), quote=True)


@dataclass(frozen=True)
class Side:
    """One side of a matched region: a title and its text with the matched character ranges."""

    title: str
    text: str
    slices: np.ndarray  # 2 x M: starts, ends (characters of `text`)


@dataclass(frozen=True)
class Evidence:
    """One exercise of a pair, both sides."""

    exercise: str
    left: Side
    right: Side


def highlighted(text: str, slices: np.ndarray) -> str:
    """`text` escaped with each slice in <mark>; a long text only around its marks."""
    text = valid_text(text)
    ranges = sorted((int(a), int(b)) for a, b in zip(*slices)) if len(slices) and len(slices[0]) else []
    out, at = [], 0
    for start, end in ranges:
        start = max(start, at)
        if end <= start:
            continue
        out.append(html.escape(text[at:start]) + "<mark>" + html.escape(text[start:end]) + "</mark>")
        at = end
    out.append(html.escape(text[at:]))
    body = "".join(out)
    lines = body.split("\n")
    if len(lines) <= LONG:
        return body
    opened, state = [], False  # whether a mark is open where each line starts (a match may span lines)
    for ln in lines:
        opened.append(state)
        for tag in _TAG.findall(ln):
            state = tag == "<mark>"
    marked = {i for i, ln in enumerate(lines) if opened[i] or "<mark>" in ln}
    keep = sorted({j for i in marked for j in range(i - CONTEXT, i + CONTEXT + 1) if 0 <= j < len(lines)})
    shown, last = [], -1
    for j in keep:
        if j != last + 1:
            shown.append("…")
        ends_open = opened[j + 1] if j + 1 < len(lines) else False
        shown.append(("<mark>" if opened[j] else "") + lines[j] + ("</mark>" if ends_open else ""))
        last = j
    if last != len(lines) - 1:
        shown.append("…")
    return "\n".join(shown)


def render(assignment: str, summary: Sequence[tuple[str, str]], notes: Sequence[str], table: Sequence[dict],
           groups: Sequence[Sequence[str]], evidence: Sequence[tuple[dict, Sequence[Evidence]]]) -> str:
    """The whole page. `summary`: (label, value) lines; `table`: rows with a, b, z, threshold, score, exercises, flag."""
    parts = ["<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>",
             f"<title>Similarity: {esc(assignment)}</title><style>{STYLE}</style></head><body>",
             f"<h1>Similarity of solution cells: {esc(assignment)}</h1>",
             "<p class='verdict'><strong>Evidence, not a verdict.</strong> A high score says that two submissions share "
             "code that is rare in this class, after the handed-out code, the reference solution and the workbook's demo "
             "code are taken out. It cannot say who wrote it, whether it was shared with permission, or whether two "
             "people met the same idea. Short exercises, where every correct answer looks alike, give little evidence "
             "either way. Read the code below and talk to the students before drawing any conclusion.</p>",
             "<table id='summary'>" + "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in summary) + "</table>"]
    if notes:
        parts.append("<h2>Notes</h2><ul id='notes'>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>")
    parts.append("<h2>Groups</h2><p>Students linked by pairs that stand out (connected components).</p>")
    if groups:
        parts.append("<ol id='groups'>" + "".join(f"<li>{esc(', '.join(g))}</li>" for g in groups) + "</ol>")
    else:
        parts.append("<p id='no-groups'>No group.</p>")
    parts.append("<h2>Ranking</h2><p>By z in units of its threshold; standing out in bold.</p><table id='ranking'><thead><tr>"
                 "<th>#</th><th>z</th><th>threshold</th><th>score</th><th>student</th><th>with</th>"
                 "<th>exercises with shared rare code</th></tr></thead><tbody>")
    for i, row in enumerate(table, 1):
        cls = " class='flag'" if row["flag"] else ""
        parts.append(f"<tr{cls}><td>{i}</td><td>{row['z']:.1f}</td><td>{row['threshold']:g}</td><td>{row['score']:.1f}</td><td>{esc(row['a'])}</td>"
                     f"<td>{esc(row['b'])}</td><td>{esc(', '.join(row['exercises']))}</td></tr>")
    parts.append("</tbody></table>")
    if not table:
        parts.append("<p id='no-pairs'>No two submissions share any code beyond the handout.</p>")
    parts.append("<h2>Side by side</h2>")
    if not evidence:
        parts.append("<p id='no-evidence'>No pair stands out.</p>")
    for n, (row, items) in enumerate(evidence, 1):
        parts.append(f"<section class='pair' id='pair-{n}'><h3>{esc(row['a'])} ~ {esc(row['b'])}: z {row['z']:.1f}</h3>")
        for item in items:
            parts.append(f"<h4>{esc(item.exercise)}</h4><div class='side'>")
            for side in (item.left, item.right):
                parts.append(f"<div><div>{esc(side.title)}</div><pre>{highlighted(side.text, side.slices)}</pre></div>")
            parts.append("</div>")
        parts.append("</section>")
    parts.append("</body></html>\n")
    return inert_page("\n".join(parts))
