"""Running code as a learner's kernel or as nbgrader does: `NBGRADER_EXECUTION` set or unset, then restored."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def nbgrader_execution(mode: str | None) -> Iterator[None]:
    """Set NBGRADER_EXECUTION to `mode` ("autograde", "validate"; None: unset, as in a learner's kernel), then restore."""
    saved = os.environ.pop("NBGRADER_EXECUTION", None)
    if mode is not None:
        os.environ["NBGRADER_EXECUTION"] = mode
    try:
        yield
    finally:  # later tests of the same process must not inherit the mode
        os.environ.pop("NBGRADER_EXECUTION", None)
        if saved is not None:
            os.environ["NBGRADER_EXECUTION"] = saved
