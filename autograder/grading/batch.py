"""`python -m autograder grade`: discover -> read & sanitize -> execute in a worker -> judge -> gradebook + notebook -> summary."""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import sys
import threading
from concurrent.futures import ALL_COMPLETED, FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from .. import __version__
from ..settings import BatchGrading, Limits, Tolerance
from . import class_report, runner, sandbox
from .formgrader import AUTOGRADED_HASH, autograded_digest, autograded_untouched, flag_box
from .judge import stopped_output
from .late import LatePenalties, submission_time
from .other_files import copy_other_files
from .runner import Graded, zero_scores
from .safe_html import escape_markdown, safe_notebook
from .sanitize import notebook_bytes, parse_submission, sanitize
from .source import AssignmentSpec, GradingError, NotebookSpec, load_assignment
from .store import (
    State,
    atomic_write,
    course_lock,
    course_secret,
    csv_text,
    record_grades,
    register_students,
    rollback,
    valid_text,
    write_notebook,
)
from .submission import Refused, Submission, Unreadable

GRADER_VERSION = f"{__version__}/grading-3"  # bump when a change to the grader may change a grade
EDITED_STATE = "its resume record was edited outside the grader: ignored, regraded"
UNNAMED = "the submission folder's name is not UTF-8 text (or holds a control character): not graded; rename the folder"


@dataclass(frozen=True)
class Item:
    """One notebook of one student's submission."""

    student: str
    notebook: str
    path: Path

    @property
    def label(self) -> str:
        return f"{self.student}/{self.notebook}"


GRADED, SKIPPED, NOT_GRADED = "graded", "skipped (unchanged)", "not graded"  # Row.status, compared whole


@dataclass
class Row:
    """A line of the summary table and of the CSV."""

    student: str
    notebook: str
    score: float
    max_score: float
    status: str  # GRADED | SKIPPED | NOT_GRADED
    flags: list[str] = field(default_factory=list)  # suspected cheating, for the instructor to review
    reason: str = ""  # why it could not be graded, or what the grader noticed (limits hit, cells missing...)
    misconceptions: list[str] = field(default_factory=list)  # ids of the likely mistakes (the class report counts them)
    late: str = ""  # how late the submission is ("2 d 3 h"), whatever the penalty; "" when on time
    attempted: bool = True  # False when every solution cell is as released (nbgrader's "No response.")

    def validate(self) -> None:
        """Make every text of the row one that each writer can encode (a lone surrogate cannot be UTF-8)."""
        self.student, self.notebook, self.status = valid_text(self.student), valid_text(self.notebook), valid_text(self.status)
        self.reason = valid_text(self.reason)
        self.flags = [valid_text(f) for f in dict.fromkeys(self.flags)]
        self.misconceptions = [valid_text(m) for m in self.misconceptions]


@dataclass
class Course:
    """The course directory, as nbgrader's CourseDirectory configures it."""

    coursedir: CourseDirectory
    root: Path

    @classmethod
    def open(cls, config: Config, root: str | None) -> Course:
        coursedir = CourseDirectory(config=config)
        if root:
            coursedir.root = str(Path(root).resolve())
        path = Path(coursedir.root)
        if not path.is_dir():
            raise GradingError(f"course directory {path} does not exist (set --course or $AUTOGRADER_COURSE_DIR)")
        return cls(coursedir, path)

    def submitted(self, student: str, assignment: str) -> Path:
        return Path(self.coursedir.format_path(self.coursedir.submitted_directory, student, assignment))

    def autograded(self, student: str, assignment: str) -> Path:
        return Path(self.coursedir.format_path(self.coursedir.autograded_directory, student, assignment))

    def release(self, assignment: str) -> Path:
        return Path(self.coursedir.format_path(self.coursedir.release_directory, ".", assignment))

    def students(self, assignment: str, chosen: list[str] | None) -> list[str]:
        """Students with a submission folder for the assignment (or the chosen ones, each of which must have one:
        a mistyped id would otherwise become a student of the gradebook, with zeros)."""
        base = Path(self.coursedir.root) / self.coursedir.submitted_directory
        found = sorted(p.name for p in base.glob("*") if (p / assignment).is_dir()) if base.is_dir() else []
        if not chosen:
            return found
        unknown = [s for s in dict.fromkeys(chosen) if s not in found]
        if unknown:
            raise GradingError(f"no submission of {assignment!r} for {', '.join(unknown)} (looked for "
                               f"{base / unknown[0] / assignment}); check the id, or collect the submission first")
        return list(dict.fromkeys(chosen))


def fingerprint(path: Path, spec: AssignmentSpec, settings: str) -> str:
    """Changes whenever the submitted file, the assignment's source, the grader or its settings change."""
    h = hashlib.sha256()
    try:
        with Submission.scan(path.parent).open(path.name) as f:  # never a link, FIFO or device: it is refused
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except Refused as exc:
        h.update(f"<refused: {exc}>".encode("utf-8", "surrogatepass"))
    except OSError:
        h.update(b"<missing>")
    h.update(f"\0{spec.fingerprint}\0{GRADER_VERSION}\0{settings}".encode())
    return h.hexdigest()


def not_graded(release_nb: Path, spec: NotebookSpec, reason: str, flags: list[str] | None = None) -> Graded:
    """Zero for every grade cell, the reason on every solution cell and atop the notebook shown as feedback."""
    nb = None
    try:
        nb = sanitize(nbformat.read(release_nb, as_version=4), spec).nb
    except Exception:
        nb = nbformat.v4.new_notebook()
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(f"**This notebook could not be graded: {escape_markdown(reason)}.** "
                                                     "Every test cell scores 0."))
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            cell.outputs = [nbformat.from_dict(stopped_output(reason))]
    graded = runner.score(nb, spec, list(flags or []), reason)
    graded.scores, graded.ran = zero_scores(spec), False
    graded.comments = {c.name: f"Not graded: {escape_markdown(reason)}" for c in spec.cells.values() if c.solution}
    return graded


@dataclass
class Prepared:
    """One notebook as read from its submission, with everything grading needs of the submission's files."""

    data: bytes  # the notebook file
    files: dict[str, str]  # the other files, as `Submission.other_files` gives them
    flags: list[str]  # the submission's refused files (links, FIFOs, devices, outside hard links), named


def prepare(item: Item, limits: Limits) -> Prepared:
    """Read one notebook and its submission's other files through `Submission` (local and cluster grading alike);
    Unreadable when the notebook cannot be graded (Refused: it is not a regular file of its own, FLAGGED)."""
    submission = Submission.scan(item.path.parent)
    data = notebook_bytes(submission, item.notebook, limits.notebook_mb * 2**20)
    files = submission.other_files(sandbox.MAX_FILES_BYTES)
    others = {rel for rel in submission.refused if not rel.endswith(".ipynb")}
    return Prepared(data, files, submission.flags(others))


def unreadable(release_nb: Path, spec: NotebookSpec, exc: Unreadable) -> Graded:
    """The notebook graded 0 with why it cannot be read; FLAGGED when it was refused."""
    return not_graded(release_nb, spec, str(exc), [str(exc)] if isinstance(exc, Refused) else [])


def grade_item(item: Item, spec: NotebookSpec, course: Course, assignment: str, limits: Limits, tolerance: Tolerance,
               other_ids: dict[str, str] | None = None, secret: bytes | None = None) -> Graded:
    """Read, sanitize, execute and judge one notebook; an unreadable one is graded 0 with its reason."""
    try:
        prepared = prepare(item, limits)
        return grade_notebook(parse_submission(prepared.data), spec, limits, tolerance, prepared.files, other_ids, secret,
                              prepared.flags)
    except Unreadable as exc:
        return unreadable(course.release(assignment) / f"{item.notebook}.ipynb", spec, exc)


def grade_notebook(nb: nbformat.NotebookNode, spec: NotebookSpec, limits: Limits, tolerance: Tolerance,
                   files_from: Path | dict[str, str] | None, other_ids: dict[str, str] | None = None,
                   secret: bytes | None = None, flags: list[str] | tuple[str, ...] = ()) -> Graded:
    """Sanitize, execute in a sandboxed worker and judge one read notebook (Unreadable when it cannot be graded);
    `flags` (the submission's refused files) come first among its own."""
    sanitized = sanitize(nb, spec, other_ids)
    sanitized.flags[:0] = list(flags)
    graded = runner.execute(sanitized, spec, limits, tolerance, files_from, secret)
    if graded.reason and not any(c.get("execution_count") for c in graded.nb.cells if c.cell_type == "code"):
        graded.reason, graded.ran = f"could not run: {graded.reason}", False
    return graded


@dataclass
class Options:
    """What the command line asked for."""

    assignment: str
    config: Config
    course: str | None = None
    students: list[str] | None = None
    jobs: int = 0
    force: bool = False
    csv_path: str | None = None
    progress: bool = True
    unsafe_no_sandbox: bool = False  # run workers without the OS sandbox (every row says so)
    cluster: str | None = None  # a Dask scheduler (address, scheduler file or module:Cluster) grades instead of local workers
    written: list[Path] = field(default_factory=list)  # filled by run(): the files it wrote besides the gradebook


def settings_text(limits: Limits, tolerance: Tolerance, unsafe_no_sandbox: bool = False) -> str:
    """The grading settings that can change a grade, as stable text for the fingerprint."""
    keys = {"limits": ["check_timeout", "cell_timeout", "notebook_timeout", "memory_mb", "output_bytes", "notebook_mb",
                          "notebook_output_bytes"],
            "tolerance": ["rtol", "atol", "forward_rtol"]}
    values = {k: [getattr(limits if k == "limits" else tolerance, n) for n in names] for k, names in keys.items()}
    if unsafe_no_sandbox:  # a grade earned outside the sandbox is regraded once the sandbox is back
        values["unsafe_no_sandbox"] = [True]
    return json.dumps(values, sort_keys=True)


def run(options: Options) -> list[Row]:
    """Grade the assignment's submissions in parallel; write the gradebook, notebooks and state as each finishes."""
    limits, tolerance = Limits(config=options.config), Tolerance(config=options.config)
    jobs = options.jobs or BatchGrading(config=options.config).jobs or os.cpu_count() or 1
    course = Course.open(options.config, options.course)
    # on a cluster, the workers start their own sandboxes: the driver (a login node, say) needs none
    local_sandbox = contextlib.nullcontext() if options.cluster else sandbox.MODE.using(options.unsafe_no_sandbox)
    with course_lock(course.root), local_sandbox:
        spec = load_assignment(course.coursedir.db_url, options.assignment)
        settings = settings_text(limits, tolerance, options.unsafe_no_sandbox)
        secret = course_secret(course.root)
        state = State(course.root, secret)
        rows: list[Row] = []
        todo: list[tuple[Item, str]] = []
        students = course.students(options.assignment, options.students)
        if not students:
            raise GradingError(f"no submissions of {options.assignment!r} in {course.root / course.coursedir.submitted_directory}")
        unnamed = [s for s in students if valid_text(s) != s or "\n" in s]  # no gradebook, CSV or page can hold the id
        for student in unnamed:
            rows += [Row(valid_text(student), name, 0.0, nb.max_score, NOT_GRADED, reason=UNNAMED) for name, nb in spec.notebooks.items()]
        students = [s for s in students if s not in unnamed]
        for student in students:
            folder = course.submitted(student, options.assignment)
            for name in spec.notebooks:
                item = Item(student, name, folder / f"{name}.ipynb")
                fp = fingerprint(item.path, spec, settings)
                old = state.get(State.key(options.assignment, student, name))
                if (old and old.get("fingerprint") == fp and not options.force
                        and autograded_untouched(old, course.autograded(student, options.assignment) / f"{name}.ipynb")):
                    rows.append(Row(student, name, old.get("score", 0.0), old.get("max_score", 0.0), SKIPPED,
                                    list(old.get("flags", [])), old.get("reason", ""),
                                    [str(m) for m in old.get("misconceptions", [])][:100],
                                    attempted=old.get("attempted") is not False))
                else:
                    todo.append((item, fp))
        if not options.cluster:
            sandbox.MODE.ready()  # the reading above overlapped the sandbox's start; the gradebook is written only now
        register_students(course.coursedir.db_url, course.coursedir.course_id, [item.student for item, _ in todo])
        if options.cluster:
            from .cluster import grade_on_cluster  # Dask is an optional dependency (the `cluster` extra)

            rows += grade_on_cluster(todo, spec, course, options, limits, tolerance, state, secret)
        else:
            rows += _grade_all(todo, spec, course, options, limits, tolerance, jobs, state, secret)
        for row in rows:  # a record the grader did not write (its HMAC fails) was ignored: say so
            if State.key(options.assignment, row.student, row.notebook) in state.rejected:
                row.reason = "; ".join(x for x in (row.reason, EDITED_STATE) if x)
        finish(course, options.assignment, [r for r in rows if r.reason != UNNAMED])
    rows.sort(key=lambda r: (r.student, r.notebook))
    if options.unsafe_no_sandbox:
        for row in rows:
            if sandbox.UNSANDBOXED not in row.reason:
                row.reason = "; ".join(x for x in (row.reason, sandbox.UNSANDBOXED) if x)
    for row in rows:
        row.validate()
    write_outputs(course, options, rows)
    return rows


def finish(course: Course, assignment: str, rows: list[Row]) -> None:
    """The steps after grading, one submission at a time: its time and late penalties (`late`), then its other files
    into autograded/ (`other_files`). A step that fails for one submission says why in that submission's rows; every
    other submission is penalised and copied as usual."""
    by_student: dict[str, list[Row]] = {}
    for row in rows:
        by_student.setdefault(row.student, []).append(row)
    penalties = LatePenalties(course.coursedir)
    with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gb:
        for student, its_rows in by_student.items():
            submission = Submission.scan(course.submitted(student, assignment))
            _per_submission(gb, its_rows, "its submission time and late penalty", penalties.apply, gb, assignment,
                            submission, its_rows)
            _per_submission(gb, its_rows, "copying its other files into autograded/", copy_other_files, course.coursedir,
                            assignment, student, submission)


def _per_submission(gb: Gradebook, rows: list[Row], what: str, step: Any, *args: Any) -> None:
    """Run one submission's step; if it fails, its rows say why (its gradebook changes are rolled back), and only they."""
    try:
        step(*args)
    except Exception as exc:
        rollback(gb)
        why = f"{what} failed ({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''})"
        for row in rows:
            row.reason = "; ".join(x for x in (row.reason, why) if x)


def write_outputs(course: Course, options: Options, rows: list[Row]) -> None:
    """The summary CSV (when asked) and the class report, each written whole or not at all (a run that dies leaves the
    previous file); GradingError when one cannot be written (the grades are stored either way)."""
    errors = []
    if options.csv_path is not None:  # "" (a bare --csv): the course folder, where the rest of the course's files are
        csv_path = options.csv_path or str(course.root / f"{options.assignment}-summary.csv")
        try:
            write_csv(rows, csv_path, options.assignment, keep_other_students=bool(options.students))
            options.written.append(Path(csv_path).resolve())
        except OSError as exc:
            errors.append(f"the summary CSV {csv_path} ({exc.strerror or exc})")
    try:
        page = class_report.write(course.root, options.assignment, rows)
        options.written += [page, page.with_name(f"{options.assignment}-misconceptions.csv")]
    except OSError as exc:
        errors.append(f"the class report in {course.root / class_report.REPORT_DIR} ({exc.strerror or exc})")
    if errors:
        raise GradingError(f"every grade is stored, but could not write {' or '.join(errors)}")


def _grade_all(todo: list[tuple[Item, str]], spec: AssignmentSpec, course: Course, options: Options, limits: Limits,
               tolerance: Tolerance, jobs: int, state: State, secret: bytes) -> list[Row]:
    """Workers grade in threads (each driving its own process); this thread alone writes, one notebook at a time."""
    from tqdm import tqdm

    rows: list[Row] = []
    if not todo:
        return rows
    bar = tqdm(total=len(todo), unit="nb", desc=f"grading {options.assignment}", file=sys.stderr,
               disable=not options.progress, dynamic_ncols=True)
    stop = threading.Event()

    owners = {name: nb for nb, s in spec.notebooks.items() for name in s.cells}

    def work(item: Item) -> Graded:
        if stop.is_set():
            raise KeyboardInterrupt
        others = {g: nb for g, nb in owners.items() if nb != item.notebook}
        return grade_item(item, spec.notebooks[item.notebook], course, options.assignment, limits, tolerance, others, secret)

    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    pending: dict[Future[Graded], tuple[Item, str]] = {pool.submit(work, item): (item, fp) for item, fp in todo}
    try:
        with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gb:
            # The assignment's notebooks and cells stay loaded across commits: nbgrader's add_submission walks them
            # for every new student (reloading them after each commit cost ~0.3 s a student). Rows this grader
            # writes are each read once, fresh, when their notebook is stored.
            gb.db().expire_on_commit = False
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                if pending.keys() - done:  # a moment for more to finish: one commit and one state write for all
                    done |= wait(pending.keys() - done, timeout=GROUP_SECONDS, return_when=ALL_COMPLETED)[0]
                group = []
                for future in done:
                    item, fp = pending.pop(future)
                    try:
                        graded = future.result()
                    except Exception as exc:  # a grader bug must not lose the rest of the batch
                        graded = not_graded(course.release(options.assignment) / f"{item.notebook}.ipynb",
                                            spec.notebooks[item.notebook], f"grader error {type(exc).__name__}: {exc}")
                    group.append((item, fp, graded))
                rows += _store_group(gb, course, options.assignment, group, state)
                bar.update(len(group))
    except BaseException:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        runner.kill_all()
        raise
    finally:
        bar.close()
    pool.shutdown()
    return rows


GROUP_SECONDS = 0.5  # how long the writer waits for more finished notebooks, to store them in one transaction


def _store_group(gb: Gradebook, course: Course, assignment: str, group: list[tuple[Item, str, Graded]],
                 state: State) -> list[Row]:
    """Store finished notebooks: their files, then every gradebook row in one commit, then the resume state.

    A kill before the commit leaves no row and no state of the group (regraded next time); between the commit and
    the state, only the state is missing (regraded too). If storing the group fails, each notebook is stored alone,
    so only the one that fails says why.
    """
    try:
        stored = [_store(gb, course, assignment, item, fp, graded, state) for item, fp, graded in group]
        gb.db.commit()
    except Exception:
        rollback(gb)
        stored = []
        for item, fp, graded in group:
            try:
                stored.append(_store(gb, course, assignment, item, fp, graded, state))
                gb.db.commit()
            except Exception as exc:  # one notebook's storage failing must not lose the rest of the batch
                rollback(gb)
                reason = ("could not store the grade "
                          f"({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''})")
                stored.append((Row(item.student, item.notebook, 0.0, graded.max_score, NOT_GRADED, graded.flags,
                                   reason), None))
    for row, record in stored:
        if record is not None:  # no state for a notebook that could not be stored: the next run regrades it
            state.put(State.key(assignment, row.student, row.notebook), record, save=False)
    state.save()
    return [row for row, _ in stored]


def _store(gb: Gradebook, course: Course, assignment: str, item: Item, fp: str, graded: Graded,
           state: State) -> tuple[Row, dict[str, Any]]:
    """The notebook's file, its gradebook rows (not committed) and its row; the state record to keep once committed."""
    out_dir = course.autograded(item.student, assignment)
    path = out_dir / f"{item.notebook}.ipynb"
    graded.flags = [valid_text(f) for f in graded.flags]
    graded.reason, graded.notes = valid_text(graded.reason), [valid_text(n) for n in graded.notes]
    digest = write_notebook(safe_notebook(graded.nb), path) if graded.nb is not None else autograded_digest(path)
    timestamp = submission_time(Submission.scan(item.path.parent)).when  # `finish` flags a time it cannot read
    flagged = flag_box(graded.flags, state.get(State.key(assignment, item.student, item.notebook)))
    record_grades(gb, assignment, item.student, item.notebook, graded, timestamp, flagged, commit=False)
    status = GRADED if graded.ran else NOT_GRADED
    reason = "; ".join(dict.fromkeys(x for x in [graded.reason, *graded.notes] if x))
    untouched = bool(graded.comments) and all(c == runner.NO_RESPONSE for c in graded.comments.values())
    row = Row(item.student, item.notebook, graded.score, graded.max_score, status, graded.flags, reason,
              graded.misconceptions, attempted=graded.ran and not untouched)
    record = {"fingerprint": fp, "score": row.score, "max_score": row.max_score, "flags": row.flags,
              "reason": row.reason, "misconceptions": row.misconceptions, "attempted": row.attempted,
              AUTOGRADED_HASH: digest}
    return row, record


def summary(rows: list[Row]) -> str:
    """The table printed at the end: student, notebook, score, max, status and flags or reason."""
    head = ("student", "notebook", "score", "max", "status / flags")
    lines = [(r.student, r.notebook, f"{r.score:g}", f"{r.max_score:g}",
              "; ".join([r.status, *([r.reason] if r.reason else []), *([f"FLAGGED: {' | '.join(r.flags)}"] if r.flags else [])]))
             for r in rows]
    widths = [max(len(x[i]) for x in [head, *lines]) for i in range(4)]
    fmt = "  ".join(f"{{:{'>' if i in (2, 3) else '<'}{w}}}" for i, w in enumerate(widths)) + "  {}"
    out = [fmt.format(*head), *(fmt.format(*ln) for ln in lines)]
    graded = sum(r.status == GRADED for r in rows)
    skipped = sum(r.status == SKIPPED for r in rows)
    flagged = sum(bool(r.flags) for r in rows)
    out.append(f"{len(rows)} notebooks: {graded} graded, {skipped} unchanged (skipped), {len(rows) - graded - skipped} not gradable"
               + (f"; {flagged} FLAGGED for review" if flagged else ""))
    return "\n".join(out)


def write_csv(rows: list[Row], path: str, assignment: str, keep_other_students: bool = False) -> None:
    """One line per student and notebook; with keep_other_students (a --student run), other students' lines stay."""
    head = ["student_id", "assignment", "notebook", "score", "max_score", "status", "flags", "reason"]
    lines = [[r.student, assignment, r.notebook, f"{r.score:g}", f"{r.max_score:g}", r.status, "; ".join(r.flags), r.reason]
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


def as_dicts(rows: list[Row]) -> list[dict[str, Any]]:
    """Rows as plain dicts (tests, JSON)."""
    return [r.__dict__.copy() for r in rows]
