"""The class report's similarity section: what `python -m autograder similarity` found at its last run, read from
the CSV it wrote beside the class report (reports/<assignment>-similarity.csv), with a link to its page.

It is evidence to read, never a verdict, and the section says so. The CSV is read bounded (its first bytes and
lines); student names in it are learner-derived and escaped here. No CSV (the command was never run): no section.
"""

from __future__ import annotations

import csv
import html
import io
from pathlib import Path

from ...lines import one_line
from ...settings import SIMILARITY_CSV_BYTES, SIMILARITY_SHOWN
from ..store.files import REPORT_DIR


def csv_path(root: Path, assignment: str) -> Path:
    """Where `python -m autograder similarity` writes its CSV (similarity/command.py's `write`)."""
    return Path(root) / REPORT_DIR / f"{assignment}-similarity.csv"


def _esc(text: object) -> str:
    return html.escape(one_line(text), quote=True)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def section(root: Path, assignment: str) -> str:
    """The section's HTML: how many pairs stood out at the similarity command's last run and the highest of them."""
    path = csv_path(root, assignment)
    try:
        with open(path, "rb") as f:
            data = f.read(SIMILARITY_CSV_BYTES + 1)
    except OSError:
        return ""
    text = data[:SIMILARITY_CSV_BYTES].decode("utf-8", "replace")
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or rows[0][:3] != ["z", "threshold", "score"]:
        return ""
    standing = []
    for row in rows[1:]:
        z, threshold = (_number(row[0]), _number(row[1])) if len(row) >= 7 else (None, None)
        if z is not None and threshold is not None and z >= threshold:
            standing.append(row)
    page = f"{assignment}-similarity.html"
    parts = ["<h2>Similar work (evidence to read, not a verdict)</h2>",
             f"<p>At the last run of <code>python -m autograder similarity {_esc(assignment)}</code>, "
             f"{len(standing)} pair{'s' * (len(standing) != 1)} of work stood out from the class's own baseline"
             + (" (the list is cut short: see the page)" if len(data) > SIMILARITY_CSV_BYTES else "")
             + f". The matched code side by side is on <a href='{html.escape(page, quote=True)}'>its page</a>.</p>"]
    if standing:
        parts.append("<table id='similarity'><thead><tr><th>z</th><th>student</th><th>with</th><th>public engine</th>"
                     "<th>exercises</th></tr></thead><tbody>")
        for z, _, _, student, other, public, exercises in (row[:7] for row in standing[:SIMILARITY_SHOWN]):
            parts.append(f"<tr><td>{_esc(z)}</td><td>{_esc(student)}</td><td>{_esc(other)}</td><td>{_esc(public)}</td>"
                         f"<td>{_esc(exercises)}</td></tr>")
        parts.append("</tbody></table>")
    return "\n".join(parts)
