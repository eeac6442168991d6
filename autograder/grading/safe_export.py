"""SafeHTML: nbconvert's HTML export (feedback, the formgrader's view) renders only notebooks `safe_html` made inert.

Its own module, so that the `grade` command, which calls `safe_html.safe_notebook` itself, never imports nbconvert's
preprocessors (and the Jupyter server modules they pull in) at start-up.
"""

from __future__ import annotations

from typing import Any

from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool

from .safe_html import safe_notebook


class SafeHTML(Preprocessor):
    """nbconvert preprocessor: `safe_notebook` before any template renders the notebook (feedback, formgrader)."""

    enabled = Bool(True, help="nbconvert runs only enabled preprocessors; this one is the point of being listed").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        return safe_notebook(nb), resources
