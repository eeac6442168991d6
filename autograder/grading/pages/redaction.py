"""RedactHiddenTests: nbgrader's feedback never shows hidden tests, whoever autograded the notebook.

Plain `nbgrader autograde` (and the formgrader's ⚡ Autograde button, which runs it) writes the grade cells back with
their hidden tests into `autograded/`; `nbgrader generate_feedback` would then publish them. `nbgrader_config.py`
puts this step into GenerateFeedback's list, so the feedback is safe even before this grader regrades the notebook.
"""

from __future__ import annotations

from typing import Any

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor, Preprocessor
from nbgrader.preprocessors import GetGrades
from traitlets import Bool

from .hidden_tests import HIDDEN_NOTE, replace_hidden


class RedactHiddenTests(Preprocessor):
    """Replace every hidden-tests block with a note, and the tracebacks of those cells with their last line."""

    enabled = Bool(True, help="nbconvert runs only enabled preprocessors; this one is the point of being listed").tag(config=True)

    def preprocess_cell(self, cell: Any, resources: dict[str, Any], index: int) -> tuple[Any, dict[str, Any]]:
        redacted = replace_hidden(cell.source, HIDDEN_NOTE) if cell.cell_type == "code" else cell.source
        if redacted != cell.source:
            cell.source = redacted
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":  # IPython's traceback quotes the cell's source lines
                    output["traceback"] = [f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"]
        return cell, resources


def feedback_preprocessors() -> list[type]:
    """GenerateFeedback's own list, with the hidden tests redacted after the grades are read and each failure shown
    once (feedback_page)."""
    from .feedback_page import ShowEachFailureOnce

    return [GetGrades, RedactHiddenTests, ShowEachFailureOnce, CSSHTMLHeaderPreprocessor]
