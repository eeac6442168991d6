"""Grade a learner's scalar autograd engine against the grader's own numerical truth."""

from __future__ import annotations

from typing import Any

__all__ = ["CheckFailed", "check"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # Loaded on first use, so that importing the probe side (autograder.probes) loads no answer-side module.
    if name in ("check", "CheckFailed"):
        from . import notebook

        return getattr(notebook, name)
    raise AttributeError(f"module 'autograder' has no attribute {name!r}")
