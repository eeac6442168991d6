"""The score-change report: after a regrade, every grade cell whose points moved, per student, with the check whose
verdict changed and what it said, as a table printed at the end of `grade`, a CSV, and a section of the class report.

A regrade round is every notebook regraded while something its grade depended on had moved (store/resume.py); a
regraded notebook's record keeps its grade cells as they were when the round began, so a run killed part-way and run
again reports the same changes as one run. The report shows the last round until the next one begins. The verdict
sentences come from learner code (its numbers, names, exceptions): each is one line, bounded, and escaped here.
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ...checks.base import PASSED
from ...lines import one_line
from ...settings import VERDICT_CHARS
from ..store.files import atomic_write
from ..types import CellResult, Record, Verdict
from .text import csv_text, valid_text


@dataclass(frozen=True)
class Change:
    """One grade cell whose points moved in a regrade."""

    student: str
    notebook: str
    cell: str
    old: float | None
    new: float | None
    max_points: float
    check: str  # the check whose verdict changed ("" when no verdict says: the cell was run as code, or stopped)
    sentence: str  # what that check said now ("passes"), or when it no longer ran, before


@dataclass
class ScoreChanges:
    """The last regrade round's changes, and whether this run stored or reported any of it (the table is shown)."""

    round: int = 0  # 0: no regrade yet
    changes: list[Change] = field(default_factory=list)
    notebooks: int = 0  # notebooks the round regraded
    fresh: bool = False  # this run regraded some of the round, or finished the report of a run killed part-way


def _bounded(text: str) -> str:
    text = one_line(text)
    return text if len(text) <= VERDICT_CHARS else text[: VERDICT_CHARS - 1] + "…"


def changed_verdict(before: CellResult, after: CellResult) -> Verdict | None:
    """The first check whose verdict differs (it runs now and did not, or its status changed; else one that no
    longer runs), None when every check ran the same way."""
    old = {v.check: v for v in before.verdicts}
    for v in after.verdicts:
        if v.check not in old or old[v.check].status != v.status:
            return v
    now = {v.check for v in after.verdicts}
    return next((Verdict(v.check, "not run", v.sentence) for v in before.verdicts if v.check not in now), None)


def of_round(records: Mapping[str, Record], assignment: str, fresh: bool = False) -> ScoreChanges:
    """The changes of the assignment's last regrade round, from the journal's records (key: assignment/student/nb)."""
    prefix = f"{assignment}/"
    mine = {k[len(prefix):]: r for k, r in records.items() if k.startswith(prefix)}
    last = max((r.round for r in mine.values() if r.before is not None), default=0)
    out = ScoreChanges(last, fresh=fresh)
    if not last:
        return out
    for rest, record in sorted(mine.items()):
        if record.round != last or record.before is None:
            continue
        out.notebooks += 1
        student, _, notebook = rest.partition("/")
        for name in sorted(record.before.keys() | record.cells.keys()):
            before = record.before.get(name, CellResult(None, 0.0))
            after = record.cells.get(name, CellResult(None, before.max_points))
            if before.points == after.points:
                continue
            verdict = changed_verdict(before, after)
            fallback = record.reasons[0].text if record.reasons else ""
            said = (verdict.sentence or ("passes" if verdict.status == PASSED else "")) if verdict else fallback
            out.changes.append(Change(student, notebook, name, before.points, after.points, after.max_points,
                                      verdict.check if verdict else "", _bounded(said)))
    return out


def _points(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def table(report: ScoreChanges) -> str:
    """The table printed at the end of a run that regraded: student, notebook, cell, old -> new, check, sentence."""
    head = f"score changes (regrade {report.round}, {report.notebooks} notebooks regraded): "
    if not report.changes:
        return head + "no grade moved"
    lines = [(one_line(c.student), one_line(c.notebook), one_line(c.cell),
              f"{_points(c.old)} -> {_points(c.new)} of {c.max_points:g}", one_line(c.check), c.sentence)
             for c in report.changes]
    cols = ("student", "notebook", "grade cell", "points", "check", "what it said")
    widths = [max(len(x[i]) for x in [cols, *lines]) for i in range(5)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths) + "  {}"
    return "\n".join([head + f"{len(report.changes)} grade cells moved", fmt.format(*cols),
                      *(fmt.format(*ln) for ln in lines)])


def csv_path(report_page: Path, assignment: str) -> Path:
    """Where the CSV is: next to the class report, as <assignment>-score-changes.csv."""
    return report_page.with_name(f"{assignment}-score-changes.csv")


def write_csv(path: Path, report: ScoreChanges) -> None:
    """One line per grade cell that moved, whole or not at all."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["student_id", "notebook", "grade_cell", "old_points", "new_points", "max_points", "check", "sentence",
                "regrade"])
    for c in report.changes:
        w.writerow(csv_text([c.student, c.notebook, c.cell, _points(c.old), _points(c.new), f"{c.max_points:g}",
                             c.check, c.sentence, str(report.round)]))
    atomic_write(path, valid_text(buf.getvalue()).encode("utf-8"))


def _esc(text: object) -> str:
    return html.escape(one_line(text), quote=True)


def section(report: ScoreChanges) -> str:
    """The class report's section: the last regrade's moved grade cells (every learner text escaped)."""
    if not report.round:
        return ""
    parts = [f"<h2>Score changes of the last regrade</h2><p>Regrade {report.round}: {report.notebooks} notebooks "
             f"regraded, {len(report.changes)} grade cells moved.</p>"]
    if report.changes:
        parts.append("<table id='score-changes'><thead><tr><th>student</th><th>notebook</th><th>grade cell</th>"
                     "<th>points</th><th>check</th><th>what it said</th></tr></thead><tbody>")
        for c in report.changes:
            parts.append(f"<tr><td>{_esc(c.student)}</td><td>{_esc(c.notebook)}</td><td>{_esc(c.cell)}</td>"
                         f"<td>{_esc(_points(c.old))} &rarr; {_esc(_points(c.new))} of {c.max_points:g}</td>"
                         f"<td><code>{_esc(c.check)}</code></td><td>{_esc(c.sentence)}</td></tr>")
        parts.append("</tbody></table>")
    return "\n".join(parts)
