"""The files besides notebooks that `nbgrader autograde` puts in `autograded/<student>/<assignment>/`.

nbgrader copies every other file of the submission (`timestamp.txt`, the exchange's `submission_secret.txt` that
`release_feedback` needs, a learner's data file), then the instructor's master copy of every other source file
(`Autograde.exclude_overwriting` names those the learner's version wins for). Here the learner's files are read
through `Submission`: only its regular files are copied (a link, FIFO or device is refused and flagged there, so a
link to a file of the grading machine never comes back as feedback), and only within the bounds of the files handed to
the notebook (`Submission.bounded_files`: OTHER_FILES_COUNT files, OTHER_FILES_BYTES bytes by apparent size, so a
sparse file of 2 GiB is refused, not written out dense); what is past them is refused and flagged.
"""

from __future__ import annotations

import os
import shutil

from nbgrader.coursedir import CourseDirectory
from nbgrader.utils import find_all_files, is_ignored

from ..discover.submission import Submission


def copy_other_files(coursedir: CourseDirectory, assignment: str, student: str, submission: Submission) -> list[str]:
    """One student's regular non-notebook files within their bounds, then the source's, into their autograded/ folder;
    a flag for each of the student's files refused."""
    if not submission.folder.is_dir() or submission.problem:
        return []
    autograde = coursedir.config["Autograde"] if "Autograde" in coursedir.config else {}
    keep = set(autograde.get("exclude_overwriting", {}).get(assignment, []))
    source = coursedir.format_path(coursedir.source_directory, ".", assignment)
    masters = [f for f in find_all_files(source, [*coursedir.ignore, "*.ipynb"]) if os.path.relpath(f, source) not in keep]
    dest = coursedir.format_path(coursedir.autograded_directory, student, assignment)
    before = set(submission.refused)
    for rel in submission.bounded_files():
        if any(is_ignored(part, coursedir.ignore) for part in rel.split("/")):
            continue
        target = _fresh(dest, rel)
        size = submission.files[rel].st_size
        with submission.open(rel) as src, open(target, "wb") as out:
            out.write(src.read(size))  # at most the size the bounds counted (a file grown since is cut there)
    for f in masters:
        shutil.copy(f, _fresh(dest, os.path.relpath(f, source)))
    return submission.flags(set(submission.refused) - before)


def _fresh(dest: str, rel: str) -> str:
    """The target path of `rel` in `dest`, its folder made and any old file (or link) at it removed."""
    target = os.path.join(dest, rel)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if os.path.lexists(target):
        os.remove(target)
    return target
