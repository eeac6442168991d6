"""SafeHTML: a graded notebook that is safe to open, wherever it is rendered (feedback, the formgrader, JupyterLab).

nbconvert's HTML exporter (what `nbgrader generate_feedback` and the formgrader's submission view use) copies a
notebook's `text/html` outputs and its markdown cells into the page as they are, runs its `application/javascript`
outputs and embeds its widget state; nbgrader's feedback and formgrade templates render markdown cells without
nbconvert's `sanitize_html` switch. So a submission could run script with the instructor's Jupyter session.
Here every piece of learner content is made inert before any template sees it:

- markdown (cells and `text/markdown` outputs) is rendered to HTML by nbconvert's own renderer, cleaned by nh3
  (Ammonia), and kept as one HTML block that the template's markdown pass copies unchanged;
- `text/html` is cleaned by nh3, `image/svg+xml` by nh3 with an SVG allow-list; every URL that would make the
  browser fetch something (an image, a `url(...)`) must be relative or an inline picture, and links keep only
  http, https and mailto;
- JavaScript, widgets and every other type are dropped (the output says what was dropped), PNG and JPEG must be
  base64, output and cell metadata keep only what the templates need, and cell ids must be nbformat's ids.

The grader applies `safe_notebook` to every autograded notebook it writes, and `nbgrader_config.py` puts the
`SafeHTML` preprocessor (`safe_export.py`) into every HTML export (`HTMLExporter.preprocessors`), so a notebook plain
`nbgrader autograde` wrote (the formgrader's ⚡ button) is rendered safely too.
"""

from __future__ import annotations

import html as html_text
import re
from functools import cache, lru_cache
from typing import Any

import nh3
from nbformat import NotebookNode, from_dict

from ..lines import one_line
from ..settings import HTML_DEPTH, STANDIN_CHARS

CELL_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")  # nbformat 4.5's cell id
GRADE_ID = re.compile(r"[a-zA-Z0-9_-]+")  # nbgrader's grade_id
BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
# an inline picture (an SVG shown through <img> runs no script and fetches nothing: the graph pictures are such)
PICTURE = re.compile(r"data:image/(png|jpeg|gif|webp|svg\+xml);base64,[A-Za-z0-9+/=\s]*", re.I)
LINK_SCHEMES = {"http", "https", "mailto"}
KEPT_AS_IS = {"text/plain", "text/latex", "application/json"}  # shown escaped by the templates, or not shown
PICTURES = {"image/png", "image/jpeg"}
SVG_TAGS = {"svg", "g", "path", "rect", "circle", "ellipse", "line", "polyline", "polygon", "text", "tspan", "defs",
            "marker", "title", "desc", "lineargradient", "radialgradient", "stop", "clippath", "mask", "pattern", "symbol"}
SVG_ATTRIBUTES = {
    "xmlns", "viewBox", "width", "height", "x", "y", "x1", "x2", "y1", "y2", "cx", "cy", "r", "rx", "ry", "d", "points",
    "fill", "fill-opacity", "fill-rule", "stroke", "stroke-width", "stroke-opacity", "stroke-dasharray", "stroke-linecap",
    "stroke-linejoin", "opacity", "font-family", "font-size", "font-weight", "font-style", "text-anchor",
    "dominant-baseline", "transform", "marker-start", "marker-mid", "marker-end", "refX", "refY", "markerWidth",
    "markerHeight", "markerUnits", "orient", "id", "class", "offset", "stop-color", "stop-opacity", "gradientUnits",
    "gradientTransform", "clip-path", "clipPathUnits", "preserveAspectRatio", "role", "aria-label", "dx", "dy",
    "patternUnits", "mask",
}
METADATA_KEYS = {"width", "height", "unconfined", "alt"}  # what the templates read of an output's metadata
LANGUAGE_INFO = {"name", "version", "file_extension", "mimetype", "pygments_lexer", "nbconvert_exporter"}
MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>&$~|])")  # what can start markup or HTML inside a line


def escape_markdown(text: str) -> str:
    """Text the grader writes into markdown (a flag, an exception's name, a reason), shown as the text it is."""
    return MARKDOWN_SPECIAL.sub(r"\\\1", one_line(text))


def _fetches(value: str) -> bool:
    """True when a URL, as an image source, would make the browser fetch it from a server (or run it)."""
    v = "".join(value.split()).lower()
    return not (PICTURE.fullmatch(value.strip()) or (":" not in v.split("/", 1)[0] and not v.startswith("//")))


def _attribute(tag: str, attribute: str, value: str) -> str | None:
    """nh3's attribute filter: no fetch from a server, no `url(...)` other than a reference inside the picture."""
    if attribute in ("src", "srcset", "poster", "background") and _fetches(value):
        return None
    # `data:` passes nh3's schemes for inline pictures only: an image's source that PICTURE matches, never a link
    if attribute not in ("src", "srcset") and "".join(value.split()).lower().startswith("data:"):
        return None
    if "url(" in value.replace(" ", "").lower() and not value.replace(" ", "").lower().startswith("url(#"):
        return None
    return value


@cache
def _pygments_classes() -> set[str]:
    from pygments.token import STANDARD_TYPES

    return {c for c in STANDARD_TYPES.values() if c}


# the classes the grader's own check and summary outputs carry (the feedback page and its tests find them by class)
OWN_CLASSES = {"autograder-check", "autograder-evidence", "autograder-lead", "autograder-reproduce",
               "autograder-summary", "autograder-markdown"}


@cache
def _attributes() -> dict[str, set[str]]:
    # nh3's allow-list, plus inline `style` (what the check outputs' colours and wrapping use; `_attribute` refuses a
    # `url(...)` in it, so a style can fetch nothing) and the accessibility attributes
    allowed = {tag: set(names) for tag, names in nh3.ALLOWED_ATTRIBUTES.items()}
    allowed["*"] = allowed.get("*", set()) | {"style", "role", "aria-label", "title"}
    return allowed


class TooDeep(ValueError):
    """Learner HTML nested deeper than HTML_DEPTH: not given to nh3, whose cleaning is quadratic in the depth."""


TAG = re.compile(r"<(/?)([A-Za-z][^\s/>]*)([^>]*)>")
VOID_TAGS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
# tags a parser closes at their next sibling (a run of them is a list, not a nesting): not counted
SIBLING_TAGS = {"p", "li", "td", "th", "tr", "dt", "dd", "option", "optgroup", "thead", "tbody", "tfoot", "colgroup", "rt", "rp"}


def guard_depth(html: str, limit: int = HTML_DEPTH) -> None:
    """TooDeep when more than `limit` elements could be open at once (an upper bound, one pass over the tags)."""
    if html.count("<") <= limit:
        return
    depth = 0
    for m in TAG.finditer(html):
        name = m.group(2).lower()
        if name in VOID_TAGS or name in SIBLING_TAGS:
            continue
        if m.group(1):
            depth = max(0, depth - 1)
        elif not m.group(3).endswith("/"):
            depth += 1
            if depth > limit:
                raise TooDeep(f"HTML nested more than {limit} elements deep")


def clean_html(html: str) -> str:
    """Learner HTML with nothing that runs or fetches: nh3's allow-list, no class but syntax colours and the grader's own."""
    guard_depth(str(html))
    classes = {tag: OWN_CLASSES for tag in ("div", "span", "details", "summary", "pre", "table", "p")}
    classes["span"] = classes["span"] | _pygments_classes()
    classes["div"] = classes["div"] | {"highlight"}
    return nh3.clean(str(html), url_schemes=LINK_SCHEMES | {"data"}, attribute_filter=_attribute, allowed_classes=classes,
                     attributes=_attributes(), clean_content_tags={"script", "style"})


def clean_svg(svg: str) -> str:
    """A learner SVG with only drawing elements and presentation attributes (no script, link, foreign HTML or fetch)."""
    guard_depth(str(svg))
    return nh3.clean(str(svg), tags=SVG_TAGS, attributes={"*": SVG_ATTRIBUTES}, attribute_filter=_attribute,
                     url_schemes=set(), link_rel=None, clean_content_tags={"script", "style"})


# Markdown up to this many characters is rendered once per batch: every submission holds the released notebook's
# markdown cells unchanged, and rendering them was most of the time spent making a notebook safe
MEMO_MARKDOWN = 8192


def safe_markdown(text: str) -> str:
    """Markdown rendered and cleaned, as one HTML block (no blank line) that a markdown renderer copies unchanged."""
    text = str(text)
    return _remembered_markdown(text) if len(text) <= MEMO_MARKDOWN else _render_markdown(text)


@lru_cache(maxsize=1024)  # (a pure function of the text; at most ~1024 x 8 KiB of text held, plus its HTML)
def _remembered_markdown(text: str) -> str:
    return _render_markdown(text)


def _render_markdown(text: str) -> str:
    from nbconvert.filters.markdown import markdown2html_mistune

    return _html_block(clean_html(markdown2html_mistune(text)))


def _html_block(html: str) -> str:
    """HTML as one markdown HTML block, which a markdown renderer copies unchanged."""
    # a blank line would end the HTML block and send the rest through markdown again: keep every line non-blank
    lines = [line if line.strip() else "<span></span>" + line for line in html.split("\n")]
    return '<div class="autograder-markdown">' + "\n".join(lines).rstrip() + "</div>"


def _safe_output(output: Any) -> Any:
    """An output with only inert content (see the module's docstring); drops are said in text/plain."""
    kind = output.get("output_type")
    if kind in ("stream", "error"):
        return output
    data, dropped = {}, []
    for mime, value in dict(output.get("data", {})).items():
        text = "".join(value) if isinstance(value, list) else value
        if mime in KEPT_AS_IS:
            data[mime] = value
        elif mime in PICTURES and isinstance(text, str) and BASE64.fullmatch(text):
            data[mime] = text
        elif mime == "text/html" and isinstance(text, str):
            data[mime] = clean_html(text)
        elif mime == "text/markdown" and isinstance(text, str):
            data[mime] = safe_markdown(text)
        elif mime == "image/svg+xml" and isinstance(text, str):
            data[mime] = clean_svg(text)
        else:
            dropped.append(mime)
    if dropped and "text/plain" not in data:
        data["text/plain"] = f"[not shown by the grader: {', '.join(dropped)} output]"
    meta = output.get("metadata") if isinstance(output.get("metadata"), dict) else {}
    safe_meta = {m: {k: v for k, v in meta[m].items() if k in METADATA_KEYS and isinstance(v, (int, float, str, bool))}
                 for m in data if isinstance(meta.get(m), dict)}
    out = {"output_type": kind, "data": data, "metadata": safe_meta}
    if kind == "execute_result":
        out["execution_count"] = output.get("execution_count")
    return from_dict(out)


def _safe_cell_metadata(cell: Any) -> dict[str, Any]:
    nbg = cell.get("metadata", {}).get("nbgrader")
    if isinstance(nbg, dict) and isinstance(nbg.get("grade_id"), str) and GRADE_ID.fullmatch(nbg["grade_id"]):
        return {"nbgrader": nbg}
    return {}


def safe_metadata(metadata: Any) -> dict[str, Any]:
    """A notebook's metadata as the templates may read it: the kernel's and language's names, nothing else."""
    out: dict[str, Any] = {}
    meta = metadata if isinstance(metadata, dict) else {}
    info = meta.get("language_info")
    if isinstance(info, dict):
        out["language_info"] = {k: v for k, v in info.items() if k in LANGUAGE_INFO and isinstance(v, str)}
    spec = meta.get("kernelspec")
    if isinstance(spec, dict):
        out["kernelspec"] = {k: v for k, v in spec.items() if k in ("name", "display_name", "language") and isinstance(v, str)}
    return out


def safe_notebook(nb: NotebookNode) -> NotebookNode:
    """The notebook, in place, with every piece of learner content inert (see the module's docstring)."""
    nb.metadata = from_dict(safe_metadata(nb.get("metadata")))
    for i, cell in enumerate(nb.cells):
        try:
            safe_cell(cell, i)
        except TooDeep as exc:
            standin_cell(cell, i, str(exc))
    return nb


def safe_cell(cell: Any, i: int) -> Any:
    """Cell `i` of a notebook, in place, with its learner content inert (the grader makes each cell safe on its own)."""
    cell.metadata = from_dict(_safe_cell_metadata(cell))
    if "id" in cell and not (isinstance(cell.id, str) and CELL_ID.fullmatch(cell.id)):
        cell.id = f"cell-{i}"
    cell.pop("attachments", None)
    if cell.cell_type == "markdown":
        cell.source = safe_markdown(cell.source)
    elif cell.cell_type == "raw":
        cell.source = clean_html(cell.source)
    elif cell.cell_type == "code":
        cell.outputs = [_safe_output(o) for o in cell.get("outputs", [])]
    return cell


def _plain(text: Any) -> str:
    text = "".join(text) if isinstance(text, list) else str(text)
    return text if len(text) <= STANDIN_CHARS else text[:STANDIN_CHARS] + f" … ({len(text) - STANDIN_CHARS} more characters)"


def standin_cell(cell: Any, i: int, why: str) -> Any:
    """Cell `i`, in place, with its learner content shown as plain text (escaped, cut at STANDIN_CHARS) and a note
    saying why: what stands for a cell that could not be made safe (`why`). No renderer or sanitiser runs."""
    cell.metadata = from_dict(_safe_cell_metadata(cell))
    if "id" in cell and not (isinstance(cell.id, str) and CELL_ID.fullmatch(cell.id)):
        cell.id = f"cell-{i}"
    cell.pop("attachments", None)
    note = f"[not shown as it was written: {why}; as plain text]"
    if cell.cell_type in ("markdown", "raw"):
        cell.source = _html_block(f"<p><em>{html_text.escape(note)}</em></p><pre>{html_text.escape(_plain(cell.source))}</pre>")
    elif cell.cell_type == "code":
        outputs = []
        for out in cell.get("outputs", []):
            if out.get("output_type") in ("stream", "error"):
                outputs.append(out)
                continue
            data = out.get("data", {}) if isinstance(out.get("data"), dict) else {}
            plain = _plain(data["text/plain"]) + "\n" if "text/plain" in data else ""
            kept = {"output_type": out.get("output_type"), "data": {"text/plain": plain + note}, "metadata": {}}
            if out.get("output_type") == "execute_result":
                kept["execution_count"] = out.get("execution_count")
            outputs.append(from_dict(kept))
        cell.outputs = outputs
    return cell
