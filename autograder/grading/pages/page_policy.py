"""Every page a person opens is inert by construction: a Content-Security-Policy in its head, and its learner parts boxed.

The sanitiser (`safe_html`) is one defence; these are the others, which hold even where it misses something:

- `POLICY`, in a `<meta http-equiv="Content-Security-Policy">` as the first thing in the page's head: no script at
  all, no request to any server (images as `data:` only, no fonts, frames, objects or connections), inline styles
  only (the page's own CSS and the grader's colours), no `<base>` and no form submission. `inert_page` puts it into
  a page another writer built (the feedback page, the class report, the similarity page);
- `formgrader_policy`: the formgrader's view of a submission needs its own scripts (jQuery, Backbone, the grading
  form), so there only scripts that carry the page's nonce run; everything else is as strict as `POLICY`, but for
  the formgrader's own style sheets, fonts and API on the Jupyter server that serves it;
- `NOTEBOOK_CSS`: every block that holds notebook content (an output, a rendered markdown cell, a raw cell) is a
  paint-containment box. Whatever a learner's markup does inside it (even `position: fixed` over the whole page, if a
  style ever got through), it is laid out and painted inside its own box, and cannot cover the grader's score, its
  check verdicts or the formgrader's grading form.

Math is shown as the TeX the learner wrote (no MathJax: it is a script, and it came from a CDN).
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path

# no script, no request to any server, inline styles only, no <base>, no form submission
POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

# the nbconvert page's blocks that hold notebook content: outputs, rendered markdown, and a raw cell (which the
# classic template writes straight into the notebook's container, outside any cell)
NOTEBOOK_CSS = (".output_subarea, .text_cell_render, #notebook-container > :not(.cell) "
                "{ contain: paint; isolation: isolate; }")

TEMPLATES = Path(__file__).resolve().parent / "templates"
_HEAD = re.compile(r"<head(\s[^>]*)?>", re.I)
_FONT_FACE = re.compile(r"@font-face\s*\{[^}]*\}", re.I)


def formgrader_policy(nonce: str) -> str:
    """The formgrader's view: only its own scripts (they carry `nonce`), its own style sheets, fonts and API."""
    return (f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'self' 'unsafe-inline'; img-src data:; "
            "font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'")


def new_nonce() -> str:
    """A fresh script nonce for one page (128 bits, URL-safe)."""
    return secrets.token_urlsafe(16)


def policy_meta(policy: str = POLICY) -> str:
    """The `<meta>` element that puts `policy` in force for everything after it in the page."""
    return f'<meta http-equiv="Content-Security-Policy" content="{policy}">'


def inert_page(page: str, policy: str = POLICY, css: str = "") -> str:
    """`page` with `policy` (and `css`, a style sheet) as the first elements of its head.

    The page's own head comes before any learner content, so the policy is in force before anything a learner wrote
    is parsed. A page without a head is refused: it would be written without its policy. The head's own `@font-face`
    rules (bootstrap's icon font, inlined in nbgrader's feedback page) are dropped: no font loads under `POLICY`, and
    Chromium reports each refused font as an error in the console."""
    head = _HEAD.search(page)
    if head is None:
        raise ValueError("the page has no <head>: it cannot carry its Content-Security-Policy")
    body = page.find("<body", head.end())
    own = page[head.end():body if body >= 0 else len(page)]
    if policy == POLICY:
        own = _FONT_FACE.sub("", own)
    extra = policy_meta(policy) + (f"\n<style>{css}</style>" if css else "")
    return page[:head.end()] + "\n" + extra + own + (page[body:] if body >= 0 else "")


FORMGRADE_PAGE = "autograder_formgrade.html.j2"  # the formgrader's view: nbgrader's, with an inert head and bar


def template_basedirs() -> list[str]:
    """nbconvert's template folders for the feedback page (`HTMLExporter.extra_template_basedirs`, which nbgrader's
    GenerateFeedback leaves to the course's configuration): the project's first, where `classic/mathjax.html.j2` is a
    `mathjax()` that loads nothing (nbconvert's asks a CDN), then nbgrader's own feedback and formgrade templates."""
    from importlib.util import find_spec

    spec = find_spec("nbgrader")  # its folder, without importing it (the grader reads this config at start-up)
    nbgrader = Path(spec.submodule_search_locations[0]) if spec and spec.submodule_search_locations else None
    return [str(TEMPLATES)] + ([str(nbgrader / "server_extensions" / "formgrader" / "templates")] if nbgrader else [])
