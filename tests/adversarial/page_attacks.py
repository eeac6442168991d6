"""Learner content that goes after the pages a person opens (issue 33, classes 3 and 4): one line per attack.

Each `Attack` is a payload for one place of a notebook: a markdown cell, a raw cell, or an output of a MIME type
(with its metadata). In a payload, `CANARY` is the canary server's URL for that attack (http://127.0.0.1:PORT/NAME),
`HOST` the canary's host and port, `NAME` the attack's name and `JS` a script (no space, no double quote) that
records the attack's name in `window.__pwned` if it ever runs. A new attack is one more line in ATTACKS.

`hostile_notebook` puts them all into a notebook as a kernel would have left it (what plain `nbgrader autograde`
writes, and what the formgrader and feedback render); `hostile_cells` as a learner's code that displays them (what
this grader runs in its sandbox and writes itself).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import nbformat

SVG = 'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="40" height="20"'
BAD_PNG = "iVBORw0KGgo="  # a PNG header alone: the browser fails to decode it, so an `onerror` would fire
OVERLAY_TEXT = "✓ All 5 checks passed: 5 / 5"
OVERLAY_STYLE = ("position:fixed;top:0;left:0;width:100vw;height:100vh;z-index:2147483647;background:#fff;"
                 "opacity:1;font-size:40px")


@dataclass(frozen=True)
class Attack:
    """One payload, where it goes, and whether it only works by navigating (which a page's policy does not govern)."""

    name: str
    where: str  # "markdown", "raw", or the MIME type of a display_data output
    payload: str
    metadata: dict[str, Any] = field(default_factory=dict)  # the output's metadata for its MIME type
    navigates: bool = False  # a navigation (meta refresh, a form): only the sanitiser stops it, not the policy
    fetches: bool = True  # False: it runs script or fakes the verdict, fetching nothing

    def text(self, canary: str) -> str:
        """The payload for a canary at `canary` (http://127.0.0.1:PORT)."""
        return fill(self.payload, self.name, canary)


def fill(text: str, name: str, canary: str) -> str:
    js = f"(window.__pwned=window.__pwned||[]).push('{name}')"
    return (text.replace("CANARY", f"{canary}/{name}").replace("HOST", canary.split("://", 1)[1])
            .replace("NAME", name).replace("JS", js))


def _a(name: str, where: str, payload: str, **kw: Any) -> Attack:
    return Attack(name, where, payload, **kw)


def _js(name: str, where: str, payload: str, **kw: Any) -> Attack:
    return Attack(name, where, payload, fetches=False, **kw)


HTML, SVGX, MD = "text/html", "image/svg+xml", "markdown"

ATTACKS: list[Attack] = [
    # ---- class 3: URLs a browser reads as another host (WHATWG: `\` is `/`), controls, tabs and newlines
    _a("img_backslash_slash", HTML, '<img alt="x" src="/\\HOST/NAME.png">'),
    _a("img_two_backslashes", HTML, '<img alt="x" src="\\\\HOST/NAME.png">'),
    _a("img_backslash_then_slash", HTML, '<img alt="x" src="\\/HOST/NAME.png">'),
    _a("img_leading_controls", HTML, '<img alt="x" src="\x01\x02 //HOST/NAME.png">'),
    _a("img_tab_newline_in_scheme", HTML, '<img alt="x" src="ht\ttp:\n//HOST/NAME.png">'),
    _a("img_entity_tab_in_scheme", HTML, '<img alt="x" src="ht&#9;tp://HOST/NAME.png">'),
    _a("img_absolute", HTML, '<img alt="x" src="CANARY">'),
    _a("img_srcset", HTML, '<img alt="x" srcset="CANARY 1x">'),
    _a("picture_source_srcset", HTML, '<picture><source srcset="CANARY"><img alt="x"></picture>'),
    _a("input_image", HTML, '<input type="image" alt="x" src="CANARY">'),
    _a("video_poster", HTML, '<video poster="CANARY"></video>'),
    _a("audio_autoplay", HTML, '<audio src="CANARY" autoplay></audio>'),
    _a("iframe_src", HTML, '<iframe src="CANARY"></iframe>'),
    _a("object_data", HTML, '<object data="CANARY"></object>'),
    _a("embed_src", HTML, '<embed src="CANARY">'),
    _a("table_background", HTML, '<table background="CANARY"><tr><td>x</td></tr></table>'),
    _a("link_stylesheet", HTML, '<link rel="stylesheet" href="CANARY">'),
    _a("link_prefetch", HTML, '<link rel="prefetch" href="CANARY">'),
    _a("base_href", HTML, '<base href="CANARY/"><img alt="x" src="relative.png">'),
    _a("meta_refresh", HTML, '<meta http-equiv="refresh" content="0;url=CANARY">', navigates=True),
    _a("form_autofocus_submit", HTML, '<form action="CANARY"><input autofocus name="q" onfocus="this.form.submit()"></form>',
       navigates=True),
    # ---- class 3: CSS that fetches: image-set, -webkit-image-set, escapes a regex on `url(` does not see
    _a("style_url", HTML, '<div style="background:url(CANARY)">x</div>'),
    _a("style_image_set", HTML, "<div style=\"background-image:image-set('CANARY' 1x)\">x</div>"),
    _a("style_webkit_image_set", HTML, "<div style=\"background-image:-webkit-image-set('CANARY' 1x)\">x</div>"),
    _a("style_escape_u72l", HTML, '<div style="background:u\\72l(CANARY)">x</div>'),
    _a("style_escape_url28", HTML, '<div style="background-image:url\\28 CANARY)">x</div>'),
    _a("style_escape_image_set", HTML, "<div style=\"background-image:image\\2d set('CANARY' 1x)\">x</div>"),
    _a("style_list_style_image", HTML, '<ul style="list-style-image:url(CANARY)"><li>x</li></ul>'),
    _a("style_cursor", HTML, '<div style="cursor:url(CANARY),auto">x</div>'),
    _a("style_element_import", HTML, "<style>@import url(CANARY);</style>"),
    _a("style_element_background", HTML, "<style>body{background:url(CANARY)}</style>"),
    _a("style_element_font", HTML, "<style>@font-face{font-family:p;src:url(CANARY)}body{font-family:p}</style>x"),
    _a("style_in_markdown", MD, "<div style=\"background:image-set('CANARY' 1x)\">x</div>"),
    # ---- class 3: SVG that fetches (as an output, and inside HTML)
    _a("svg_image_href", SVGX, f'<svg {SVG}><image href="CANARY" width="10" height="10"/></svg>'),
    _a("svg_image_xlink_href", SVGX, f'<svg {SVG}><image xlink:href="CANARY" width="10" height="10"/></svg>'),
    _a("svg_use_href", SVGX, f'<svg {SVG}><use href="CANARY#x"/></svg>'),
    _a("svg_fill_url", SVGX, f'<svg {SVG}><rect width="10" height="10" fill="url(CANARY#p)"/></svg>'),
    _a("svg_fill_escaped_url", SVGX, f'<svg {SVG}><rect width="10" height="10" fill="u\\72l(CANARY#p)"/></svg>'),
    _a("svg_style_fill_url", SVGX, f'<svg {SVG}><rect width="10" height="10" style="fill:url(CANARY#p)"/></svg>'),
    _a("svg_feimage", SVGX, f'<svg {SVG}><filter id="f"><feImage href="CANARY"/></filter>'
                            '<rect width="9" height="9" filter="url(#f)"/></svg>'),
    _a("svg_inside_html", HTML, '<svg width="20" height="20"><image href="CANARY" width="10" height="10"/></svg>'),
    # ---- class 3: markdown images and links (rendered by the grader, then cleaned)
    _a("markdown_image_backslash", MD, "![x](/\\HOST/NAME.png)"),
    _a("markdown_image_absolute", MD, "![x](CANARY)"),
    _a("markdown_image_reference", MD, "![x][r]\n\n[r]: CANARY"),
    _a("markdown_output_image", "text/markdown", "![x](\\\\HOST/NAME.png)"),
    _a("raw_cell_image", "raw", '<img alt="x" src="/\\HOST/NAME.png">'),
    _a("png_metadata_filenames", "image/png", BAD_PNG, metadata={"filenames": {"image/png": "CANARY"}}),
    # ---- class 3: a verdict faked over the grader's own (the grader's class names, the page's own fixed classes)
    _js("overlay_grader_classes", HTML,
        f'<div class="autograder-check panel-heading" style="{OVERLAY_STYLE}">{OVERLAY_TEXT}</div>'),
    _js("overlay_in_markdown", MD, f'<div class="autograder-check" style="{OVERLAY_STYLE}">{OVERLAY_TEXT}</div>'),
    _js("overlay_page_fixed_classes", HTML, f'<div class="modal-backdrop navbar-fixed-top in">{OVERLAY_TEXT}</div>'),
    _js("overlay_svg_classes", SVGX, f'<svg {SVG} class="modal-backdrop navbar-fixed-top"><text y="15">x</text></svg>'),
    _js("overlay_hijacks_anchor", HTML, '<svg width="9" height="9"><g id="top"></g></svg><a name="top">top</a>'),
    # ---- class 4: live script (metadata written unquoted, tags, handlers, javascript: URLs, SVG script)
    _js("png_metadata_width", "image/png", BAD_PNG, metadata={"width": "1 onerror=JS"}),
    _js("png_metadata_height", "image/png", BAD_PNG, metadata={"height": "1 onerror=JS"}),
    _js("jpeg_metadata_width", "image/jpeg", "/9j/", metadata={"width": "1 onerror=JS"}),
    _js("png_metadata_alt", "image/png", BAD_PNG, metadata={"alt": '" onerror="JS'}),
    _js("html_metadata_isolated", HTML, "<script>JS</script>", metadata={"isolated": True}),
    _js("script_tag", HTML, "<script>JS</script>"),
    _js("img_onerror", HTML, '<img alt="x" src="x" onerror="JS">'),
    _js("details_ontoggle", HTML, '<details open ontoggle="JS"><summary>x</summary></details>'),
    _js("javascript_href", HTML, '<a href="javascript:JS">x</a>'),
    _js("javascript_href_tab", HTML, '<a href="java\tscript:JS">x</a>'),
    _js("javascript_href_entity", HTML, '<a href="jav&#x09;ascript&colon;JS">x</a>'),
    _js("javascript_href_leading_control", HTML, '<a href="\x01 javascript:JS">x</a>'),
    _js("javascript_href_case", HTML, '<a href="JaVaScRiPt:JS">x</a>'),
    _js("javascript_iframe", HTML, '<iframe src="javascript:JS"></iframe>'),
    _js("iframe_srcdoc", HTML, '<iframe srcdoc="<script>JS</script>"></iframe>'),
    _js("math_mutation", HTML, '<math><mtext><table><mglyph><style><img src=x onerror="JS">'),
    _js("noscript_mutation", HTML, '<noscript><p title="</noscript><img src=x onerror=JS>">'),
    _js("svg_script", SVGX, f"<svg {SVG}><script>JS</script></svg>"),
    _js("svg_onload", SVGX, f'<svg {SVG} onload="JS"></svg>'),
    _js("svg_animate_onbegin", SVGX, f'<svg {SVG}><rect width="9" height="9"><animate attributeName="x" from="0" to="1" '
                                     'dur="1s" onbegin="JS"/></rect></svg>'),
    _js("svg_a_javascript", SVGX, f'<svg {SVG}><a href="javascript:JS"><text y="10">x</text></a></svg>'),
    _js("svg_set_href", SVGX, f'<svg {SVG}><a><set attributeName="href" to="javascript:JS"/><text y="10">x</text></a></svg>'),
    _js("javascript_output", "application/javascript", "JS"),
    _js("markdown_script", MD, "<script>JS</script>"),
    _js("markdown_javascript_link", MD, "[x](javascript:JS)"),
    _js("markdown_javascript_link_entity", MD, "[x](javascript&#58;JS)"),
    _js("markdown_img_onerror", MD, '<img src="x" onerror="JS">'),
    _js("markdown_output_script", "text/markdown", "<script>JS</script>"),
    _js("raw_cell_script", "raw", "<script>JS</script>"),
    _js("latex_output_script", "text/latex", "</div><script>JS</script>"),
]
BY_NAME = {a.name: a for a in ATTACKS}
assert len(BY_NAME) == len(ATTACKS), "two attacks share a name"


def _output(attack: Attack, canary: str) -> nbformat.NotebookNode:
    data = {attack.where: attack.text(canary), "text/plain": attack.name}
    meta = {attack.where: json.loads(fill(json.dumps(attack.metadata), attack.name, canary))} if attack.metadata else {}
    return nbformat.v4.new_output("display_data", data=data, metadata=meta)


def _cell(attack: Attack, canary: str) -> nbformat.NotebookNode:
    if attack.where == "markdown":
        return nbformat.v4.new_markdown_cell(attack.text(canary))
    if attack.where == "raw":
        return nbformat.v4.new_raw_cell(attack.text(canary))
    out = _output(attack, canary)
    code = ("from IPython.display import display\n"
            f"display({dict(out.data)!r}, raw=True, metadata={dict(out.metadata)!r})")
    return nbformat.v4.new_code_cell(code, outputs=[out])


def hostile_cells(canary: str) -> list[nbformat.NotebookNode]:
    """One cell per attack: markdown and raw cells as they are, outputs as the code that displays them (and the
    output a kernel left, for a notebook no grader runs)."""
    return [_cell(a, canary) for a in ATTACKS]


def hostile_notebook(canary: str, test_cell: dict[str, Any] | None = None) -> nbformat.NotebookNode:
    """Every attack in one notebook. With `test_cell` (nbgrader metadata of a test cell), the output attacks are also
    the outputs of that test cell: where plain nbgrader's kernel writes the grader's verdicts."""
    cells = hostile_cells(canary)
    if test_cell is not None:
        outputs = [_output(a, canary) for a in ATTACKS if a.where not in ("markdown", "raw")]
        cells.append(nbformat.v4.new_code_cell('check("add_forward")', outputs=outputs, metadata={"nbgrader": test_cell}))
    return nbformat.v4.new_notebook(cells=cells)
