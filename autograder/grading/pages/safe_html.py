r"""SafeHTML: a graded notebook that is safe to open, wherever it is rendered (feedback, the formgrader, JupyterLab).

nbconvert's HTML exporter (what `nbgrader generate_feedback` and the formgrader's submission view use) copies a
notebook's `text/html` outputs and its markdown cells into the page as they are, runs its `application/javascript`
outputs and embeds its widget state; nbgrader's feedback and formgrade templates render markdown cells without
nbconvert's `sanitize_html` switch, and write an image's `width` and `height` from its metadata without quotes. So a
submission could run script with the instructor's Jupyter session. Here every piece of learner content is made inert
before any template sees it:

- markdown (cells and `text/markdown` outputs) is rendered to HTML by nbconvert's own renderer, cleaned by nh3
  (Ammonia), and kept as one HTML block that the template's markdown pass copies unchanged; math stays as its TeX;
- `text/html` is cleaned by nh3, `image/svg+xml` by nh3 with an SVG allow-list. Every URL is judged as a browser
  parses it (WHATWG: controls, tabs and newlines dropped, `\` read as `/`): an image shows only an inline picture
  (`data:` PNG, JPEG, GIF, WebP, SVG), a link keeps only an absolute http, https or mailto URL, and no relative
  reference survives (`//host`, `\\host`, `/\host` name another host);
- learner content keeps no `style` attribute and no class but syntax colours, so it can neither style nor cover the
  page's own parts; SVG ids are prefixed (`learner-`), and an SVG paint refers only to them (`url(#id)`, parsed);
- the grader's own outputs (the verdicts in test cells) keep their classes and an allow-list of inline style
  properties, each value parsed as CSS (tinycss2): no `url`, `image-set`, escape or other function that fetches;
- JavaScript, widgets and every other type are dropped (the output says what was dropped), PNG and JPEG must be
  base64, output and cell metadata keep only what the templates need (an image's width and height only as numbers,
  since the templates write them unquoted), execution counts only as numbers, and cell ids must be nbformat's ids.

The pages themselves forbid script and every request to a server, and box learner content (page_policy.py), so an
element this cleaning missed would still do nothing. The grader applies `safe_notebook` to every autograded notebook
it writes, and `nbgrader_config.py` puts the `SafeHTML` preprocessor (`safe_export.py`) into every HTML export
(`HTMLExporter.preprocessors`), so a notebook plain `nbgrader autograde` wrote (the formgrader's ⚡ button) is
rendered safely too.
"""

from __future__ import annotations

import html as html_text
import math
import re
from functools import cache, lru_cache
from typing import Any

import nh3
from nbformat import NotebookNode, from_dict

from ...lines import one_line
from ...settings import HTML_DEPTH, LARGEST_IMAGE, STANDIN_CHARS

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
    "markerHeight", "markerUnits", "orient", "id", "offset", "stop-color", "stop-opacity", "gradientUnits",
    "gradientTransform", "clip-path", "clipPathUnits", "preserveAspectRatio", "role", "aria-label", "dx", "dy",
    "patternUnits", "mask",
}
METADATA_KEYS = {"width", "height", "unconfined", "alt"}  # what the templates read of an output's metadata
LANGUAGE_INFO = {"name", "version", "file_extension", "mimetype", "pygments_lexer", "nbconvert_exporter"}
MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>&$~|])")  # what can start markup or HTML inside a line


def escape_markdown(text: str) -> str:
    """Text the grader writes into markdown (a flag, an exception's name, a reason), shown as the text it is."""
    return MARKDOWN_SPECIAL.sub(r"\\\1", one_line(text))


# ---------------------------------------------------------------- URLs, as a browser reads them

C0_OR_SPACE = "".join(map(chr, range(0x21)))  # what WHATWG URL parsing strips from both ends of a URL
SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def browser_url(value: str) -> str:
    r"""`value` as the WHATWG URL parser reads it before anything else: leading and trailing C0 controls and spaces
    stripped, every tab and newline removed (so `java\tscript:` is `javascript:`), `\` read as `/` (as it is for
    http, https and file, the schemes a feedback page is served with: `/\host` is `//host`, another host)."""
    return re.sub(r"[\t\n\r]", "", value.strip(C0_OR_SPACE)).replace("\\", "/")


def url_scheme(value: str) -> str | None:
    """The scheme a browser gives `value` (lower case), or None for a reference relative to the page."""
    match = SCHEME.match(browser_url(value))
    return match.group(0)[:-1].lower() if match else None


def inline_picture(value: str) -> bool:
    """True for a `data:` PNG, JPEG, GIF, WebP or SVG picture in base64: what an image may show (nothing fetched)."""
    return bool(PICTURE.fullmatch(re.sub(r"[\t\n\r]", "", value.strip(C0_OR_SPACE))))


FETCHED = {"src", "srcset", "poster", "background", "data", "action", "formaction", "ping", "longdesc", "cite",
           "xlink:href", "dynsrc", "lowsrc", "manifest", "codebase", "archive", "profile", "usemap", "icon"}
NAVIGATED = {"href"}


def url_allowed(attribute: str, value: str) -> bool:
    r"""Whether an attribute that fetches or navigates may keep `value`, judged as a browser parses it: an image's
    source only an inline picture, a link only http, https or mailto to an absolute URL; no relative reference
    (a network-path one such as `//host`, `\\host` or `/\host` names another host), nothing else that fetches."""
    if attribute == "src":
        return inline_picture(value)
    if attribute in NAVIGATED:
        return url_scheme(value) in LINK_SCHEMES
    return attribute not in FETCHED


# ---------------------------------------------------------------- CSS, parsed (tinycss2: CSS Syntax Level 3)

# the grader's own outputs (a check's verdict) may style text: colour, weight, font, wrapping, indentation
OWN_STYLE = {"color", "background-color", "font-weight", "font-style", "font-family", "font-size", "white-space",
             "text-align", "vertical-align", "margin-left", "display", "cursor"}
CSS_FUNCTIONS = {"rgb", "rgba", "hsl", "hsla", "var"}
SVG_TRANSFORMS = {"translate", "rotate", "scale", "matrix", "skewx", "skewy"}
SVG_PAINT = {"fill", "stroke", "marker-start", "marker-mid", "marker-end", "clip-path", "mask"}  # may hold url(#id)
TOKENS = {"whitespace", "comment", "ident", "number", "percentage", "dimension", "hash", "string"}


def css_value_inert(value: str, functions: set[str] = CSS_FUNCTIONS, fragment: bool = False, negative: bool = False) -> bool:
    r"""True when a CSS value can fetch nothing: parsed as a browser tokenises it (escapes such as `u\72l(` read as
    `url(`), only plain tokens and the `functions` named; `url(#id)` only with `fragment`; no backslash at all; a
    negative number only with `negative` (SVG coordinates)."""
    if "\\" in value:  # an escape hides a name from any check but a full parser's: never needed here
        return False
    import tinycss2

    def inert(tokens: list[Any]) -> bool:
        for t in tokens:
            if t.type in ("number", "percentage", "dimension") and t.value < 0 and not negative:
                return False  # a negative margin or offset moves a box over its neighbours
            if t.type in TOKENS or (t.type == "literal" and t.value in (",", "/", "+", "%", ".")):
                continue
            if t.type == "url" and fragment and t.value.startswith("#"):
                continue
            if t.type == "function" and t.lower_name in functions and inert(t.arguments):
                continue
            return False  # a url, image-set, -webkit-image-set, a block, an at-keyword, a parse error, ...
        return True

    return inert(tinycss2.parse_component_value_list(value))


def own_style(style: str) -> str | None:
    """The grader's own inline style with only the properties in OWN_STYLE, each with an inert value."""
    return _remembered_style(style) if len(style) <= MEMO_MARKDOWN else _own_style(style)


@lru_cache(maxsize=256)  # (a pure function of the text: the verdicts repeat a few styles, ~1,400 times in 72 notebooks)
def _remembered_style(style: str) -> str | None:
    return _own_style(style)


def _own_style(style: str) -> str | None:
    import tinycss2

    kept = [f"{d.lower_name}:{tinycss2.serialize(d.value).strip()}"
            for d in tinycss2.parse_blocks_contents(style, skip_whitespace=True, skip_comments=True)
            if d.type == "declaration" and d.lower_name in OWN_STYLE and not d.important
            and css_value_inert(tinycss2.serialize(d.value))]
    return ";".join(kept) or None


# ---------------------------------------------------------------- HTML and SVG


@cache
def _html_attribute(own: bool) -> Any:
    """nh3's attribute filter for learner HTML (own=False) or the grader's own outputs (own=True)."""

    def judge(tag: str, attribute: str, value: str) -> str | None:
        if attribute == "style":
            return own_style(value) if own else None
        if not url_allowed(attribute, value):
            return None
        return value

    return judge


def _svg_attribute(tag: str, attribute: str, value: str) -> str | None:
    """A learner SVG's attribute: presentation values that fetch nothing (a reference only to its own `#id`)."""
    if attribute == "xmlns":
        return value if value == SVG_NAMESPACE else None
    if not url_allowed(attribute, value):
        return None
    if attribute in SVG_PAINT or attribute == "transform":
        functions = SVG_TRANSFORMS if attribute == "transform" else CSS_FUNCTIONS
        if not css_value_inert(value, functions, fragment=attribute in SVG_PAINT, negative=True):
            return None
        return value.replace("url(#", "url(#" + LEARNER_ID)  # the ids are prefixed the same way (id_prefix)
    return value


@cache
def _pygments_classes() -> set[str]:
    from pygments.token import STANDARD_TYPES

    return {c for c in STANDARD_TYPES.values() if c}


# the classes the grader's own check outputs carry (the feedback page and its tests find them by class); learner
# content keeps none of them, and no class the page's CSS gives a place or a size (only syntax colours)
OWN_CLASSES = {"autograder-check", "autograder-evidence", "autograder-lead", "autograder-reproduce"}
LEARNER_ID = "learner-"  # the prefix of every id in learner SVG: none matches the page's own ids and anchors
SVG_NAMESPACE = "http://www.w3.org/2000/svg"
TAGS = set(nh3.ALLOWED_TAGS) - {"area", "map"}  # nh3's (no script, form, frame, style, link or meta), no image maps


@cache
def _attributes(own: bool) -> dict[str, set[str]]:
    # nh3's allow-list less the URL attributes nothing here needs (`cite`), plus the accessibility attributes; the
    # grader's own outputs also keep `style` (own_style parses it and keeps an allow-list of inert properties)
    allowed = {tag: set(names) - {"cite"} for tag, names in nh3.ALLOWED_ATTRIBUTES.items()}
    allowed["*"] = allowed.get("*", set()) | {"role", "aria-label", "title"} | ({"style"} if own else set())
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


@cache
def _classes(own: bool) -> dict[str, set[str]]:
    """Classes kept per tag: syntax colours (and the grader's own on its own outputs)."""
    mine = OWN_CLASSES if own else set()
    classes = {tag: set(mine) for tag in ("div", "span", "details", "summary", "pre", "table", "p")}
    classes["span"] |= _pygments_classes()
    classes["div"] |= {"highlight"}
    return classes


def clean_html(html: str, own: bool = False) -> str:
    """HTML with nothing that runs, fetches or styles the page: nh3's allow-list, URLs judged as a browser reads
    them, no `style` and no class but syntax colours. `own`: the grader's own verdict (a test cell's output), which
    keeps its classes and a parsed allow-list of inline style. TooDeep past HTML_DEPTH open elements."""
    html = str(html)
    return _remembered_html(html, own) if len(html) <= MEMO_MARKDOWN else _clean_html(html, own)


@lru_cache(maxsize=1024)  # (a pure function of the text: the verdicts of a check repeat across a class's notebooks)
def _remembered_html(html: str, own: bool) -> str:
    return _clean_html(html, own)  # (TooDeep is raised each time: lru_cache keeps no exception)


def _clean_html(html: str, own: bool) -> str:
    guard_depth(html)
    return nh3.clean(html, tags=TAGS, url_schemes=LINK_SCHEMES | {"data"}, url_relative="deny",
                     attribute_filter=_html_attribute(own), allowed_classes=_classes(own), attributes=_attributes(own),
                     filter_style_properties=OWN_STYLE, clean_content_tags={"script", "style"})


def clean_svg(svg: str) -> str:
    """A learner SVG with only drawing elements and presentation attributes (no script, link, foreign HTML, fetch,
    style or class; its ids prefixed so that none is one of the page's). TooDeep past HTML_DEPTH open elements."""
    guard_depth(str(svg))
    return nh3.clean(str(svg), tags=SVG_TAGS, attributes={"*": SVG_ATTRIBUTES}, attribute_filter=_svg_attribute,
                     url_schemes=set(), url_relative="deny", link_rel=None, id_prefix=LEARNER_ID,
                     clean_content_tags={"script", "style"})


# Markdown, HTML and the grader's own styles up to this many characters are made safe once per process: every
# submission holds the released notebook's markdown cells unchanged, and the verdicts of a check repeat across a
# class (rendering and cleaning them, and parsing their styles, was most of the time spent making a notebook safe)
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

    return _html_block(_clean_html(markdown2html_mistune(text), own=False))  # (remembered as markdown, not again as HTML)


def _html_block(html: str) -> str:
    """HTML as one markdown HTML block, which a markdown renderer copies unchanged."""
    # a blank line would end the HTML block and send the rest through markdown again: keep every line non-blank
    lines = [line if line.strip() else "<span></span>" + line for line in html.split("\n")]
    return "<div>" + "\n".join(lines).rstrip() + "</div>"


def _dimension(value: Any) -> int | float | None:
    """An image's width or height as the number it must be (the templates write it without quotes), else None."""
    if isinstance(value, str) and re.fullmatch(r"[0-9]{1,6}", value.strip()):
        value = int(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return value if 0 <= value <= LARGEST_IMAGE else None
    return None


def _safe_output_metadata(meta: dict[str, Any]) -> dict[str, Any]:
    """What the templates read of one type's metadata: numeric width and height, a yes/no unconfined, an alt text."""
    out: dict[str, Any] = {}
    for key in ("width", "height"):
        number = _dimension(meta.get(key))
        if number is not None:
            out[key] = number
    if isinstance(meta.get("unconfined"), bool):
        out["unconfined"] = meta["unconfined"]
    if isinstance(meta.get("alt"), str):  # written quoted and escaped
        out["alt"] = meta["alt"]
    return out


def _count(value: Any) -> int | None:
    """An execution count as nbformat has it (the templates write it into the page as it is)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _safe_output(output: Any, own: bool = False) -> Any:
    """An output with only inert content (see the module's docstring); drops are said in text/plain. `own`: the
    grader's own verdict (an output of a test cell)."""
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
            data[mime] = clean_html(text, own=own)
        elif mime == "text/markdown" and isinstance(text, str):
            data[mime] = safe_markdown(text)
        elif mime == "image/svg+xml" and isinstance(text, str):
            data[mime] = clean_svg(text)
        else:
            dropped.append(mime)
    if dropped and "text/plain" not in data:
        data["text/plain"] = f"[not shown by the grader: {', '.join(dropped)} output]"
    meta = output.get("metadata") if isinstance(output.get("metadata"), dict) else {}
    safe_meta = {m: _safe_output_metadata(meta[m]) for m in data if isinstance(meta.get(m), dict)}
    out = {"output_type": kind, "data": data, "metadata": safe_meta}
    if kind == "execute_result":
        out["execution_count"] = _count(output.get("execution_count"))
    return from_dict(out)


def _test_cell(cell: Any) -> bool:
    """A test cell: its outputs are the grader's verdicts (this grader writes them itself; plain nbgrader's kernel
    ran the grader's checks for them)."""
    nbg = cell.get("metadata", {}).get("nbgrader")
    return cell.cell_type == "code" and isinstance(nbg, dict) and nbg.get("grade") is True and not nbg.get("solution")


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
        own = _test_cell(cell)
        cell.outputs = [_safe_output(o, own) for o in cell.get("outputs", [])]
        cell.execution_count = _count(cell.get("execution_count"))
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
                kept["execution_count"] = _count(out.get("execution_count"))
            outputs.append(from_dict(kept))
        cell.outputs = outputs
        cell.execution_count = _count(cell.get("execution_count"))
    return cell
