"""The batch's summary: the table printed at the end of `grade`, and the same lines as a CSV (`--csv`)."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from ...lines import one_line
from ..store.files import atomic_write
from ..types import Row, Status
from .text import csv_text


def table(rows: list[Row]) -> str:
    """The table printed at the end: student, notebook, score, max, status and flags or reason."""
    head = ("student", "notebook", "score", "max", "status / flags")
    lines = [(one_line(r.student), one_line(r.notebook), f"{r.score:g}", f"{r.max_score:g}",
              one_line("; ".join([r.status.value, *([r.reason] if r.reason else []),
                                  *([f"FLAGGED: {' | '.join(r.flags)}"] if r.flags else [])])))
             for r in rows]
    widths = [max(len(x[i]) for x in [head, *lines]) for i in range(4)]
    fmt = "  ".join(f"{{:{'>' if i in (2, 3) else '<'}{w}}}" for i, w in enumerate(widths)) + "  {}"
    out = [fmt.format(*head), *(fmt.format(*ln) for ln in lines)]
    graded = sum(r.status is Status.GRADED for r in rows)
    skipped = sum(r.status is Status.SKIPPED for r in rows)
    flagged = sum(bool(r.flags) for r in rows)
    out.append(f"{len(rows)} notebooks: {graded} graded, {skipped} unchanged (skipped), {len(rows) - graded - skipped} not gradable"
               + (f"; {flagged} FLAGGED for review" if flagged else ""))
    return "\n".join(out)


def write_csv(rows: list[Row], path: str, assignment: str, keep_other_students: bool = False) -> None:
    """One line per student and notebook; with keep_other_students (a --student run), other students' lines stay."""
    head = ["student_id", "assignment", "notebook", "score", "max_score", "status", "flags", "reason"]
    lines = [[r.student, assignment, r.notebook, f"{r.score:g}", f"{r.max_score:g}", r.status.value, "; ".join(r.flags), r.reason]
             for r in rows]
    if keep_other_students and os.path.isfile(path):
        with open(path, newline="", encoding="utf-8", errors="replace") as f:
            old = list(csv.reader(f))
        ours = {csv_text([r.student])[0] for r in rows}
        if old and old[0] == head:
            lines += [ln for ln in old[1:] if len(ln) == len(head) and ln[0] not in ours]
            lines.sort(key=lambda ln: (ln[0], ln[2]))
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(head)
    w.writerows(csv_text(ln) for ln in lines)
    atomic_write(Path(path), buf.getvalue().encode("utf-8"))
