"""TEMPORARY: the probe API the worker calls, forwarded to today's catalogue until diag's `autograder.probes` lands.

The agreed API (see the sandbox/diag interface): `missing(check_name, ns)` and `observe(check_name, ns, case,
check_timeout)`, both returning plain JSON. This shim still needs the answer side (catalog, check, numeric, ...),
so inside the sandbox those modules are staged under a separate package name (`sandbox.ANSWER_SIDE_TEMP`) and the
test that a worker holds no answer-side module is xfail until this file is deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

try:  # inside the sandbox: the staged copy (the real package name is not importable there)
    from autograder_answer_side_temporary import catalog, safe  # type: ignore[import-not-found]
    from autograder_answer_side_temporary.check import missing_targets  # type: ignore[import-not-found]
    from autograder_answer_side_temporary.check import observe as _observe
    from autograder_answer_side_temporary.settings import Limits  # type: ignore[import-not-found]
except ImportError:  # the unsandboxed (--unsafe-no-sandbox) worker
    from autograder import catalog, safe
    from autograder.check import missing_targets
    from autograder.check import observe as _observe
    from autograder.settings import Limits

CHECK_NAMES = frozenset(catalog.BY_NAME)
SUSPICIONS: list[str] = safe.SUSPICIONS  # what read_number caught lying (drained by the worker after each observe)


def missing(check_name: str, ns: Mapping[str, Any]) -> list[str]:
    """The targets of the check the learner's namespace does not define yet."""
    return missing_targets(catalog.get(check_name), ns)


def observe(check_name: str, ns: Mapping[str, Any], case: dict[str, Any], check_timeout: float) -> dict[str, Any]:
    """Run the check's probe on the learner's namespace for one case; plain JSON back."""
    return _observe(catalog.get(check_name), ns, case, Limits(check_timeout=check_timeout))


def walk_graph(root: Any, limit: int = 300) -> tuple[list[Any], dict[int, list[Any]]]:
    """The graph walker the workbook's picture uses (generic probe scaffolding, no answers)."""
    return catalog.walk_graph(root, limit)
