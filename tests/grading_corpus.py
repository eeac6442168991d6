"""A course directory with real nbgrader steps and a corpus of submissions built by editing the solution source.

Used by tests/test_grade_*.py and benchmarks/bench_grade.py.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_SOURCE = ROOT / "tests" / "fixtures" / "source"
ASSIGNMENT = "ps1"
NOTEBOOK = "engine"
BIN = str(Path(sys.executable).parent)

CONFIG = '''c = get_config()
c.CourseDirectory.course_id = "fixture-course"
c.CourseDirectory.root = {root!r}
c.Execute.timeout = 30
c.Limits.cell_timeout = 30.0
c.Limits.notebook_timeout = 120.0
'''

# (grade_id, old text, new text): each mistake is an edit of the reference solution
TOPO_ITERATIVE = '''        topo, seen, stack = [], set(), [(self, False)]
        while stack:
            v, done = stack.pop()
            if done:
                topo.append(v)
            elif v not in seen:
                seen.add(v)
                stack.append((v, True))
                stack.extend((c, False) for c in v._prev)
        self.grad = 1.0
        for node in reversed(topo):
            node._backward()
'''
BACKWARD = re.compile(r"        topo, visited = \[\], set\(\).*?node\._backward\(\)\n?", re.S)

EDITS: dict[str, list[tuple[str, str, str]]] = {
    "correct_a": [],
    "correct_b": [("engine", "for child in v._prev:", "for child in list(v._prev):")],
    "correct_iterative": [("engine", BACKWARD.pattern, TOPO_ITERATIVE)],
    "correct_and_prints": [("engine", "        build(self)\n", "        build(self)\n        print('nodes:', len(topo))\n")],
    "forward_difference": [("derivatives", "(f(x + h) - f(x - h)) / (2 * h)", "(f(x + h) - f(x)) / h")],
    "relerr_not_safe_at_zero": [("derivatives", "    if a == 0 and b == 0:\n        return 0.0\n", "")],
    "relerr_min": [("derivatives", "max(abs(a), abs(b))", "min(abs(a), abs(b))")],
    "add_forgets_other": [("engine", "            other.grad += out.grad\n", "")],
    "mul_no_swap": [("engine", "self.grad += other.data * out.grad", "self.grad += self.data * out.grad")],
    "assign_not_accumulate": [("engine", "self.grad += out.grad", "self.grad = out.grad"),
                              ("engine", "other.grad += self.data * out.grad", "other.grad = self.data * out.grad")],
    "no_seed": [("engine", "        self.grad = 1.0\n", "")],
    "topo_not_reversed": [("engine", "for node in reversed(topo):", "for node in topo:")],
    "mul_forward_adds": [("engine", "Value(self.data * other.data", "Value(self.data + other.data")],
    "no_topo_recursive": [("engine", BACKWARD.pattern,
                           "        self.grad = 1.0\n\n        def go(v):\n            v._backward()\n"
                           "            for child in v._prev:\n                go(child)\n\n        go(self)\n")],
    "syntax_error": [("engine", "    def backward(self):", "    def backward(self)")],
    "raises_in_backward": [("engine", "        self.grad = 1.0\n", "        self.grad = 1.0\n        raise ValueError('oops')\n")],
}
PARTS = {"stub": [], "partly_derivatives": ["derivatives"], "partly_engine": ["engine"], "partly_both_wrong": ["derivatives", "engine"]}
# Correct code that writes a warning to the process's real stderr while a check runs.
STDERR_WARNING = [("engine", "        out = Value(self.data * other.data, (self, other), \"*\")\n",
                   "        out = Value(self.data * other.data, (self, other), \"*\")\n"
                   "        import sys\n        print('warning: mul is slow', file=sys.__stderr__, flush=True)\n")]


# The real workbook: its solutions with classic mistakes, so that some grade cells pass and some fail.
WORKBOOK_SOURCE = ROOT / "solutions" / "workbook"
WORKBOOK_MISTAKES = {  # notebook: (solution cell, text, replacement)
    "03_backward.ipynb": ("ex_03_add", "        self.grad += out.grad\n", "        self.grad = out.grad\n"),
    "04_bricks.ipynb": ("ex_04_tanh", "(1 - t**2) * out.grad", "(1 - self.data**2) * out.grad"),
    "06_neural_net.ipynb": ("ex_06_train", "            p.grad = 0.0\n", ""),
}


def submit_workbook_with_mistakes(folder: Path) -> None:
    """Copy the workbook solutions into `folder`, each WORKBOOK_MISTAKES edit applied to its solution cell."""
    shutil.copytree(WORKBOOK_SOURCE, folder)
    for name, (grade_id, old, new) in WORKBOOK_MISTAKES.items():
        nb = nbformat.read(folder / name, as_version=4)
        cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
        assert cell.source.count(old) == 1, f"{name}: the mistake's text must occur once in {grade_id}"
        cell.source = cell.source.replace(old, new)
        nbformat.write(nb, folder / name)


def env() -> dict[str, str]:
    """The environment for nbgrader commands: this venv's bin first (kernels, alembic)."""
    e = dict(os.environ)
    e["PATH"] = BIN + os.pathsep + e.get("PATH", "")
    e.pop("AUTOGRADER_CONFIG", None)
    return e


def nbgrader(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run `nbgrader ARGS` in the course directory (its nbgrader_config.py applies)."""
    return subprocess.run([os.path.join(BIN, "nbgrader"), *args], cwd=root, env=env(), text=True, capture_output=True, check=check)


def make_course(root: Path, db_url: str | None = None) -> Path:
    """A course directory with the fixture assignment generated by `nbgrader generate_assignment` (into the gradebook
    at `db_url`, a PostgreSQL server say; by default nbgrader's gradebook.db in the course)."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(FIXTURE_SOURCE, root / "source", dirs_exist_ok=True)
    config = CONFIG.format(root=str(root), assignment=ASSIGNMENT)
    (root / "nbgrader_config.py").write_text(config + (f"c.CourseDirectory.db_url = {db_url!r}\n" if db_url else ""))
    nbgrader(root, "generate_assignment", ASSIGNMENT, "--force")
    return root


def solution_sources() -> dict[str, str]:
    """The solution cells of the source notebook, markers removed: what a learner who got it right submits."""
    nb = nbformat.read(FIXTURE_SOURCE / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    out = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            out[meta["grade_id"]] = "\n".join(ln for ln in cell.source.splitlines() if "### BEGIN SOLUTION" not in ln
                                              and "### END SOLUTION" not in ln)
    return out


def submission(root: Path, solved: list[str], edits: list[tuple[str, str, str]]) -> nbformat.NotebookNode:
    """The released notebook with the `solved` solution cells filled in, then edited."""
    nb = nbformat.read(root / "release" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    solutions = solution_sources()
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in solved:
            cell.source = solutions[gid]
    for gid, old, new in edits:
        cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == gid)
        if old == BACKWARD.pattern:
            edited = BACKWARD.sub(new.replace("\\", "\\\\"), cell.source, count=1)
        else:
            edited = cell.source.replace(old, new, 1)
        assert edited != cell.source, f"edit did not apply: {old!r}"
        cell.source = edited
    return nb


def submit(root: Path, student: str, nb: nbformat.NotebookNode | bytes) -> Path:
    """Put a notebook (or raw bytes) at submitted/<student>/<assignment>/, with a timestamp, as `nbgrader collect` would."""
    folder = root / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{NOTEBOOK}.ipynb"
    if isinstance(nb, bytes):
        path.write_bytes(nb)
    else:
        nbformat.write(nb, path)
    (folder / "timestamp.txt").write_text("2025-01-15 10:00:00.000000 UTC")
    return path


def honest_corpus(root: Path) -> list[str]:
    """Submit every honest variant (correct, stub, partly done, catalog mistakes); return the student ids."""
    both = ["derivatives", "engine"]
    students = []
    for name, edits in EDITS.items():
        submit(root, name, submission(root, both, edits))
        students.append(name)
    for name, solved in PARTS.items():
        edits = [("derivatives", "max(abs(a), abs(b))", "min(abs(a), abs(b))")] if name == "partly_both_wrong" else []
        submit(root, name, submission(root, solved, edits))
        students.append(name)
    return students


def special_corpus(root: Path) -> dict[str, str]:
    """Submissions on which the graders differ by design: a stderr warning, a truncated notebook."""
    submit(root, "stderr_warning", submission(root, ["derivatives", "engine"], STDERR_WARNING))
    good = nbformat.writes(submission(root, ["derivatives", "engine"], [])).encode()
    submit(root, "truncated_json", good[: len(good) // 2])
    return {"stderr_warning": "correct, writes to the real stderr", "truncated_json": "half a notebook file"}


def grade_cells(root: Path, students: list[str], db_url: str | None = None) -> dict[tuple[str, str], float | None]:
    """(student, grade_id) -> auto_score, read from the course's gradebook (gradebook.db unless `db_url`)."""
    from nbgrader.api import Gradebook

    out: dict[tuple[str, str], float | None] = {}
    with Gradebook(db_url or f"sqlite:///{root}/gradebook.db") as gb:
        for s in students:
            try:
                sub = gb.find_submission_notebook(NOTEBOOK, ASSIGNMENT, s)
            except Exception:
                continue
            for g in sub.grades:
                out[(s, g.name)] = g.auto_score
    return out


def grade_ours(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m autograder grade ps1 --course ROOT ARGS` with the course's config."""
    return subprocess.run([sys.executable, "-m", "autograder", "grade", ASSIGNMENT, "--course", str(root),
                           "--config", str(root / "nbgrader_config.py"), "--no-progress", *args],
                          cwd=root, env=env(), text=True, capture_output=True)
