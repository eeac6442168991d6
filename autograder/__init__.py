"""Grade a learner's scalar autograd engine against the grader's own numerical truth."""

from .notebook import CheckFailed, check

__all__ = ["CheckFailed", "check"]
__version__ = "0.1.0"
