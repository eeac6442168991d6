"""The `autograder` package as a notebook sees it inside the grading sandbox: no checks, no answers.

Staged by `sandbox.stage()` as `autograder/__init__.py`. Grade cells never call `check` while grading (the grader
replaces them with its own protocol), so `check` here only says where the checks run. Importing any part of the
grader (`autograder.catalog`, `autograder.check` as a module, `autograder.grading.grade.runner`...) fails with
ImportError, and the attempt raises the audit event `autograder.grader_module`, which the worker reports.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from typing import Any

__all__ = ["CheckFailed", "check"]
__version__ = "sandboxed"
GRADER_MODULE_EVENT = "autograder.grader_module"


def staged_modules(root: str) -> frozenset[str]:
    """Every module staged below `root` (the staged `autograder` folder), by its name: nothing else of the grader's."""
    names = {"autograder"}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        rel = os.path.relpath(folder, root)
        parts = ["autograder", *([] if rel == "." else rel.split(os.sep))]
        names.update(".".join(parts + ([] if f == "__init__.py" else [f[:-3]])) for f in files if f.endswith(".py"))
    return frozenset(names)


# The modules staged next to this file (sandbox.inside lists them): everything else named autograder.* stays outside.
STAGED = staged_modules(os.path.dirname(os.path.abspath(__file__))) if __name__ == "autograder" else frozenset()


class CheckFailed(AssertionError):
    """Some check failed (raised by the grader's verdicts, never here)."""


def check(*names: str, hidden: bool = False, ns: Any = None) -> None:
    """Inside the grading sandbox the grader runs the checks itself, from outside; this call only says so."""
    print(f"(checks {', '.join(names)}: run by the grader, outside this process)")


class GraderModules:
    """A meta path finder that refuses every `autograder.*` module that is not staged, and reports the attempt."""

    @classmethod
    def find_spec(cls, fullname: str, path: Sequence[str] | None = None, target: Any = None) -> ModuleSpec | None:
        if fullname.split(".")[0] != "autograder" or fullname in STAGED:
            return None
        sys.audit(GRADER_MODULE_EVENT, fullname)
        raise ModuleNotFoundError(f"No module named {fullname!r}: the grader's modules are not available while grading",
                                  name=fullname)


if __name__ == "autograder" and GraderModules not in sys.meta_path:  # staged in the sandbox, not when imported here
    sys.meta_path.insert(0, GraderModules)
