"""`python -m autograder`: check one file, or batch-grade a course."""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from traitlets import TraitError

from . import __version__, checks, notebook, probes, report
from .checks import NOT_IMPLEMENTED, Check, CheckResult, run_checks
from .checks.messages import hint_level
from .lines import one_line
from .loader import NOT_DONE, CheckCell, Loaded, UnreadableFile, load
from .settings import Hints, Limits, Tolerance, load_config


class UsageError(Exception):
    """Bad command-line usage; the message is one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """The command line: `check PATH [--json]` and `grade ...`."""
    parser = _Parser(prog="python -m autograder", description=__doc__)
    parser.add_argument("--version", action="version", version=f"autograd-workbook {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    p = sub.add_parser("check", help="run the check catalog on a .py file or a notebook")
    p.add_argument("path", help="a .py file or an .ipynb notebook")
    p.add_argument("--json", action="store_true", help="print JSON instead of lines")
    p.add_argument("--all", action="store_true",
                   help="run the whole catalogue on the file's final definitions (a notebook's own check cells "
                        "otherwise); a .py file always gets the whole catalogue")
    p.add_argument("--config", help="an nbgrader_config.py with Tolerance/Limits settings")
    g = sub.add_parser("grade", help="batch-grade the submissions of an assignment in an nbgrader course")
    g.add_argument("assignment", help="the assignment, as in submitted/<student>/<assignment>/")
    g.add_argument("--course", help="the course directory (default: the config's, else $AUTOGRADER_COURSE_DIR or ./course)")
    g.add_argument("--student", action="append", dest="students", metavar="ID", help="grade only this student (repeatable)")
    g.add_argument("--jobs", type=int, default=0, help="notebooks graded at a time (default: BatchGrading.jobs, else one more than the "
                   "CPUs, as many as fit in memory)")
    g.add_argument("--force", action="store_true", help="regrade submissions that are already graded and unchanged")
    g.add_argument("--csv", dest="csv_path", metavar="FILE", nargs="?", const="",
                   help="also write the summary as CSV (default FILE: <course>/<assignment>-summary.csv)")
    g.add_argument("--config", help="the course's nbgrader_config.py (default: $AUTOGRADER_CONFIG, else ./nbgrader_config.py)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    g.add_argument("--dry-run", action="store_true",
                   help="list the notebooks that would be graded and why (one line per reason), and write nothing")
    g.add_argument("--cluster", metavar="ADDRESS",
                   help="grade on a Dask cluster: its scheduler's address (tcp://host:8786), its scheduler file, or "
                        "module:Class configured by Dask's config (dask_jobqueue:SLURMCluster; --jobs then sets the workers)")
    g.add_argument("--unsafe-no-sandbox", action="store_true",
                   help="grade without the OS sandbox (learner code runs as you and can read and change your files); "
                        "every row is marked UNSANDBOXED")
    m = sub.add_parser("similarity", help="rank pairs of students by the rare code their solution cells share (evidence, "
                       "not a verdict): a page and a CSV in the course's reports/")
    m.add_argument("assignment", help="the assignment, as in submitted/<student>/<assignment>/")
    m.add_argument("--course", help="the course directory (default: as for grade)")
    m.add_argument("--config", help="the course's nbgrader_config.py (default: as for grade); Similarity.* settings")
    e = sub.add_parser("extension", help="give a student more time for an assignment (0 removes the extension)")
    e.add_argument("assignment")
    e.add_argument("student")
    for unit in ("days", "hours", "minutes"):
        e.add_argument(f"--{unit}", type=float, default=0.0, help=f"{unit} past the due date")
    e.add_argument("--config", help="the course's nbgrader_config.py (default: as for grade)")
    return parser


def extension_command(args: argparse.Namespace) -> int:
    """Record the extension on the student's submission row, where nbgrader reads it; print the new deadline."""
    from nbgrader.coursedir import CourseDirectory

    from .grading.store.gradebook import grant_extension

    extra = datetime.timedelta(days=args.days, hours=args.hours, minutes=args.minutes)
    if extra.total_seconds() < 0:
        raise UsageError("an extension cannot be negative")
    coursedir = CourseDirectory(config=load_config(grading_config_path(args.config)))
    try:
        grant_extension(coursedir, args.assignment, args.student, extra)
    except LookupError as exc:
        raise UsageError(str(exc)) from None
    print(extension_text(args.student, args.assignment, due_date(coursedir, args.assignment), extra))
    return 0


def due_date(coursedir: Any, assignment: str) -> datetime.datetime | None:
    """The assignment's due date in the gradebook (UTC, as nbgrader keeps it), or None when none is set."""
    from nbgrader.api import Gradebook

    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        return gb.find_assignment(assignment).duedate


def _when(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _span(extra: datetime.timedelta) -> str:
    """'2 days', '1 day 3 hours', '90 minutes': an extension as a person says it."""
    minutes = round(extra.total_seconds() / 60)
    days, minutes = divmod(minutes, 1440)
    hours, minutes = divmod(minutes, 60)
    parts = [f"{n} {unit}{'s' if n != 1 else ''}" for n, unit in ((days, "day"), (hours, "hour"), (minutes, "minute")) if n]
    return " ".join(parts) or "0 minutes"


def extension_text(student: str, assignment: str, due: datetime.datetime | None, extra: datetime.timedelta) -> str:
    """The line `extension` prints: the student's new deadline (or that none is set yet)."""
    if not extra:
        when = f": due {_when(due)} like everyone" if due else ""
        return f"{student}: no extension for {assignment}{when}"
    if due is None:
        return (f"{student}: {assignment} gets {_span(extra)} past the due date, which is not set yet "
                f"(nbgrader db assignment add {assignment} --duedate=...)")
    return f"{student}: {assignment} now due {_when(due + extra)} ({_span(extra)} after the due date, {_when(due)})"


def grading_config_path(given: str | None) -> str | None:
    """--config, else $AUTOGRADER_CONFIG, else nbgrader_config.py (or the older grading_config.py) here."""
    if given or os.environ.get("AUTOGRADER_CONFIG"):
        return given or os.environ["AUTOGRADER_CONFIG"]
    for name in ("nbgrader_config.py", "grading_config.py"):
        if os.path.isfile(name):
            return name
    return None


def looked_at(path: str | None, given: str | None) -> str:
    """Which config the grader read, and why that one, for an error that says where it looked."""
    if path is None:
        return f"config: none (no nbgrader_config.py in {os.getcwd()}, no --config, no $AUTOGRADER_CONFIG)"
    why = "--config" if given else "$AUTOGRADER_CONFIG" if os.environ.get("AUTOGRADER_CONFIG") else "found here"
    return f"config: {os.path.abspath(path)} ({why})"


def grade_command(args: argparse.Namespace) -> int:
    """Batch-grade; print the summary table; 0 when every notebook has a recorded grade."""
    from .grading import batch

    if args.jobs < 0:
        raise UsageError("--jobs must be 0 (the default: one more than the CPUs) or more")
    if args.cluster is not None and args.unsafe_no_sandbox:
        raise UsageError("--cluster grades only in the sandbox: --unsafe-no-sandbox is for one machine")
    if args.cluster is not None and not args.cluster.strip():
        raise UsageError("--cluster needs the Dask scheduler's address")
    config_path = grading_config_path(args.config)
    try:
        config = load_config(config_path)
    except FileNotFoundError:
        raise
    except Exception as exc:
        raise UsageError(f"cannot read the config file: {type(exc).__name__}: {exc}") from None
    options = batch.Options(args.assignment, config, args.course, args.students, args.jobs, args.force, args.csv_path,
                            progress=not args.no_progress, unsafe_no_sandbox=args.unsafe_no_sandbox, cluster=args.cluster,
                            looked_at=looked_at(config_path, args.config), dry_run=args.dry_run,
                            tell=lambda line: print(line, flush=True))
    gc.freeze()  # nbgrader, SQLAlchemy and the catalogue live as long as the batch: its collections need not walk them
    try:
        batch.run(options)  # (what it made of the rows to show and the files it wrote: options.shown, options.written)
    finally:
        gc.unfreeze()
    for text in options.shown:
        print(text)
    if args.dry_run:
        return 0
    if args.cluster is None:  # (a cluster's workers run their own sandboxes)
        from .grading.grade.sandbox.client import MODE

        print(MODE.describe())
    for path in options.written:
        print(f"wrote {path}")
    return 0


def select_checks(ns: dict) -> list[Check]:
    """The spec's engine and net checks, plus the exercise checks whose names the file defines."""
    return [c for c in checks.CHECKS
            if c.group in ("engine", "net") or (c.group == "exercise" and not probes.missing(c.name, ns))]


def check_file(path: str, config_path: str | None = None) -> list[CheckResult]:
    """Load PATH and run the selected checks; load problems are named in the not-implemented messages."""
    config = load_config(config_path)
    tolerance, limits = Tolerance(config=config), Limits(config=config)
    loaded = load(path, limits.cell_timeout)
    with hint_level(Hints(config=config).level):
        results = run_checks(select_checks(loaded.namespace), loaded.namespace, tolerance=tolerance, limits=limits)
    _note_problems(results, loaded.problems)
    return results


def _note_problems(results: list[CheckResult], problems: list[str]) -> None:
    if problems:
        note = "; ".join(problems[:3])
        for r in results:
            if r.status == NOT_IMPLEMENTED:
                r.message += f" (while loading: {note})"


@dataclass
class CellResults:
    """One check cell of a notebook, run where it stands: its results and its points as nbgrader scores them."""

    cell: CheckCell
    results: list[CheckResult]
    max_points: float
    hidden: list[bool]  # per result: from a `check(..., hidden=True)` call (the instructor's solutions have them)

    @property
    def points(self) -> float:
        """The cell's points only when every check in it passes, as nbgrader scores a grade cell."""
        return self.max_points if self.results and all(r.passed for r in self.results) else 0.0


def check_notebook(path: str, config_path: str | None = None) -> list[CellResults] | None:
    """Run a notebook's check cells, each where it stands (as its check cells do); None when it has none.

    Every `check(...)` call is judged on a copy of the namespace as it stands at its cell, so what later cells do
    (a demo that calls backward() a second time) never reaches an earlier check, and no check's run reaches the
    cells after it. A call whose checks fail ends its cell, as CheckFailed does under nbgrader.
    """
    config = load_config(config_path)
    tolerance, limits = Tolerance(config=config), Limits(config=config)
    cells: list[CellResults] = []
    shown = notebook.Shown()

    def at_check(cell: CheckCell, loaded: Loaded) -> None:
        ns = loaded.namespace
        results: list[CheckResult] = []
        hidden_of: list[bool] = []
        for names, hidden in cell.calls:
            known = [n for n in names if n in checks.BY_NAME]
            with hint_level(Hints(config=config).level):
                got = run_checks([checks.get(n) for n in known], dict(ns), hidden=hidden, tolerance=tolerance,
                                 limits=limits)
            results += [shown.note(r) for r in got]
            hidden_of += [hidden] * len(got)
            if not all(r.passed for r in got):
                break
        most = cell.points if cell.points is not None else sum(r.max_points for r, h in zip(results, hidden_of) if not h)
        # what broke above this cell (a stub that still raises says so in its own message already)
        _note_problems(results, [p for p in loaded.problems if not p.endswith(NOT_DONE)])
        cells.append(CellResults(cell, results, most, hidden_of))

    load(path, limits.cell_timeout, at_check=at_check)
    return cells or None


def notebook_text(cells: list[CellResults]) -> str:
    """Each check cell's results in order, then the points as nbgrader scores the grade cells."""
    lines = [ln for c in cells for r, hidden in zip(c.results, c.hidden)
             for ln in ([f"{report.PASS} {r.name} (hidden inputs)"] if hidden and r.passed else report.result_lines(r))]
    score, total = sum(c.points for c in cells), sum(c.max_points for c in cells)
    lines.append(f"score: {score:g} / {total:g}")  # a check cell's points only when every check in it passes
    return "\n".join(lines)


def notebook_json(cells: list[CellResults]) -> str:
    """{"score", "max_score", "checks": [...], "cells": [...]}: the checks as for a file, plus the cells' points."""
    results = [r for c in cells for r in c.results]
    return json.dumps({"score": sum(c.points for c in cells), "max_score": sum(c.max_points for c in cells),
                       "checks": [r.to_dict() for r in results],
                       "cells": [{"cell": c.cell.label, "grade_id": c.cell.grade_id, "points": c.points,
                                  "max_points": c.max_points, "checks": [r.name for r in c.results]} for c in cells]},
                      indent=2, ensure_ascii=False)


def similarity_command(args: argparse.Namespace) -> int:
    """Compare the class's solution cells; print the top of the ranking and where the page is."""
    from .grading.types import GradingError
    from .similarity.command import main_lines
    from .similarity.handout import SimilarityError

    try:
        config = load_config(grading_config_path(args.config))
    except FileNotFoundError:
        raise
    except Exception as exc:
        raise UsageError(f"cannot read the config file: {type(exc).__name__}: {exc}") from None
    try:
        lines = main_lines(args.assignment, config, args.course)
    except (GradingError, SimilarityError) as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot write the similarity report: {exc.strerror or exc}") from None
    print("\n".join(lines))
    return 0


# What the `similarity` extra installs (copydetect and what it needs): a missing one is named in one line
SIMILARITY_MODULES = {"copydetect", "pygments", "numpy", "jinja2", "markupsafe"}
# What the `course` extra installs (grading, extensions, reading notebooks): a missing one is named in one line
COURSE_MODULES = {"nbgrader", "nbformat", "nbclient", "jupyterlab", "ipykernel", "sqlalchemy", "alembic"}


def warm_for(argv: Sequence[str]) -> None:
    """For `grade`, read by the one parser main() uses: start what grading will need (the workers' fork server, the
    helpers that read and render notebooks, or the cluster connection) while the rest of the grader imports."""
    if argv[:1] != ["grade"] or any(a in ("-h", "--help") for a in argv):  # (help prints once, from main())
        return
    try:
        args = build_parser().parse_args(argv)
    except UsageError:
        return  # main() says why, in one line
    if args.cluster is not None and args.unsafe_no_sandbox:
        return  # refused by grade_command
    from .grading.grade.nbgrader_light import lean_start

    lean_start()
    if args.cluster is not None:
        # the Dask workers run the sandboxes (the driver runs no learner code): ask them to start theirs now
        from .grading.grade.cluster import start_early

        start_early(args.cluster, args.jobs)
        return
    from .grading.grade.bounded import HELPERS  # the helpers that read and render notebooks: their imports, meanwhile

    HELPERS.warm()
    if args.unsafe_no_sandbox:
        from .grading.grade.sandbox.client import forkserver_context

        forkserver_context(start=True)
    else:
        from .grading.grade.sandbox.client import MODE

        MODE.pool.warm()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (0 passed, 1 failed, 2 usage or unreadable input)."""
    try:
        args = build_parser().parse_args(argv)
        if args.command is None:
            raise UsageError("a command is required: check PATH [--json] | grade ASSIGNMENT [...] | similarity ASSIGNMENT | "
                             "extension ... (see --help)")
        if args.command == "check":
            cells = None if args.all or not args.path.endswith(".ipynb") else check_notebook(args.path, args.config)
            if cells is not None:
                print(notebook_json(cells) if args.json else notebook_text(cells))
                return 0 if all(r.passed for c in cells for r in c.results) else 1
            results = check_file(args.path, args.config)
            print(report.as_json(results) if args.json else report.human(results))
            return 0 if all(r.passed for r in results) else 1
        if args.command == "extension":
            return extension_command(args)
        if args.command == "similarity":
            return similarity_command(args)
        if args.command == "grade":
            # nbgrader takes seconds to import, and `check` (a learner's every keystroke) never needs it
            from .grading.grade.sandbox.client import Unavailable
            from .grading.types import GradingError

            try:
                return grade_command(args)
            except (GradingError, Unavailable) as exc:
                print(f"autograder: error: {one_line(exc)}", file=sys.stderr)
                return 2
    except (UsageError, UnreadableFile, FileNotFoundError) as exc:
        print(f"autograder: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] in SIMILARITY_MODULES:
            print(f"autograder: error: this needs the similarity extra ({exc.name} is not installed): "
                  "pip install 'autograd-workbook[similarity]'", file=sys.stderr)
            return 2
        if (exc.name or "").split(".")[0] not in COURSE_MODULES:
            raise
        print(f"autograder: error: this needs the course extra ({exc.name} is not installed): "
              "pip install 'autograd-workbook[course]'", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("autograder: interrupted", file=sys.stderr)
        return 130
    except TraitError as exc:  # a value of the wrong kind in the config, found when a command reads its settings
        print(f"autograder: error: a setting in the config is not valid: {one_line(exc)}", file=sys.stderr)
        return 2
    return 2  # pragma: no cover - every command returns above
