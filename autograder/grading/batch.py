"""`python -m autograder grade`: find the notebooks to grade, grade them with an executor, store them with the one
writer, then the steps after grading and the outputs.

    discover (Course.students, fingerprint, the journal: skip what is unchanged)
    -> executor (executors.LocalPool, or cluster.DaskPool): pipeline.READ + pipeline.GRADE per notebook
    -> writer.Writer: autograded notebooks, gradebook rows, journal records, a group at a time
    -> finish (late penalties, other files) -> summary, CSV, class report
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from ..lines import one_line
from ..settings import BatchGrading, Hints, Limits, Tolerance
from .discover.assignment import AssignmentSpec, GradingError, load_assignment
from .discover.submission import Refused, Submission
from .finish.late import LatePenalties
from .finish.other_files import copy_other_files
from .grade import bounded, sandbox
from .grade.executors import LocalPool
from .grade.pipeline import Clock, Shared
from .outputs import class_report
from .store.gradebook import BulkGradebook, atomic_write, course_lock, course_secret, csv_text, register_students
from .store.journal import Journal
from .store.resume import autograded_untouched
from .store.writer import Paths, Writer
from .types import GRADER_VERSION, Code, Item, Row, Status, Task

if TYPE_CHECKING:
    from .grade.cluster import Connection

__all__ = ["GRADER_VERSION", "Course", "Item", "Options", "Row", "Status", "run", "summary", "write_csv"]

EDITED_STATE = "its resume record was edited outside the grader: ignored, regraded"
LATE_STEP = "its submission time and late penalty"
FINISH_STUDENTS = 500  # students a transaction in `finish`: a few thousand rows, so no other program waits long
UNNAMED = ("the submission folder's name is not UTF-8 text (or holds a control, format or line-breaking character): not "
           "graded; rename the folder")


@dataclass
class Course:
    """The course directory, as nbgrader's CourseDirectory configures it."""

    coursedir: CourseDirectory
    root: Path

    @classmethod
    def open(cls, config: Config, root: str | None, looked_at: str = "", gradebook: bool = True) -> Course:
        """The course the config and --course name; GradingError, touching nothing, when there is none there.

        `looked_at` says which config was read (the error names it): a grader run from the wrong folder must say
        where it looked, never create a gradebook there. Without `gradebook` (a command that reads only the course's
        notebooks, such as `similarity`) the folder need not hold one.
        """
        coursedir = CourseDirectory(config=config)
        if root:
            coursedir.root = str(Path(root).resolve())
        path = Path(coursedir.root).resolve()
        where = f"{'--course' if root else 'the config' if 'root' in config.get('CourseDirectory', {}) else 'the current folder'}"
        if not path.is_dir():
            raise GradingError(f"course folder {path} does not exist (from {where}; {looked_at or 'no config read'}): "
                               "pass --course DIR, or set $AUTOGRADER_COURSE_DIR")
        db = sqlite_file(coursedir.db_url) if gradebook else None
        if db is not None and not db.is_file():
            raise GradingError(f"no nbgrader course in {path} (from {where}; {looked_at or 'no config read'}): it has no "
                               f"gradebook {db}; run from the course's checkout, where its nbgrader_config.py is, or "
                               "pass --course DIR and --config FILE (nbgrader generate_assignment makes the gradebook)")
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


def sqlite_file(db_url: str) -> Path | None:
    """The file of an SQLite gradebook URL (sqlite:///path), None for another database (PostgreSQL, in memory)."""
    prefix = "sqlite:///"
    if not db_url.startswith(prefix) or db_url[len(prefix):] in ("", ":memory:"):
        return None
    return Path(db_url[len(prefix):].split("?")[0]).resolve()


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
    looked_at: str = ""  # which config was read, for an error that says where the grader looked ("config: ./x.py")
    written: list[Path] = field(default_factory=list)  # filled by run(): the files it wrote besides the gradebook
    clock: Clock | None = None  # told the time of every step, from any thread (benchmarks/profile_grade.py)


def settings_text(limits: Limits, tolerance: Tolerance, unsafe_no_sandbox: bool = False,
                  hints: str = Hints.level.default_value) -> str:
    """The grading settings that can change a grade (or, the hint level, its feedback), as stable text for the
    fingerprint."""
    keys = {"limits": ["check_timeout", "cell_timeout", "notebook_timeout", "memory_mb", "output_bytes", "notebook_mb",
                          "notebook_output_bytes", "notebook_cells", "read_timeout", "render_timeout", "helper_memory_mb"],
            "tolerance": ["rtol", "atol", "forward_rtol"]}
    values = {k: [getattr(limits if k == "limits" else tolerance, n) for n in names] for k, names in keys.items()}
    if unsafe_no_sandbox:  # a grade earned outside the sandbox is regraded once the sandbox is back
        values["unsafe_no_sandbox"] = [True]
    if hints != Hints.level.default_value:  # feedback written at another level is written again (the default's
        values["hints"] = [hints]  # fingerprint is the one it always was)
    return json.dumps(values, sort_keys=True)


def default_jobs(memory_mb: int, cpus: int | None = None, memory_bytes: int | None = None) -> int:
    """Notebooks graded at a time by default: one more than the CPUs, never more than fit in memory at their limit.

    A notebook's worker waits for the grader at every cell and grade cell, and its start waits on the kernel (its
    cgroups, its namespaces): with one notebook per CPU a core stands idle meanwhile; one more keeps it busy.
    """
    cpus = cpus or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    if memory_bytes is None:
        try:
            memory_bytes = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):  # a system that does not say: bounded by the CPUs alone
            return cpus + 1
    return max(1, min(cpus + 1, memory_bytes // (max(memory_mb, 1) * 2**20)))


def run(options: Options) -> list[Row]:
    """Grade the assignment's submissions in parallel; store each group of notebooks as it finishes."""
    limits, tolerance = Limits(config=options.config), Tolerance(config=options.config)
    jobs = options.jobs or BatchGrading(config=options.config).jobs or default_jobs(limits.memory_mb)
    if options.cluster and options.unsafe_no_sandbox:
        raise GradingError("--cluster grades only in the sandbox (--unsafe-no-sandbox is for one machine)")
    # on a cluster, the workers start their own sandboxes (asked at once, so they start while the course is read): the
    # driver (a login node, say) needs none
    with contextlib.ExitStack() as stack:
        cluster = None
        if options.cluster:
            from .grade.cluster import connection  # Dask is an optional dependency (the `cluster` extra)

            cluster = stack.enter_context(connection(options.cluster, options.jobs))
        course = Course.open(options.config, options.course, options.looked_at)
        stack.enter_context(course_lock(course.root))
        if not options.cluster:
            stack.enter_context(sandbox.MODE.using(options.unsafe_no_sandbox))
            bounded.HELPERS.warm()
            stack.callback(bounded.HELPERS.close)
        rows = grade(options, course, limits, tolerance, jobs, cluster)
    rows.sort(key=lambda r: (r.student, r.notebook))
    if options.unsafe_no_sandbox:
        for row in rows:
            row.add(Code.UNSANDBOXED, sandbox.UNSANDBOXED)
    for row in rows:
        validate(row)
    write_outputs(course, options, rows)
    return rows


def grade(options: Options, course: Course, limits: Limits, tolerance: Tolerance, jobs: int,
          cluster: Connection | None) -> list[Row]:
    """Under the course lock: find what needs grading, grade it (locally or on `cluster`), store it, finish."""
    try:
        spec = load_assignment(course.coursedir.db_url, options.assignment)
    except GradingError as exc:
        raise GradingError(f"{exc} (course folder {course.root}; {options.looked_at or 'no config read'})") from None
    hints = Hints(config=options.config).level
    settings = settings_text(limits, tolerance, options.unsafe_no_sandbox, hints)
    students = course.students(options.assignment, options.students)  # before the secret and journal: a refusal writes nothing
    if not students:
        raise GradingError(f"no submissions of {options.assignment!r} in {course.root / course.coursedir.submitted_directory}")
    secret = course_secret(course.root)
    journal = Journal(course.root, secret)
    rows: list[Row] = []
    todo: list[Task] = []
    unnamed = [s for s in students if one_line(s) != s]  # no gradebook, CSV or page can hold the id as it is
    for student in unnamed:
        rows += [Row(one_line(student), name, 0.0, nb.max_score, Status.NOT_GRADED)
                 for name, nb in spec.notebooks.items()]
        for row in rows[-len(spec.notebooks):]:
            row.add(Code.UNNAMED, UNNAMED)
    students = [s for s in students if s not in unnamed]
    for student in students:
        folder = course.submitted(student, options.assignment)
        for name in spec.notebooks:
            item = Item(student, name, folder / f"{name}.ipynb")
            fp = fingerprint(item.path, spec, settings)
            old = journal.get(Journal.key(options.assignment, student, name))
            if (old and old.fingerprint == fp and not options.force
                    and autograded_untouched(old, course.autograded(student, options.assignment) / f"{name}.ipynb")):
                rows.append(old.row(student, name))
            else:
                todo.append(Task(item, fp))
    if not options.cluster and todo:
        sandbox.MODE.ready()  # the reading above overlapped the sandbox's start; the gradebook is written only now
    elif not options.cluster:  # nothing to grade: the sandbox warmed for nothing; stopped now, not after `finish`
        sandbox.MODE.pool.close()
    register_students(course.coursedir.db_url, course.coursedir.course_id, [t.item.student for t in todo])
    shared = Shared(spec.notebooks, limits, tolerance, secret, options.clock, hints)
    writer = Writer(course.coursedir.db_url, course.coursedir.course_id, options.assignment, spec,
                    Paths(lambda student: course.autograded(student, options.assignment),
                          course.release(options.assignment)), journal, options.clock)
    try:
        if cluster is not None:
            from .grade.cluster import grade_on_cluster

            rows += grade_on_cluster(todo, shared, writer, cluster, options.progress)
        else:
            pool = LocalPool(shared, jobs)
            try:
                rows += writer.run(todo, pool, options.progress)
            finally:
                pool.close()
    finally:
        writer.close()
        journal.close()
    for row in rows:  # a record the grader did not write (its HMAC fails) was ignored: say so
        if Journal.key(options.assignment, row.student, row.notebook) in journal.rejected:
            row.add(Code.EDITED_STATE, EDITED_STATE)
    finish(course, options.assignment, [r for r in rows if not r.has(Code.UNNAMED)])
    return rows


def validate(row: Row) -> None:
    """Make every text of the row one line with nothing hidden (`one_line`), which each writer can encode."""
    row.student, row.notebook = one_line(row.student), one_line(row.notebook)
    row.reasons = [type(r)(r.code, one_line(r.text)) for r in row.reasons]
    row.flags = [one_line(f) for f in dict.fromkeys(row.flags)]
    row.misconceptions = [one_line(m) for m in row.misconceptions]


def finish(course: Course, assignment: str, rows: list[Row]) -> None:
    """The steps after grading: each submission's time and late penalties (`late`), `FINISH_STUDENTS` students a
    transaction of bulk statements, then its other files into autograded/ (`other_files`). A step that fails for one
    submission says why in that submission's rows (its gradebook changes are not kept); every other submission is
    penalised and copied as usual."""
    by_student: dict[str, list[Row]] = {}
    for row in rows:
        by_student.setdefault(row.student, []).append(row)
    penalties = LatePenalties(course.coursedir)
    students = list(by_student)
    with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gb:
        bulk = BulkGradebook(gb, assignment)
        for start in range(0, len(students), FINISH_STUDENTS):
            work = [(Submission.scan(course.submitted(s, assignment)), by_student[s])
                    for s in students[start:start + FINISH_STUDENTS]]
            try:
                _file_late(bulk, penalties, work)
            except Exception:  # the chunk's transaction failed: each submission alone, so only the one at fault says so
                bulk.rollback()
                for one in work:
                    try:
                        _file_late(bulk, penalties, [one])
                    except Exception as exc:
                        bulk.rollback()
                        _step_failed(one[1], LATE_STEP, exc)
            for submission, its_rows in work:
                try:
                    flags = copy_other_files(course.coursedir, assignment, its_rows[0].student, submission)
                    for row in its_rows:
                        row.flags.extend(f for f in flags if f not in row.flags)
                except Exception as exc:
                    _step_failed(its_rows, "copying its other files into autograded/", exc)


def _file_late(bulk: BulkGradebook, penalties: LatePenalties, work: list[tuple[Submission, list[Row]]]) -> None:
    filings, failed = penalties.apply(bulk, work)
    bulk.commit()
    for filing in filings:
        filing.note()
    for _, its_rows in work:
        if its_rows[0].student in failed:
            _step_failed(its_rows, LATE_STEP, failed[its_rows[0].student])


def _step_failed(rows: list[Row], what: str, exc: BaseException) -> None:
    why = f"{what} failed ({type(exc).__name__}: {one_line(exc)[:200]})"
    for row in rows:
        row.add(Code.STEP_FAILED, why)


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


def summary(rows: list[Row]) -> str:
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


def as_dicts(rows: list[Row]) -> list[dict[str, Any]]:
    """Rows as plain dicts (tests, JSON): the status as its text, the reasons as one text."""
    return [{**r.__dict__, "status": r.status.value, "reasons": [[x.code.value, x.text] for x in r.reasons],
             "reason": r.reason} for r in rows]
