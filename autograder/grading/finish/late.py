"""Late submissions, exactly as `nbgrader autograde` records them: timestamp, due date + extension, penalty plugin.

nbgrader reads `timestamp.txt` of each submission into the gradebook's submission row, and its
`AssignLatePenalties` preprocessor asks the configured plugin (`AssignLatePenalties.plugin_class`, by default
`LateSubmissionPlugin` with its `penalty_method`) for each submitted notebook's penalty, clamped to [0, score].
Here the same classes are built from the same config, and applied after grading to every notebook of the batch, the
skipped ones included (so that a due date, an extension or a plugin set after grading takes effect on re-run), many
students a transaction through `store.gradebook.GradebookWriter` (two queries and a few bulk UPDATEs, not nbgrader's ORM one
notebook at a time): a student whose step fails says why in that student's rows, and the others go on. Filing is
idempotent (each value is set from the inputs, never adjusted), so a run killed part-way and run again leaves the
gradebook a run never killed leaves.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Protocol

from nbgrader.coursedir import CourseDirectory

from ..discover.submission import Submission, SubmissionTime, submission_time
from ..store.gradebook import Filed, GradebookWriter
from ..types import Code


class _Row(Protocol):
    student: str
    notebook: str
    late: str
    flags: list[str]

    def add(self, code: Code, text: str) -> None: ...


def _late_by(seconds: float) -> str:
    """'2 d 3 h' / '5 h 12 min' / '40 s': how late, for the summary."""
    d, rest = divmod(int(seconds), 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    parts = [f"{d} d"] * bool(d) + [f"{h} h"] * bool(h) + [f"{m} min"] * bool(m and not d)
    return " ".join(parts) or f"{s} s"


@dataclass
class Filing:
    """What the late-penalty step files for one student: the submission time, each notebook's penalty and Flagged?
    box, and the notes for the student's rows (made once the transaction holding them is committed)."""

    student: str
    times: dict[str, datetime.datetime] = field(default_factory=dict)  # submission id -> time
    penalties: dict[str, float | None] = field(default_factory=dict)  # submitted notebook id -> penalty
    flagged: list[str] = field(default_factory=list)  # submitted notebook ids
    notes: list[tuple[_Row, str, str]] = field(default_factory=list)  # (row, how late, reason)

    def note(self) -> None:
        """Tell the rows how late, and the penalty."""
        for row, late, text in self.notes:
            row.late = late
            row.add(Code.LATE, text)


class LatePenalties:
    """nbgrader's late-submission step, with the plugin the course's config names, for many students at once."""

    def __init__(self, coursedir: CourseDirectory) -> None:
        self.coursedir = coursedir
        self.penalties: Any = None  # made at the first late notebook: nbgrader.preprocessors loads nbconvert (~0.6 s)

    def apply(self, bulk: GradebookWriter, work: list[tuple[Submission, list[_Row]]]) -> tuple[list[Filing], dict[str, Exception]]:
        """Each student's submission time and each of their notebooks' late penalty, written as nbgrader's
        `AssignLatePenalties` would leave them, as a few bulk statements in the open transaction (not committed);
        every row is flagged when its time cannot be read. Returns what was filed (`Filing.note` it once committed)
        and the students whose step failed (nothing of theirs is filed)."""
        times: dict[str, SubmissionTime] = {}
        for submission, rows in work:
            if not submission.folder.is_dir() and not submission.problem:
                continue  # nbgrader autograde has nothing to grade, so it records nothing either
            time = times[rows[0].student] = submission_time(submission)
            for row in rows:
                if time.problem and time.problem not in row.flags:
                    row.flags.append(time.problem)
        # as Autograde.init_assignment: the submission row's time in step with timestamp.txt (made if need be)
        filed = bulk.submissions_as_filed(list(times), {s: t.when for s, t in times.items() if t.when})
        filings, failed = [], {}
        for submission, rows in work:
            student = rows[0].student
            if student not in times or student not in filed:
                continue
            try:
                filings.append(self._file(filed[student], times[student], bulk.duedate, submission, rows))
            except Exception as exc:  # the course's plugin, say: that student says why, the others are filed
                failed[student] = exc
        bulk.file_late({k: v for f in filings for k, v in f.times.items()},
                       {k: v for f in filings for k, v in f.penalties.items()},
                       [k for f in filings for k in f.flagged])
        return filings, failed

    def _file(self, filed: Filed, time: SubmissionTime, duedate: datetime.datetime | None, submission: Submission,
              rows: list[_Row]) -> Filing:
        filing = Filing(rows[0].student)
        timestamp = filed.timestamp
        if time.when:
            timestamp = filing.times[filed.id] = time.when
        # SubmittedAssignment.total_seconds_late, on the time just filed
        if duedate is not None and filed.extension is not None:
            duedate = duedate + filed.extension
        late = 0.0 if timestamp is None or duedate is None else max(0.0, (timestamp - duedate).total_seconds())
        for row in rows:
            rel = f"{row.notebook}.ipynb"
            if row.notebook not in filed.notebooks or (rel not in submission.files and rel not in submission.refused):
                continue  # nbgrader runs no preprocessor, AssignLatePenalties included, on a notebook not submitted
            sn_id, score = filed.notebooks[row.notebook]
            if time.problem:
                filing.flagged.append(sn_id)  # the formgrader's Flagged? box
            penalty = None
            if late > 0:
                if self.penalties is None:
                    from nbgrader.preprocessors import AssignLatePenalties

                    penalties = AssignLatePenalties(config=self.coursedir.config)  # the config nbgrader's own run reads
                    penalties.init_plugin()
                    self.penalties = penalties
                penalty = self.penalties.plugin_inst.late_submission_penalty(row.student, score, late)
                if penalty is not None:
                    # nbgrader's own clamp to [0, score], so a plugin's odd value lands exactly where nbgrader puts it
                    penalty = self.penalties._check_late_penalty(SimpleNamespace(score=score), penalty)
                # how late is named whatever the penalty method: with `none` the instructor still needs to know
                what = "no penalty" if penalty is None else f"penalty {penalty:g}"
                filing.notes.append((row, _late_by(late), f"late by {_late_by(late)}: {what}"))
            filing.penalties[sn_id] = penalty
        return filing
