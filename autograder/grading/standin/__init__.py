"""The `autograder` package as a notebook sees it inside the grading sandbox: no checks, no answers.

Staged by `sandbox.stage()` as `autograder/__init__.py`. Grade cells never call `check` while grading (the grader
replaces them with its own protocol), so `check` here only says where the checks run. Importing any part of the
grader (`autograder.catalog`, `autograder.check` as a module, `autograder.grading.runner`...) fails with
ImportError, and the attempt raises the audit event `autograder.grader_module`, which the worker reports.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from typing import Any

__all__ = ["CheckFailed", "check"]
__version__ = "sandboxed"
GRADER_MODULE_EVENT = "autograder.grader_module"
# The modules staged next to this file: everything else named autograder.* stays outside the sandbox.
STAGED = frozenset({"autograder", "autograder.workbook", "autograder.settings", "autograder.aids", "autograder.aids.data",
                    "autograder.aids.env", "autograder.aids.graph", "autograder.aids.plots", "autograder.aids.pytorch",
                    "autograder.probes", "autograder.probes.engine", "autograder.probes.exercises",
                    "autograder.probes.graphs", "autograder.probes.net", "autograder.probes.safe",
                    "autograder.grading", "autograder.grading.worker", "autograder.grading.channel", "autograder.grading.audit",
                    "autograder.grading.sandbox"})


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
