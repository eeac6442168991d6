"""SafeHTML: nbconvert's HTML export (feedback, the formgrader's view) renders only notebooks `safe_html` made inert.

It also gives the page's templates what they write into the page's head (`resources["autograder_page"]`): the
Content-Security-Policy with a fresh script nonce, and the style sheet that boxes the notebook's content
(page_policy.py); the project's `formgrade_macros.html.j2` writes them into the formgrader's view.

Its own module, so that the `grade` command, which calls `safe_html.safe_notebook` itself, never imports nbconvert's
preprocessors (and the Jupyter server modules they pull in) at start-up.
"""

from __future__ import annotations

from typing import Any

from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool

from .page_policy import NOTEBOOK_CSS, formgrader_policy, new_nonce
from .safe_html import safe_notebook


class SafeHTML(Preprocessor):
    """nbconvert preprocessor: `safe_notebook` before any template renders the notebook (feedback, formgrader)."""

    enabled = Bool(True, help="nbconvert runs only enabled preprocessors; this one is the point of being listed").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        nonce = new_nonce()
        resources["autograder_page"] = {"nonce": nonce, "policy": formgrader_policy(nonce), "css": NOTEBOOK_CSS}
        return safe_notebook(nb), resources
