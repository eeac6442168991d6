"""nbgrader plugins for an LMS (Canvas): its gradebook CSV as an export, its submissions download for zip_collect.

    nbgrader export --exporter=autograder.grading.outputs.lms.CanvasExportPlugin --to canvas-grades.csv
    nbgrader zip_collect workbook --collector=autograder.grading.outputs.lms.CanvasCollectorPlugin

Both match students through the roster: `nbgrader db student import roster.csv` with an `lms_user_id` column
holding each student's Canvas user id.
"""

from __future__ import annotations

import csv
from typing import Any

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import ExportPlugin
from nbgrader.plugins.zipcollect import FileNameCollectorPlugin
from traitlets import Dict, Unicode

from ...lines import one_line

# Canvas's gradebook CSV, as its Instructor Guide "How do I import grades in the Gradebook?"
# (community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/ta-p/807) describes it and
# its own "Export" writes it: the identity columns Student ("Last, First"), ID (the Canvas user id), SIS User ID,
# SIS Login ID and Section, then one column per assignment, then a "Points Possible" row under the header. Canvas
# matches a student by ID (else SIS User ID / SIS Login ID) and an assignment column by its "(canvas id)" suffix;
# a column without one becomes a new assignment.
CANVAS_IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
POINTS_POSSIBLE = "Points Possible"


class CanvasExportPlugin(ExportPlugin):
    """Grades as a Canvas gradebook CSV: one row per student, one column per assignment, late penalties deducted."""

    assignment_columns = Dict(
        {}, help="Column header per nbgrader assignment, e.g. {'workbook': 'Autograd workbook (12345)'} to match the "
                 "Canvas assignment 12345; by default the assignment's name (Canvas then creates the assignment)."
    ).tag(config=True)
    section = Unicode("", help="The Section column's value (Canvas ignores it on import).").tag(config=True)

    def export(self, gradebook: Gradebook) -> None:
        """Write the CSV to --to (default canvas-grades.csv)."""
        dest = self.to or "canvas-grades.csv"
        assignments = [a for a in gradebook.assignments if not self.assignment or a.name in self.assignment]
        students = [s for s in gradebook.students if not self.student or s.id in self.student]
        self.log.info("Exporting %d students x %d assignments to %s (Canvas gradebook CSV)", len(students), len(assignments), dest)
        with open(dest, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(CANVAS_IDENTITY + [self.assignment_columns.get(a.name, a.name) for a in assignments])
            w.writerow([POINTS_POSSIBLE] + [""] * (len(CANVAS_IDENTITY) - 1) + [_number(a.max_score) for a in assignments])
            for s in students:
                name = ", ".join(x for x in (s.last_name, s.first_name) if x) or s.id
                w.writerow([one_line(x) for x in (name, s.lms_user_id or "", s.id, s.email or "", self.section)]
                           + [_number(_final_score(gradebook, a.name, s.id)) for a in assignments])


def _final_score(gradebook: Gradebook, assignment: str, student: str) -> float:
    """The score `nbgrader export` reports: raw score minus late penalty, at least 0; 0 when nothing was submitted."""
    try:
        submission = gradebook.find_submission(assignment, student)
    except MissingEntry:
        return 0.0
    return max(0.0, submission.score - submission.late_submission_penalty)


def _number(x: float) -> str:
    return f"{x:g}"


class CanvasCollectorPlugin(FileNameCollectorPlugin):
    """Reads a Canvas "Download Submissions" archive: `lastfirst[_LATE]_<user id>_<submission id>_<file>.ipynb`.

    The Canvas user id is looked up in the roster (`lms_user_id`) to find the nbgrader student id; Canvas's "-1",
    "-2" suffix on a resubmitted file's name is dropped. A file of a student not on the roster is skipped (logged).
    """

    named_regexp = Unicode(
        r"(?:.*/)?(?P<name>[^_/]+)_(?:(?P<late>LATE)_)?(?P<lms_user_id>\d+)_(?P<submission_id>\d+)_(?P<file_id>[^/]+?)"
        r"(?:-\d+)?(?P<ext>\.ipynb)$",
        help="Canvas's file name pattern; it must capture lms_user_id and file_id.",
    ).tag(config=True)

    def collect(self, submitted_file: str) -> dict[str, Any] | None:
        """{'student_id', 'file_id'} for a notebook in the archive, None to skip the file."""
        info = super().collect(submitted_file)
        if not info:
            return None
        student = self._roster().get(info["lms_user_id"])
        if student is None:
            self.log.warning("Skipping %s: Canvas user %s is not on the roster (nbgrader db student import)",
                             one_line(submitted_file), one_line(info["lms_user_id"]))
            return None
        return {"student_id": student, "file_id": info["file_id"] + info["ext"]}

    def _roster(self) -> dict[str, str]:
        if not hasattr(self, "_by_lms_id"):
            coursedir = self.parent.coursedir
            with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
                self._by_lms_id = {str(s.lms_user_id): s.id for s in gb.students if s.lms_user_id}
        return self._by_lms_id

