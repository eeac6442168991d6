"""`python -m autograder`: check one file, or batch-grade a course."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import catalog, report
from .check import Check, CheckResult, missing_targets, run_checks
from .loader import UnreadableFile, load
from .settings import Limits, Tolerance, load_config


class UsageError(Exception):
    """Bad command-line usage; the message is one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """The command line: `check PATH [--json]` and `grade ...`."""
    parser = _Parser(prog="python -m autograder", description=__doc__)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    p = sub.add_parser("check", help="run the check catalog on a .py file or a notebook")
    p.add_argument("path", help="a .py file or an .ipynb notebook")
    p.add_argument("--json", action="store_true", help="print JSON instead of lines")
    p.add_argument("--config", help="a grading_config.py with Tolerance/Limits settings")
    return parser


def select_checks(ns: dict) -> list[Check]:
    """The spec's engine and net checks, plus the exercise checks whose names the file defines."""
    return [c for c in catalog.CHECKS if c.group != "exercise" or not missing_targets(c, ns)]


def check_file(path: str, config_path: str | None = None) -> list[CheckResult]:
    """Load PATH and run the selected checks; load problems are named in the not-implemented messages."""
    config = load_config(config_path)
    tolerance, limits = Tolerance(config=config), Limits(config=config)
    loaded = load(path, limits.cell_timeout)
    results = run_checks(select_checks(loaded.namespace), loaded.namespace, tolerance=tolerance, limits=limits)
    if loaded.problems:
        note = "; ".join(loaded.problems[:3])
        for r in results:
            if r.message.startswith("not implemented yet"):
                r.message += f" (while loading: {note})"
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (0 passed, 1 failed, 2 usage or unreadable input)."""
    try:
        args = build_parser().parse_args(argv)
        if args.command is None:
            raise UsageError("a command is required: check PATH [--json] (see --help)")
        if args.command == "check":
            results = check_file(args.path, args.config)
            print(report.as_json(results) if args.json else report.human(results))
            return 0 if all(r.passed for r in results) else 1
    except (UsageError, UnreadableFile, FileNotFoundError) as exc:
        print(f"autograder: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("autograder: interrupted", file=sys.stderr)
        return 130
    return 2  # pragma: no cover - every command returns above
