"""Every output of batch grading, as one list you add to (`OUTPUTS`), in the order `grade` makes them.

An output is shown (text printed at the end of `grade`), written (a file, whole or not at all, at the end of `grade`,
after every grade is stored) or made by another command (an nbgrader exporter that reads the gradebook). A new output
is one more `Output` here and the module that makes it; the docs' list of outputs is read from this one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..types import GradingError, Row
from . import class_report, misconceptions, score_changes, similarity_section, summary


@dataclass
class Outcome:
    """What a batch ends with, for its outputs: the course folder, the assignment, every notebook's row, and what the
    command line asked for (`--csv`, `--student`)."""

    root: Path
    assignment: str
    rows: list[Row]
    csv_path: str | None = None  # --csv FILE; "" for a bare --csv (the course folder); None without it
    students: list[str] | None = None  # --student: the other students' lines of the summary CSV stay
    written: list[Path] = field(default_factory=list)  # filled by `write_outputs`
    changes: score_changes.ScoreChanges = field(default_factory=score_changes.ScoreChanges)  # the last regrade's


@dataclass(frozen=True)
class Output:
    """One output: its name (in errors and the docs), what it holds, and how it is made: `show` (the text printed at
    the end of `grade`), `path` and `write` (a file `grade` writes: None from `path` when this run was not asked for
    it), or `command` (made by another command)."""

    name: str
    holds: str
    show: Callable[[Outcome], str] | None = None
    path: Callable[[Outcome], Path | None] | None = None
    write: Callable[[Outcome, Path], None] | None = None
    command: str = ""


def _summary_csv(outcome: Outcome) -> Path | None:
    if outcome.csv_path is None:
        return None
    return Path(outcome.csv_path or outcome.root / f"{outcome.assignment}-summary.csv")  # bare --csv: the course folder


OUTPUTS: list[Output] = [
    Output("summary table", "each notebook's score, status and flags or reason, then the counts",
           show=lambda o: summary.table(o.rows)),
    Output("summary CSV", "the summary table's lines, one per student and notebook (with --csv)",
           path=_summary_csv,
           write=lambda o, path: summary.write_csv(o.rows, str(path), o.assignment, keep_other_students=bool(o.students))),
    Output("class report", "a page of score histograms, the most common misconceptions, the students' scores, the "
           "last regrade's score changes and what the similarity command found at its last run",
           path=lambda o: class_report.page_path(o.root, o.assignment),
           write=lambda o, path: class_report.write(path, o.assignment, o.rows, [
               score_changes.section(o.changes), similarity_section.section(o.root, o.assignment)])),
    Output("misconceptions CSV", "the most common misconceptions with the students who hit them",
           path=lambda o: class_report.page_path(o.root, o.assignment).with_name(f"{o.assignment}-misconceptions.csv"),
           write=lambda o, path: misconceptions.write(path, o.rows)),
    Output("score-change table", "after a regrade: each grade cell whose points moved, old -> new, the check whose "
           "verdict changed and what it said (shown by the run that regrades)",
           show=lambda o: score_changes.table(o.changes) if o.changes.fresh else ""),
    Output("score-change CSV", "the last regrade's score-change table, one line per grade cell that moved",
           path=lambda o: score_changes.csv_path(class_report.page_path(o.root, o.assignment), o.assignment)
           if o.changes.round else None,
           write=lambda o, path: score_changes.write_csv(path, o.changes)),
    Output("Canvas gradebook CSV", "the gradebook's scores as Canvas imports them",
           command="nbgrader export --exporter=autograder.grading.outputs.lms.CanvasExportPlugin --to canvas-grades.csv"),
]


def shown(outcome: Outcome) -> list[str]:
    """The texts printed at the end of `grade`, in order."""
    texts = [output.show(outcome) for output in OUTPUTS if output.show is not None]
    return [text for text in texts if text]  # an output with nothing to say this run prints nothing


def write_outputs(outcome: Outcome) -> None:
    """Write every file output this run was asked for, each whole or not at all (a run that dies leaves the previous
    file); GradingError naming those that could not be written (the grades are stored either way)."""
    errors = []
    for output in OUTPUTS:
        path = output.path(outcome) if output.path is not None else None
        if path is None or output.write is None:
            continue
        try:
            output.write(outcome, path)
            outcome.written.append(path.resolve())
        except OSError as exc:
            errors.append(f"the {output.name} {path} ({exc.strerror or exc})")
    if errors:
        raise GradingError(f"every grade is stored, but could not write {' or '.join(errors)}")
