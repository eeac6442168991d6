"""What nbgrader's feedback page shows of the workbook: each failure once, and every test cell named.

`ShowEachFailureOnce` (a preprocessor in GenerateFeedback's list) keeps a failed check cell's ✗ diagnosis (the HTML
the check cell showed, reproduce block folded) and turns CheckFailed's copy of the same words (what Validate's
dialog needs) into one line. `FeedbackExporter` (GenerateFeedback's exporter) is nbgrader's HTML page with each
test cell named in the table of contents, after the checks it runs and the heading above it, where nbgrader's
template writes "Test cell" for every one, and with the page's Content-Security-Policy and the style sheet that boxes
learner content first in its head (page_policy.py: no script, no request to any server). Both are set in
`nbgrader_config.py` where nbgrader's converters run.
"""

from __future__ import annotations

import html
import re
from typing import Any

from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from ...loader import check_calls
from .page_policy import NOTEBOOK_CSS, inert_page

_COUNT = re.compile(r"^CheckFailed: \d+ of \d+ checks? failed")
ABOVE = "the diagnosis is above"


def _shows_verdict(output: dict[str, Any]) -> bool:
    shown = output.get("data", {}).get("text/html", "") if output.get("output_type") in ("display_data", "execute_result") else ""
    return 'class="autograder-check"' in ("".join(shown) if isinstance(shown, list) else str(shown))


class ShowEachFailureOnce(Preprocessor):
    """A failed check cell's diagnosis shown once: CheckFailed's error output, which repeats it, becomes one line."""

    enabled = Bool(True, help="nbconvert runs only enabled preprocessors").tag(config=True)

    def preprocess_cell(self, cell: Any, resources: dict[str, Any], index: int) -> tuple[Any, dict[str, Any]]:
        outputs = cell.get("outputs", []) if cell.cell_type == "code" else []
        if any(_shows_verdict(o) for o in outputs):
            for output in outputs:
                if output.get("output_type") == "error" and output.get("ename") == "CheckFailed":
                    first = (output.get("traceback") or [""])[0]
                    count = _COUNT.match(first)
                    line = f"{count.group(0)} ({ABOVE})" if count else f"CheckFailed ({ABOVE})"
                    output["traceback"] = [line]
                    output["evalue"] = line.removeprefix("CheckFailed: ")
        return cell, resources


_HTML_HEADING = re.compile(r"<h[1-6][^>]*>(.*?)</h[1-6]>", re.S)
_TAG = re.compile(r"<[^>]*>")


def _heading(markdown: str) -> str:
    """The last heading of a markdown cell as plain words ('' if it has none).

    The grader writes markdown cells as cleaned HTML (safe_html), so a heading is a `#` line or an `<hN>` element."""
    lines = [ln.lstrip("#").strip() for ln in markdown.splitlines() if ln.startswith("#")]
    lines += [html.unescape(_TAG.sub("", h)).replace("¶", "").strip() for h in _HTML_HEADING.findall(markdown)]
    return re.sub(r"^Exercise:\s*", "", lines[-1]).replace("`", "") if lines else ""


def names_of_test_cells(nb: Any) -> dict[str, str]:
    """grade_id -> the name of each test cell: the checks it runs (hidden runs aside) and the heading above it."""
    names: dict[str, str] = {}
    heading = ""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            heading = _heading(cell.source) or heading
            continue
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution") and meta.get("grade_id"):
            checks = list(dict.fromkeys(n for found, hidden in check_calls(cell.source) if not hidden for n in found))
            if len(checks) > 3 and heading:  # a long list reads worse than the section it tests
                names[str(meta["grade_id"])] = f"Test: {heading} ({len(checks)} checks)"
                continue
            label = "Test: " + (", ".join(checks) if checks else str(meta["grade_id"]))
            names[str(meta["grade_id"])] = label + (f" ({heading})" if heading else "")
    return names


class FeedbackExporter(HTMLExporter):
    """nbgrader's feedback page (its template, its preprocessors), inert (page_policy), every test cell named."""

    def from_notebook_node(self, nb: Any, resources: dict[str, Any] | None = None, **kw: Any) -> tuple[str, dict[str, Any]]:
        page, resources = super().from_notebook_node(nb, resources, **kw)
        for grade_id, name in names_of_test_cells(nb).items():
            anchor = f'<a href="#{grade_id}">'
            page = page.replace(f"{anchor}Test cell</a>", f"{anchor}{html.escape(name)}</a>")
        return inert_page(page, css=NOTEBOOK_CSS), resources
