"""A course run the way the README's instructor guide runs it, on a copy of the repository's config and workbook.

The copy (nbgrader_config.py, solutions/workbook/ with some of its notebooks, an empty notebooks/) keeps the real
config file's relative paths working without touching the repository's tracked notebooks.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
from grading_corpus import BIN, ROOT

ASSIGNMENT = "workbook"
COURSE_ID = "autograd-workbook"
NOT_RECOGNIZED = re.compile(r"not recognized|Unrecognized|No nbgrader_config\.py file found", re.I)
SOLUTION_MARKER = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")


@dataclass
class Course:
    """The instructor's checkout (`repo`), the course directory, and one home folder per learner."""

    repo: Path
    root: Path
    learners: Path

    def env(self, course: Path | None = None) -> dict[str, str]:
        e = dict(os.environ)
        e["PATH"] = BIN + os.pathsep + e.get("PATH", "")
        e["AUTOGRADER_COURSE_DIR"] = str(course or self.root)
        e.pop("AUTOGRADER_CONFIG", None)
        return e

    def nbgrader(self, *args: str, course: Path | None = None) -> subprocess.CompletedProcess[str]:
        """An instructor's nbgrader command, from the checkout, no config flag; it must succeed without config warnings."""
        r = subprocess.run([os.path.join(BIN, "nbgrader"), *args], cwd=self.repo, env=self.env(course), text=True,
                           capture_output=True)
        _assert_clean(r, args)
        return r

    def grade(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`python -m autograder grade workbook ARGS` from the checkout."""
        r = subprocess.run([sys.executable, "-m", "autograder", "grade", ASSIGNMENT, "--no-progress", *args], cwd=self.repo,
                           env=self.env(), text=True, capture_output=True)
        assert r.returncode == 0, r.stderr
        return r

    def autograder(self, *args: str) -> subprocess.CompletedProcess[str]:
        r = subprocess.run([sys.executable, "-m", "autograder", *args], cwd=self.repo, env=self.env(), text=True,
                           capture_output=True)
        assert r.returncode == 0, r.stderr
        return r

    def learner(self, student: str, *args: str) -> subprocess.CompletedProcess[str]:
        """A learner's nbgrader command in their own folder: course id and exchange given, as the README says."""
        home = self.learners / student
        home.mkdir(parents=True, exist_ok=True)
        cmd = [os.path.join(BIN, "nbgrader"), *args, f"--course={COURSE_ID}", f"--Exchange.root={self.root / 'exchange'}",
               f"--student={student}"]
        # Each learner has their own account, so their own nbgrader cache of submissions (fetch_feedback reads it).
        env = self.env() | {"JUPYTER_DATA_DIR": str(home / ".jupyter-data")}
        r = subprocess.run(cmd, cwd=home, env=env, text=True, capture_output=True)
        assert r.returncode == 0, f"{args}: {r.stderr[-2000:]}"
        assert not re.search(r"not recognized|Unrecognized", r.stdout + r.stderr), r.stderr
        return r


def _assert_clean(r: subprocess.CompletedProcess[str], args: tuple[str, ...]) -> None:
    assert r.returncode == 0, f"nbgrader {' '.join(args)} exited {r.returncode}:\n{r.stderr[-3000:]}"
    bad = [ln for ln in (r.stdout + r.stderr).splitlines() if NOT_RECOGNIZED.search(ln)]
    assert not bad, f"nbgrader {' '.join(args)}: {bad}"


def make_checkout(base: Path, notebooks: list[str], extra_config: str = "") -> Course:
    """The repository's config and the chosen workbook notebooks in `base/repo`; the course in `base/course`."""
    repo = base / "repo"
    (repo / "solutions" / ASSIGNMENT).mkdir(parents=True)
    (repo / "notebooks").mkdir()
    for name in notebooks:
        shutil.copy(ROOT / "solutions" / ASSIGNMENT / name, repo / "solutions" / ASSIGNMENT / name)
    shutil.copy(ROOT / "nbgrader_config.py", repo / "nbgrader_config.py")
    if extra_config:
        with open(repo / "nbgrader_config.py", "a") as f:
            f.write(extra_config)
    root = base / "course"
    root.mkdir()
    return Course(repo, root, base / "learners")


def solve(folder: Path, mistakes: dict[str, tuple[str, str, str]] | None = None) -> None:
    """Fill every solution cell of the fetched notebooks in `folder` with the reference solution (some with a mistake)."""
    for path in sorted(folder.glob("*.ipynb")):
        ref = nbformat.read(ROOT / "solutions" / ASSIGNMENT / path.name, as_version=4)
        answers = {c.metadata["nbgrader"]["grade_id"]: "\n".join(ln for ln in c.source.splitlines() if not SOLUTION_MARKER.match(ln))
                   for c in ref.cells if c.metadata.get("nbgrader", {}).get("solution")}
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
            if gid in answers:
                cell.source = answers[gid]
        grade_id, old, new = (mistakes or {}).get(path.name, (None, "", ""))
        if grade_id:
            cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
            assert cell.source.count(old) == 1
            cell.source = cell.source.replace(old, new)
        nbformat.write(nb, path)


def gradebook_rows(root: Path, students: list[str]) -> dict[tuple[str, str], dict]:
    """(student, notebook) -> lateness and every grade cell's score, as the course's gradebook holds them."""
    from nbgrader.api import Gradebook, MissingEntry

    out: dict[tuple[str, str], dict] = {}
    with Gradebook(f"sqlite:///{root}/gradebook.db") as gb:
        for s in students:
            try:
                sub = gb.find_submission(ASSIGNMENT, s)
            except MissingEntry:
                continue
            for nb in sub.notebooks:
                out[(s, nb.name)] = {"timestamp": sub.timestamp, "extension": sub.extension,
                                     "seconds_late": sub.total_seconds_late, "penalty": nb.late_submission_penalty,
                                     "score": nb.score, "grades": {g.name: g.auto_score for g in nb.grades}}
    return out
