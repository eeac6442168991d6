"""The files besides notebooks that `nbgrader autograde` puts in `autograded/<student>/<assignment>/`.

nbgrader copies every other file of the submission (`timestamp.txt`, the exchange's `submission_secret.txt` that
`release_feedback` needs, a learner's data file), then the instructor's master copy of every other source file
(`Autograde.exclude_overwriting` names those the learner's version wins for).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable

from nbgrader.coursedir import CourseDirectory
from nbgrader.utils import find_all_files


def copy_other_files(coursedir: CourseDirectory, assignment: str, students: Iterable[str]) -> None:
    """For each student with a submission, copy its non-notebook files, then the source's, into autograded/."""
    autograde = coursedir.config["Autograde"] if "Autograde" in coursedir.config else {}
    keep = set(autograde.get("exclude_overwriting", {}).get(assignment, []))
    source = coursedir.format_path(coursedir.source_directory, ".", assignment)
    masters = [f for f in find_all_files(source, [*coursedir.ignore, "*.ipynb"]) if os.path.relpath(f, source) not in keep]
    for student in dict.fromkeys(students):
        submitted = coursedir.format_path(coursedir.submitted_directory, student, assignment)
        if not os.path.isdir(submitted):
            continue
        dest = coursedir.format_path(coursedir.autograded_directory, student, assignment)
        for base, files in ((submitted, find_all_files(submitted, [*coursedir.ignore, "*.ipynb"])), (source, masters)):
            for f in files:
                if os.path.islink(f):
                    continue  # a learner's link to a file of the grading machine must not come back as feedback
                target = os.path.join(dest, os.path.relpath(f, base))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                if os.path.lexists(target):
                    os.remove(target)
                shutil.copy(f, target)
