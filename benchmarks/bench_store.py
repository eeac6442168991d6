"""The driver's ceiling: how many graded notebooks per second the one writer stores, and that it stores what nbgrader would.

Run by hand: .venv/bin/python benchmarks/bench_store.py --notebooks N [--db URL]

1. Grades a small course of the real workbook once, in this process, through the production pipeline in the OS
   sandbox (a solution, a blank and a mistaken submission: 18 real autograded notebooks), and adds the results a
   batch also hands the writer: an unreadable notebook, a grader error (both stored as 0, not graded) and a
   notebook the cluster lost (not stored).
2. Replays N of those results, as N / 6 students, through the production writer (`writer.Writer`: autograded
   notebooks, gradebook rows in bulk transactions, journal records) into a fresh nbgrader gradebook, timed, with
   the students registered as a run registers them.
3. Stores the same N results the plain way, one notebook per transaction through nbgrader's ORM (as
   `nbgrader autograde`'s SaveAutoGrades does), into another fresh gradebook, and proves that `nbgrader export`
   gives the same CSV from both, and that every grade, comment, submitted notebook and submission row is the same,
   cell by cell.
Prints, last: `store: N notebooks in S s: R notebooks/s (sqlite)`, then the same for PostgreSQL when --db is given
or a throw-away server can be started (tests/postgres_server.py).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from concurrent.futures import Future
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import support
from bench_grade import workbook_course
from nbgrader.api import Gradebook
from nbgrader.plugins import LateSubmissionPlugin
from results import Results, add_option, recording

ASSIGNMENT = "workbook"
COURSE_ID = "autograd-workbook"  # grading_config.py's
DUE = "2025-01-15 12:00:00 UTC"
# a student's time, by its number modulo 4: on time, 3 h late, 3 days late (half of them within a 4-day extension), none
TIMES = ["2025-01-15 10:00:00.000000 UTC", "2025-01-15 15:00:00.000000 UTC", "2025-01-18 12:00:00.000000 UTC", None]
EXTENSION = datetime.timedelta(days=4)  # for students 2, 10, 18, ... (every other 3-days-late one)
COMPARE = 250  # students the plain per-notebook store and nbgrader's own late step are run on (evenly spread)
GROUP = 200  # notebooks a group: what a busy driver's half-second of results holds (100 workers at ~0.5 s each)


class Replay:
    """An executor whose tasks are already graded: the writer's cost alone."""

    def __init__(self, results: dict[str, Any]) -> None:
        self.results = results

    def submit(self, task: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(self.results.pop(task.item.label))
        return future

    def window(self) -> int:
        return GROUP  # results in flight: each group the writer stores holds this many

    def stop(self) -> None:
        pass


def grade_templates(course: Path) -> tuple[Any, list[Any]]:
    """The assignment's spec and the real results of grading the course's three students (plus the not-graded kinds)."""
    from autograder.grading.discover.assignment import load_assignment
    from autograder.grading.grade import pipeline
    from autograder.grading.grade.executors import LocalPool
    from autograder.grading.grade.sandbox import client
    from autograder.grading.store.files import course_secret
    from autograder.grading.types import Code, Item, Reason, Result, Task
    from autograder.settings import Limits, Tolerance, load_config

    config = load_config(str(support.ROOT / "grading_config.py"))
    spec = load_assignment(f"sqlite:///{course / 'gradebook.db'}", ASSIGNMENT)
    shared = pipeline.Shared(spec.notebooks, Limits(config=config), Tolerance(config=config), course_secret(course))
    tasks = [Task(Item(s.name, nb, s / ASSIGNMENT / f"{nb}.ipynb"), "fp") for s in sorted((course / "submitted").iterdir())
             for nb in spec.notebooks]
    with client.MODE.using(False):
        client.MODE.ready()
        pool = LocalPool(shared, 2)
        try:
            results = [f.result() for f in [pool.submit(t) for t in tasks]]
        finally:
            pool.close()
    assert all(r.graded is not None for r in results), [r.why for r in results if r.graded is None]
    first = tasks[0]
    results += [Result(first, None, Reason(Code.UNREADABLE, "the notebook is not valid JSON (line 1, column 9)")),
                Result(first, None, Reason(Code.GRADER_ERROR, "grader error RuntimeError: replayed")),
                Result(first, None, Reason(Code.CLUSTER_LOST, "not graded on the cluster (KilledWorker: replayed)"))]
    return spec, results


def replayed(templates: list[Any], spec: Any, notebooks: int, base: Path) -> dict[str, Any]:
    """N results for N / 6 students (label -> result), each notebook's result from its kind in turn."""
    import dataclasses

    from autograder.grading.types import Item, Task

    by_notebook: dict[str, list[Any]] = {}
    for r in templates:
        if r.graded is not None:
            by_notebook.setdefault(r.task.item.notebook, []).append(r)
    others = [r for r in templates if r.graded is None]
    names = list(spec.notebooks)
    out = {}
    for i in range(notebooks):
        student, name = f"s{i // len(names):06d}", names[i % len(names)]
        kinds = by_notebook[name] + others
        template = kinds[(i // len(names) + i) % len(kinds)]
        task = Task(Item(student, name, base / "submitted" / student / ASSIGNMENT / f"{name}.ipynb"), f"fp-{i}")
        out[task.item.label] = dataclasses.replace(template, task=task, timestamp=TIMES[(i // len(names)) % len(TIMES)])
    return out


def extended(student: str) -> bool:
    """Whether the student has an extension (every other 3-days-late student)."""
    return int(student[1:]) % 8 == 2


def submitted_folders(base: Path, results: dict[str, Any]) -> None:
    """Each replayed student's submission folder, as `nbgrader collect` leaves it: the notebooks and timestamp.txt
    (the late step reads the time and which notebooks were handed in; nothing reads the notebooks' contents)."""
    for r in results.values():
        item = r.task.item
        item.path.parent.mkdir(parents=True, exist_ok=True)
        item.path.write_text("{}")
        if r.timestamp:
            (item.path.parent / "timestamp.txt").write_text(r.timestamp)


class PointPerStartedDay(LateSubmissionPlugin):
    """A course's own late rule: one point off per started day late (nbgrader clamps it to the notebook's score)."""

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float:
        return float(math.ceil(total_seconds_late / 86400))


def late_config(root: Path, db_url: str, base: Path) -> Any:
    """The course's config for the late step: its gradebook, the submitted folders, the late rule."""
    from traitlets.config import Config

    return Config({"CourseDirectory": {"root": str(root), "db_url": db_url, "course_id": COURSE_ID,
                                       "submitted_directory": str(base / "submitted")},
                   "AssignLatePenalties": {"plugin_class": PointPerStartedDay}})


def grant_extensions(db_url: str, students: list[str]) -> None:
    """The extensions, set as `nbgrader db`'s grant_extension sets them, in one statement (set-up, not timed)."""
    from nbgrader.api import Gradebook, SubmittedAssignment
    from sqlalchemy import update

    table = SubmittedAssignment.__table__
    with Gradebook(db_url, COURSE_ID) as gb:
        gb.db.execute(update(table).where(table.c.student_id.in_([s for s in students if extended(s)]))
                      .values(extension=EXTENSION))
        gb.db.commit()


def compared(students: list[str], count: int) -> list[str]:
    """`count` students spread evenly over the cohort, the first and the last included (all when there are fewer)."""
    if len(students) <= count:
        return list(students)
    step = (len(students) - 1) / (count - 1)
    return list(dict.fromkeys(students[round(i * step)] for i in range(count)))


def store_fast(db_url: str, root: Path, spec: Any, results: dict[str, Any]) -> tuple[float, list[Any]]:
    """The production writer, timed: (seconds, rows); then whether its cost per notebook grows with the cohort."""
    from autograder.grading.store.gradebook import GradebookWriter
    from autograder.grading.store.journal import Journal
    from autograder.grading.store.writer import Paths, Writer

    tasks = [r.task for r in results.values()]
    stages: dict[str, list[float]] = {}  # stage -> each notebook's share, in the order stored

    def clock(_notebook: str, stage: str, seconds: float) -> None:
        stages.setdefault(stage, []).append(seconds)

    t0 = time.perf_counter()
    journal = Journal(root, b"\0" * 32)
    with GradebookWriter.open(db_url, COURSE_ID, ASSIGNMENT) as gradebook:
        gradebook.register_students([t.item.student for t in tasks])
        writer = Writer(gradebook, spec, Paths(lambda s: root / "autograded" / s / ASSIGNMENT, root / "release" / ASSIGNMENT),
                        journal, clock)
        try:
            rows = writer.run(tasks, Replay(dict(results)), progress=False)
        finally:
            writer.close()
            journal.close()
    seconds = time.perf_counter() - t0
    print(f"writer: {len(writer.groups)} transactions, {max(writer.groups)} notebooks in the largest")
    fifth = max(1, len(tasks) // 5)
    print(f"writer, ms a notebook in each fifth of the {len(tasks)} stored, in order (does it grow with the journal "
          "and the gradebook?): " + "; ".join(
              f"{stage.removeprefix('store: ')} " + " ".join(f"{1000 * sum(v[i:i + fifth]) / len(v[i:i + fifth]):.2f}"
                                                            for i in range(0, fifth * 5, fifth) if v[i:i + fifth])
              for stage, v in stages.items()))
    return seconds, rows


def finish_fast(db_url: str, root: Path, base: Path, rows: list[Any]) -> float:
    """The steps after grading (`finish.steps.finish`: times and late penalties in bulk, other files), timed."""
    from nbgrader.coursedir import CourseDirectory

    from autograder.grading.discover.course import Course
    from autograder.grading.finish.steps import finish
    from autograder.grading.store.gradebook import GradebookWriter

    t0 = time.perf_counter()
    with GradebookWriter.open(db_url, COURSE_ID, ASSIGNMENT) as gradebook:
        finish(Course(CourseDirectory(config=late_config(root, db_url, base)), root), ASSIGNMENT, rows, gradebook)
    return time.perf_counter() - t0


def finish_plain(db_url: str, root: Path, base: Path, students: list[str], notebooks: list[str]) -> float:
    """nbgrader's own way, one notebook at a time: Autograde.init_assignment's time, then AssignLatePenalties; timed."""
    from nbformat.v4 import new_notebook
    from nbgrader.api import Gradebook
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.preprocessors import AssignLatePenalties

    config = late_config(root, db_url, base)
    coursedir = CourseDirectory(config=config)
    t0 = time.perf_counter()
    for student in students:
        folder = base / "submitted" / student / ASSIGNMENT
        timestamp = coursedir.get_existing_timestamp(str(folder))
        with Gradebook(db_url, COURSE_ID) as gb, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gb.update_or_create_submission(ASSIGNMENT, student, **({"timestamp": timestamp} if timestamp else {}))
        for name in notebooks:
            if (folder / f"{name}.ipynb").exists():
                step = AssignLatePenalties(config=config)
                step.log.setLevel("ERROR")  # it warns of every late notebook
                step.preprocess(new_notebook(), {"nbgrader": {"notebook": name, "assignment": ASSIGNMENT,
                                                              "student": student, "db_url": db_url}})
    return time.perf_counter() - t0


def store_plain(db_url: str, results: dict[str, Any], release: Path) -> None:
    """One notebook per transaction through nbgrader's ORM, as `nbgrader autograde` stores a notebook."""
    from nbgrader.api import Gradebook
    from nbgrader.utils import parse_utc

    from autograder.grading.grade.pipeline import not_graded
    from autograder.grading.store.gradebook import flag_box
    from autograder.grading.types import Code

    with Gradebook(db_url, COURSE_ID) as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SQLAlchemy's autoflush notes from inside nbgrader's add_submission
        for result in results.values():
            item = result.task.item
            graded = result.graded
            if graded is None:
                if result.why.code is Code.CLUSTER_LOST:
                    continue
                spec = _spec_of(gb, item.notebook)
                graded = not_graded(release / f"{item.notebook}.ipynb", spec, result.why, result.flags)
            gb.update_or_create_student(item.student)
            try:
                sub = gb.find_submission(ASSIGNMENT, item.student)
            except Exception:
                sub = gb.add_submission(ASSIGNMENT, item.student, timestamp=result.timestamp)
            sub.timestamp = parse_utc(result.timestamp)
            submitted = gb.find_submission_notebook(item.notebook, ASSIGNMENT, item.student)
            grades = {g.name: g for g in submitted.grades}
            comments = {c.name: c for c in submitted.comments}
            for grade_id, (auto, _) in graded.scores.items():
                grade = grades[grade_id]
                grade.auto_score = auto
                grade.needs_manual_grade = grade.manual_score is not None or auto is None
            for grade_id, text in graded.comments.items():
                comments[grade_id].auto_comment = text
            flagged = flag_box(list(dict.fromkeys(graded.flags)), None)
            if flagged is not None:
                submitted.flagged = flagged
            gb.db.commit()


_SPECS: dict[str, Any] = {}


def _spec_of(gb: Any, notebook: str) -> Any:
    from autograder.grading.discover.assignment import load_assignment

    if not _SPECS:
        _SPECS.update(load_assignment(gb.db.get_bind().url.render_as_string(hide_password=False), ASSIGNMENT).notebooks)
    return _SPECS[notebook]


def export(db_url: str, cwd: Path, to: Path, students: list[str]) -> list[dict[str, str]]:
    """`nbgrader export` of these students (ExportPlugin.student), its rows sorted by student."""
    env = support.env()
    env.pop("NBGRADER_EXECUTION", None)
    config = to.with_suffix(".config.py")
    config.write_text(f"c = get_config()\nc.ExportPlugin.student = {students!r}\n")
    done = subprocess.run([os.path.join(support.BIN, "nbgrader"), "export", f"--CourseDirectory.db_url={db_url}",
                           f"--CourseDirectory.course_id={COURSE_ID}", f"--NbGrader.config_file={config}", "--to",
                           str(to)], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"nbgrader export failed: {done.stderr[-1500:]}")
    return sorted(csv.DictReader(open(to)), key=lambda r: (r["student_id"], r["assignment"]))


def fresh_postgres(url: str, template: Path, course: Path) -> None:
    """The workbook assignment generated into the (empty) PostgreSQL database at `url`."""
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    from autograder.settings import load_config

    config = load_config(str(support.ROOT / "grading_config.py"))
    config.merge(Config({"CourseDirectory": {"root": str(template), "db_url": url,
                                             "release_directory": str(course / "pg-release")}}))
    result = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config).generate_assignment(ASSIGNMENT)
    if not result["success"]:
        raise RuntimeError(f"generate_assignment into PostgreSQL failed: {result.get('error')}\n{result.get('log', '')[-3000:]}")


def measure(kind: str, url: str, plain_url: str, base: Path, spec: Any, results: dict[str, Any], release: Path,
            sample: list[str]) -> tuple[float, float, bool]:
    """Store and finish fast into `url`, the sample's students plain into `plain_url`; compare on the sample;
    (writer seconds, finish seconds, equal)."""
    from autograder.grading.types import Code
    root = base / f"{kind}-fast"
    root.mkdir()
    seconds, rows = store_fast(url, root, spec, results)
    students = list(dict.fromkeys(r.task.item.student for r in results.values()))
    grant_extensions(url, students)
    finished = finish_fast(url, root, base, rows)
    print(f"{kind}: the writer stored {len(rows)} notebooks in {seconds:.2f} s, the late step and other files of "
          f"{len(students)} students took {finished:.2f} s; now the plain store and nbgrader's own late step for "
          f"{len(sample)} of them and the comparison", flush=True)
    chosen = set(sample)
    store_plain(plain_url, {k: r for k, r in results.items() if r.task.item.student in chosen}, release)
    grant_extensions(plain_url, sample)
    plain_finish = finish_plain(plain_url, base / f"{kind}-plain", base, sample, list(spec.notebooks))
    fast = {name: [row for row in table if row[0] in chosen]
            for name, table in support.gradebook_tables(url, COURSE_ID).items()}
    plain = support.gradebook_tables(plain_url, COURSE_ID)
    same_cells = fast == plain and len(fast["grade"]) > 0
    for name in fast:
        if fast[name] != plain[name]:
            print(f"{kind}: the {name} table differs from a plain per-notebook store "
                  f"({len(fast[name])} rows vs {len(plain[name])})")
    exported = export(url, base, base / f"{kind}-fast.csv", sample)
    same_export = len(exported) == len(sample) and exported == export(plain_url, base, base / f"{kind}-plain.csv", sample)
    files = sum(1 for _ in (root / "autograded").rglob("*.ipynb"))
    stored = sum(1 for r in rows if r.status.value == "graded") + sum(
        1 for r in rows if r.status.value == "not graded" and r.reasons and r.reasons[0].code.value != "cluster-lost")
    late = sum(1 for r in rows if r.late)
    failed = [r for r in rows if r.has(Code.STEP_FAILED)]
    if failed:
        print(f"{kind}: the late step failed for {len(failed)} notebooks, e.g. {failed[0].reason}")
    sampled = sum(1 for r in results.values() if r.task.item.student in chosen)
    print(f"{kind}: {len(rows)} rows, {stored} notebooks stored, {files} autograded files, {late} late, "
          f"{len(fast['grade'])} grade rows compared on {len(sample)} of {len(students)} students (spread evenly, "
          f"the first and the last included); nbgrader export equal to a plain per-notebook store and nbgrader's "
          f"own late step: {same_export}; every gradebook row equal, cell by cell: {same_cells}")
    print(f"{kind}: the late step {1000 * finished / len(rows):.2f} ms a notebook (bulk, other files included) vs "
          f"nbgrader's own {1000 * plain_finish / sampled:.2f} ms a notebook: "
          f"{plain_finish / sampled / (finished / len(rows)):.0f}x")
    return seconds, finished, same_export and same_cells and not failed


def main() -> int:
    """Grade the templates, replay N results through the writer on SQLite (and PostgreSQL), prove, print."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notebooks", type=int, default=5000, help="graded notebooks to store (default 5000)")
    parser.add_argument("--db", metavar="URL", help="an empty PostgreSQL database to store into as well "
                        "(default: a throw-away server when Debian's postgresql is installed)")
    parser.add_argument("--only", choices=["sqlite", "postgresql"], help="store into this database kind alone")
    parser.add_argument("--compare", type=int, default=COMPARE, metavar="STUDENTS",
                        help=f"students the plain store and nbgrader's late step are run on, for the comparison "
                        f"(default {COMPARE}, spread evenly; nbgrader's way takes ~50 ms a notebook)")
    add_option(parser, "bench_store")
    args = parser.parse_args()
    if args.notebooks < 1:
        parser.error("--notebooks must be at least 1")
    if args.compare < 2:
        parser.error("--compare must be at least 2")
    with recording("bench_store", args.results) as rec:
        code = bench(args, rec)
        rec.ok = code == 0
    return code


def bench(args: argparse.Namespace, rec: Results) -> int:
    """The replay into each database kind; its figures printed and recorded."""
    # nbgrader's Gradebook runs `alembic` from PATH: this venv's, when run as `.venv/bin/python benchmarks/bench_store.py`
    os.environ["PATH"] = support.BIN + os.pathsep + os.environ.get("PATH", "")
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        base = Path(tmp)
        try:
            course, _ = workbook_course(base, 3)
        except RuntimeError as exc:
            print(exc)
            return 1
        template = base / "template"
        shutil.copytree(course, template)  # the generated gradebook, before any grade
        spec, templates = grade_templates(course)
        results = replayed(templates, spec, args.notebooks, base)
        submitted_folders(base, results)
        sample = compared(list(dict.fromkeys(r.task.item.student for r in results.values())), args.compare)
        release = base / "release" / ASSIGNMENT
        with Gradebook(f"sqlite:///{template / 'gradebook.db'}", COURSE_ID) as gb:
            gb.update_or_create_assignment(ASSIGNMENT, duedate=DUE)
        fresh = [base / "fast.db", base / "plain.db", base / "pg-plain.db"]
        for path in fresh:
            shutil.copy(template / "gradebook.db", path)
        load_before = os.getloadavg()
        lines, ok = [], True
        if args.only != "postgresql":
            s_lite, f_lite, ok = measure("sqlite", f"sqlite:///{fresh[0]}", f"sqlite:///{fresh[1]}", base, spec,
                                         results, release, sample)
            rec.figure("sqlite_store_rate", args.notebooks / s_lite, "notebooks/s", "the writer into SQLite", 0)
            rec.figure("sqlite_finish_rate", args.notebooks / f_lite, "notebooks/s",
                       "late penalties and other files (finish.steps.finish), SQLite", 0)
            lines += [f"finish: {args.notebooks} notebooks in {f_lite:.2f} s: {args.notebooks / f_lite:.0f} "
                      "notebooks/s (sqlite)",
                      f"store: {args.notebooks} notebooks in {s_lite:.2f} s: {args.notebooks / s_lite:.0f} "
                      "notebooks/s (sqlite)"]
        pg: contextlib.AbstractContextManager[str | None] = contextlib.nullcontext(args.db)
        if args.only == "sqlite":
            pg = contextlib.nullcontext(None)
        elif not args.db:
            import postgres_server

            why = postgres_server.unavailable_reason()
            pg = contextlib.nullcontext(None) if why else postgres_server.server("bench")
            if why:
                print(f"no PostgreSQL line: {why}")
        with pg as url:
            if url:
                fresh_postgres(url, template, base)
                with Gradebook(url, COURSE_ID) as gb:
                    gb.update_or_create_assignment(ASSIGNMENT, duedate=DUE)
                s_pg, f_pg, ok_pg = measure("postgresql", url, f"sqlite:///{fresh[2]}", base, spec, results, release,
                                            sample)
                ok = ok and ok_pg
                rec.figure("postgresql_store_rate", args.notebooks / s_pg, "notebooks/s", "the writer into PostgreSQL", 0)
                rec.figure("postgresql_finish_rate", args.notebooks / f_pg, "notebooks/s",
                           "late penalties and other files (finish.steps.finish), PostgreSQL", 0)
                lines.insert(len(lines) // 2, f"finish: {args.notebooks} notebooks in {f_pg:.2f} s: "
                             f"{args.notebooks / f_pg:.0f} notebooks/s (postgresql)")
                lines.append(f"store: {args.notebooks} notebooks in {s_pg:.2f} s: {args.notebooks / s_pg:.0f} "
                             "notebooks/s (postgresql)")
        print(f"load average (1, 5, 15 min) before: {' '.join(f'{x:.2f}' for x in load_before)}, after: "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
        print("\n".join(lines))
        rec.figure("notebooks", args.notebooks, "notebooks", "graded notebooks replayed through the writer", 0)
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
