"""Every page a person opens is inert by construction (issue 33): read from the HTML the project's configuration makes.

The feedback page and the formgrader's view are made as nbgrader makes them, with this repository's
nbgrader_config.py, from a notebook holding every attack of tests/adversarial/page_attacks.py (in learner cells, and
as the outputs of a test cell, where plain nbgrader's kernel writes the verdicts). The same pages are opened in
Chromium, with a canary server listening, by tests/test_browser_inert_pages.py.
"""

from __future__ import annotations

import html.parser
import os
import re
from pathlib import Path

import nbformat
import pytest
from adversarial.page_attacks import ATTACKS, BAD_PNG, OVERLAY_TEXT, hostile_notebook
from hypothesis import given
from hypothesis import strategies as st

from autograder.grading.outputs import class_report, score_changes
from autograder.grading.pages import page_policy, safe_html
from autograder.grading.pages.page_policy import POLICY

ROOT = Path(__file__).resolve().parent.parent
CANARY = "http://127.0.0.1:9"  # the discard port: a test here never opens the page, it reads it
HOST = "127.0.0.1:9"
TEST_CELL = {"grade": True, "solution": False, "locked": True, "grade_id": "check_02_add", "points": 1,
             "schema_version": 3, "score": 0}  # (the score: what GetGrades adds from the gradebook)


def project_config():
    """The HTMLExporter settings of this repository's nbgrader_config.py, as nbgrader's commands and formgrader load them."""
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()


def export(nb: nbformat.NotebookNode, template: str) -> str:
    """The page nbgrader makes of an autograded notebook: `feedback` (GenerateFeedback's exporter and settings) or
    `formgrade` (the formgrader's HTMLExporter, template and resources), with the project's configuration."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers
    from traitlets.config import Config

    from autograder.grading.pages.feedback_page import FeedbackExporter

    config = Config()
    config.merge(project_config())
    config.HTMLExporter.template_name = template  # as GenerateFeedback and the formgrader extension set it
    if template == "feedback":  # GenerateFeedback's own: bootstrap's CSS inlined
        config.HTMLExporter.extra_template_paths = [os.path.join(handlers.static_path, "node_modules", "bootstrap", "dist", "css")]
    else:  # the formgrader extension's own, which win over the course's configuration
        config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    resources = {"nbgrader": {"notebook": "02_values", "score": 0, "max_score": 5, "late_penalty": 0}, "base_url": "",
                 "notebook_id": "02_values", "assignment_id": "workbook", "submission_id": "abc", "index": 0, "total": 1,
                 "student": "mallory", "last_name": "<b>Mal</b>", "first_name": "Lory", "notebook_path": "x"}
    exporter = (FeedbackExporter if template == "feedback" else HTMLExporter)(config=config)
    return exporter.from_notebook_node(nb, resources=resources)[0]


class Elements(html.parser.HTMLParser):
    """Every start tag of a page with its attributes, in order."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def of(self, tag: str) -> list[dict[str, str]]:
        return [a for t, a in self.tags if t == tag]


def directives(policy: str) -> dict[str, list[str]]:
    return {d.split()[0]: d.split()[1:] for d in (p.strip() for p in policy.split(";")) if d}


def page_policy_of(page: Elements) -> str:
    metas = [a for a in page.of("meta") if a.get("http-equiv", "").lower() == "content-security-policy"]
    assert len(metas) == 1, f"{len(metas)} policies in the page"
    return metas[0]["content"]


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return {t: export(hostile_notebook(CANARY, test_cell=dict(TEST_CELL)), t) for t in ("feedback", "formgrade")}


# ---------------------------------------------------------------- the policy in every page


def test_both_policies_forbid_script_and_every_request_to_another_host() -> None:
    for policy in (POLICY, page_policy.formgrader_policy("n0nce")):
        d = directives(policy)
        assert d["default-src"] == ["'none'"] and d["img-src"] == ["data:"]
        assert d["base-uri"] == ["'none'"] and d["form-action"] == ["'none'"]
        for directive, sources in d.items():  # only 'self', data: pictures, a nonce or inline style: never a host
            assert all(s in ("'none'", "'self'", "data:", "'unsafe-inline'") or s.startswith("'nonce-") for s in sources), d
            assert "'unsafe-inline'" not in sources or directive == "style-src", d
    assert "script-src" not in directives(POLICY)  # default-src 'none': no script at all
    assert directives(page_policy.formgrader_policy("n0nce"))["script-src"] == ["'nonce-n0nce'"]


def test_a_page_without_a_head_is_refused_rather_than_written_without_its_policy() -> None:
    with pytest.raises(ValueError, match="no <head>"):
        page_policy.inert_page("<body><p>no head</p></body>")
    assert page_policy.inert_page("<html><HEAD lang='en'><title>t</title>").index("Content-Security-Policy") < 60


@pytest.mark.parametrize("which", ["feedback", "formgrade", "class report"])
def test_the_policy_comes_before_anything_that_could_run_or_fetch(which: str, pages: dict[str, str]) -> None:
    rows = [_Row("ada", "02_values", 5, 5, [], True), _Row("<img src=x onerror=alert(1)>", "02_values", 0, 5, [], True)]
    page = Elements(pages.get(which) or class_report.render_html("workbook", rows))
    policy = page_policy_of(page)
    first = next(i for i, (t, a) in enumerate(page.tags) if t == "meta" and a.get("http-equiv"))
    assert all(t not in ("script", "link", "style", "img", "svg", "iframe", "body") for t, _ in page.tags[:first])
    if which == "formgrade":
        nonce = directives(policy)["script-src"][0].removeprefix("'nonce-").rstrip("'")
        scripts = page.of("script")
        assert scripts and all(s.get("nonce") == nonce for s in scripts), "a script without the page's nonce"
        assert len(nonce) >= 22 and nonce != page_policy_of(Elements(export(nbformat.v4.new_notebook(), which)))
    else:
        assert policy == POLICY and not page.of("script")


# ---------------------------------------------------------------- nothing of the attacks is left live


def test_no_attack_leaves_a_url_to_another_host_a_handler_or_a_script(pages: dict[str, str]) -> None:
    for which, text in pages.items():
        page = Elements(text)
        for tag, attributes in page.tags:
            for name, value in attributes.items():
                where = f"{which}: <{tag} {name}={value[:80]!r}>"
                assert HOST not in value, where
                assert not name.startswith("on"), where
                assert safe_html.url_scheme(value) != "javascript", where
                assert name != "style" or not re.search(r"position|url|image-set|\\", value), where
        tags = {t for t, a in page.tags if not (t == "input" and re.fullmatch(r"(score|extra-credit) tabbable", a.get("class", "")))}
        assert not {"base", "form", "iframe", "object", "embed", "input", "video", "audio", "picture"} & tags, which
        assert not [m for m in page.of("meta") if m.get("http-equiv", "").lower() == "refresh"]
        own = [a["href"] for a in page.of("link")]
        assert all(h.startswith("/formgrader/static/") for h in own), own  # the formgrader's own style sheets only
        assert "pwned" not in text.split("<body", 1)[0]  # nothing of the notebook reached the head
        assert "Mal</b>" not in text  # the roster's names are escaped in the formgrader's bar


def test_learner_content_keeps_no_style_and_no_class_of_the_page(pages: dict[str, str]) -> None:
    for which, text in pages.items():
        page = Elements(text)
        fixed = [t for t, a in page.tags if re.search(r"modal-backdrop|navbar-fixed-top", a.get("class", ""))]
        assert fixed == (["nav"] if which == "formgrade" else []), which  # only the formgrader's own bar
        svg_ids = [a["id"] for t, a in page.tags if t in safe_html.SVG_TAGS and a.get("id")]
        assert all(i.startswith(safe_html.LEARNER_ID) for i in svg_ids), svg_ids  # (SVG outputs are shown as images)
        assert sum(1 for t, a in page.tags if a.get("id") == "top" or a.get("name") == "top") <= 1, which


def test_the_overlay_loses_its_style_and_classes_but_keeps_its_text() -> None:
    overlay = next(a for a in ATTACKS if a.name == "overlay_grader_classes").text(CANARY)
    for own in (False, True):  # a learner's output, or forged into a test cell's outputs
        cleaned = safe_html.clean_html(overlay, own=own)
        assert OVERLAY_TEXT in cleaned and "position" not in cleaned and "z-index" not in cleaned
        assert "panel-heading" not in cleaned and ("autograder-check" in cleaned) == own
        assert "style=" not in cleaned or own


def test_html_and_styles_cleaned_again_come_from_the_memo_the_same_and_as_inert(monkeypatch: pytest.MonkeyPatch) -> None:
    overlay = next(a for a in ATTACKS if a.name == "overlay_grader_classes").text(CANARY)
    long = overlay + "<p>padding</p>" * (safe_html.MEMO_MARKDOWN // 14)  # past the memo's bound: cleaned each time
    calls = {"nh3": 0, "css": 0}
    clean, parse = safe_html.nh3.clean, safe_html._own_style

    def counted(name, real):
        def call(*a, **k):
            calls[name] += 1
            return real(*a, **k)
        return call

    monkeypatch.setattr(safe_html.nh3, "clean", counted("nh3", clean))
    monkeypatch.setattr(safe_html, "_own_style", counted("css", parse))
    safe_html._remembered_html.cache_clear()
    safe_html._remembered_style.cache_clear()
    for own in (False, True):
        first = safe_html.clean_html(overlay, own=own)
        assert safe_html.clean_html(overlay, own=own) == first  # the second time from the memo: the same text
        for cleaned in (first, safe_html.clean_html(long, own=own), safe_html.clean_html(long, own=own)):
            assert OVERLAY_TEXT in cleaned and "position" not in cleaned and "z-index" not in cleaned
            assert ("autograder-check" in cleaned) == own and ("style=" not in cleaned or own)
    assert calls["nh3"] == 2 + 4  # the short text once per kind, the long one every time
    style = "color:#cf222e;font-weight:bold;margin-left:2em"
    assert [safe_html.own_style(style) for _ in range(3)] == [style] * 3
    before = calls["css"]
    assert safe_html.own_style(style) == style and calls["css"] == before  # parsed once, then remembered


def test_svg_ids_are_prefixed_and_its_paints_refer_only_to_them() -> None:
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" class="navbar-fixed-top"><defs><marker id="m"/></defs>'
           '<path id="top" d="M0 0 L9 9" marker-end="url(#m)" stroke="u\\72l(#m)" fill="url(http://127.0.0.1:9/x)"/>'
           '<rect transform="translate(1,2) rotate(3)" fill="rgb(1,2,3)" width="1" height="1"/></svg>')
    cleaned = safe_html.clean_svg(svg)
    assert 'id="learner-m"' in cleaned and 'id="learner-top"' in cleaned and 'marker-end="url(#learner-m)"' in cleaned
    assert "class=" not in cleaned and "127.0.0.1" not in cleaned and "stroke=" not in cleaned
    assert 'transform="translate(1,2) rotate(3)"' in cleaned and 'fill="rgb(1,2,3)"' in cleaned


# ---------------------------------------------------------------- the grader's own verdict keeps its look


def test_the_graders_own_verdict_keeps_its_colours_and_classes_in_a_test_cell() -> None:
    from autograder import notebook
    from autograder.checks.base import CheckResult

    results = [CheckResult("add_forward", ("__add__",), 1.0, 1.0, "ok"),
               CheckResult("mul_forward", ("__mul__",), 0.0, 1.0, "wrong: got 6.0", status="failed", repro="a * b")]
    verdict = notebook.check_outputs(results, hidden=False)
    cell = nbformat.v4.new_code_cell('check("add_forward")', metadata={"nbgrader": dict(TEST_CELL)},
                                     outputs=[nbformat.from_dict(o) for o in verdict])
    learner = nbformat.v4.new_code_cell("x", outputs=[nbformat.from_dict(o) for o in verdict])
    nb = safe_html.safe_notebook(nbformat.v4.new_notebook(cells=[cell, learner]))
    original = verdict[0]["data"]["text/html"]
    own, theirs = (c.outputs[0].data["text/html"] for c in nb.cells)

    def styles(text: str) -> list[str]:  # each element's declarations, spacing aside
        return sorted(re.sub(r"\s", "", a.get("style", "")).rstrip(";") for _, a in Elements(text).tags)

    assert styles(own) == styles(original) and own.count("autograder-") == original.count("autograder-")
    assert "style=" not in theirs and "autograder-" not in theirs  # the same HTML in a learner's cell is plain


@pytest.mark.parametrize("css", [
    "background:image-set('http://127.0.0.1:9/a' 1x)", "background-image:-webkit-image-set('http://127.0.0.1:9/a' 1x)",
    "background:u\\72l(http://127.0.0.1:9/a)", "background-image:url\\28 http://127.0.0.1:9/a)",
    "color:u\\72l(http://127.0.0.1:9/a)", "cursor:url(http://127.0.0.1:9/a),auto", "color:red;background:url(//127.0.0.1:9)",
    "font-family:image\\2d set('http://127.0.0.1:9/a' 1x)", "color:ur/**/l(http://127.0.0.1:9/a)",
    "color:var(--x,url(http://127.0.0.1:9/a))", "color:expression(alert(1))", "color:red!important;position:fixed",
    "margin-left:-9999px;position:fixed;top:0;z-index:9", "display:block;background-color:#fff;inset:0",
])
def test_a_style_that_fetches_moves_or_hides_is_never_kept_even_on_the_graders_own_output(css: str) -> None:
    kept = safe_html.own_style(css) or ""
    assert not re.search(r"url|image|\\|expression|position|z-index|inset|top|-9999", kept, re.I), kept
    assert safe_html.own_style("color:#cf222e;font-weight:bold;margin-left:2em") == "color:#cf222e;font-weight:bold;margin-left:2em"


# ---------------------------------------------------------------- URLs, as a browser parses them


@pytest.mark.parametrize(("url", "as_link", "as_image"), [
    ("https://example.org/a", True, False), ("mailto:a@example.org", True, False), ("#top", False, False),
    ("/\\127.0.0.1:9/x.png", False, False), ("\\\\127.0.0.1:9/x", False, False), ("\\/127.0.0.1:9/x", False, False),
    ("//127.0.0.1:9/x", False, False), ("\x01\x02 //127.0.0.1:9/x", False, False), ("ht\ttp://127.0.0.1:9/", True, False),
    ("java\nscript:alert(1)", False, False), (" \x00javascript:alert(1)", False, False), ("JaVaScRiPt:alert(1)", False, False),
    ("data:text/html,<script>alert(1)</script>", False, False), ("vbscript:x", False, False), ("x.png", False, False),
    ("data:image/png;base64,iVBORw0KGgo=", False, True), (" data:image/svg+xml;base64,PHN2Zz4=", False, True),
    ("data:image/svg+xml,<svg onload=alert(1)>", False, False), ("data:image/png,AA==", False, False),
])
def test_a_url_is_kept_only_where_a_browser_would_not_fetch_or_run_it(url: str, as_link: bool, as_image: bool) -> None:
    assert safe_html.url_allowed("href", url) is as_link
    assert safe_html.url_allowed("src", url) is as_image
    cleaned = Elements(safe_html.clean_html(f'<a href="{url}">a</a><img alt="p" src="{url}">'))
    assert ("href" in cleaned.of("a")[0]) is (as_link and '"' not in url and "<" not in url)
    assert ("src" in cleaned.of("img")[0]) is (as_image and '"' not in url)


SEPARATORS = st.lists(st.sampled_from(["\t", "\n", "\r"]), max_size=3).map("".join)
CONTROLS = st.lists(st.sampled_from([chr(c) for c in range(0x21)]), max_size=4).map("".join)


@given(prefix=CONTROLS, inside=st.lists(SEPARATORS, min_size=10, max_size=10), upper=st.lists(st.booleans(), min_size=10,
                                                                                                  max_size=10))
def test_javascript_urls_are_dropped_however_spelt(prefix: str, inside: list[str], upper: list[bool]) -> None:
    word = "".join((c.upper() if up else c) + sep for c, sep, up in zip("javascript", inside, upper))
    url = prefix + word + ":alert(1)"
    assert safe_html.url_scheme(url) == "javascript"
    assert not safe_html.url_allowed("href", url) and not safe_html.url_allowed("src", url)
    cleaned = Elements(safe_html.clean_html(f'<a href="{url}">x</a><img alt="x" src="{url}">'))
    assert "href" not in cleaned.of("a")[0] and "src" not in cleaned.of("img")[0]


@given(first=st.sampled_from(["/", "\\"]), second=st.sampled_from(["/", "\\"]), prefix=CONTROLS, gap=SEPARATORS)
def test_a_network_path_reference_is_never_an_image_or_a_link(first: str, second: str, prefix: str, gap: str) -> None:
    url = f"{prefix}{first}{gap}{second}127.0.0.1:9/x.png"
    assert not safe_html.url_allowed("src", url) and not safe_html.url_allowed("href", url)
    assert "127.0.0.1" not in safe_html.clean_html(f'<img alt="x" src="{url}"><a href="{url}">x</a>'.replace("\x00", ""))


# ---------------------------------------------------------------- metadata the templates write into the page


@pytest.mark.parametrize(("value", "written"), [
    ("1 onerror=alert(1)", None), ("100", 100), (100, 100), (12.5, 12.5), (True, None), (-1, None),
    (float("inf"), None), ("1e9", None), ({"x": 1}, None), ("10px", None), (10**9, None),
])
def test_an_images_width_and_height_are_kept_only_as_numbers(value: object, written: object) -> None:
    out = nbformat.v4.new_output("display_data", data={"image/png": BAD_PNG},
                                 metadata={"image/png": {"width": value, "height": value, "filenames": "x", "isolated": 1}})
    nb = safe_html.safe_notebook(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x", outputs=[out])]))
    meta = nb.cells[0].outputs[0].metadata.get("image/png", {})
    assert meta == ({"width": written, "height": written} if written is not None else {})


def test_an_image_whose_metadata_width_holds_a_handler_is_written_without_it() -> None:
    out = nbformat.v4.new_output("display_data", data={"image/png": BAD_PNG},
                                 metadata={"image/png": {"width": "1 onerror=alert(1)", "height": 20}})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x", outputs=[out])])
    for template in ("feedback", "formgrade"):  # nbconvert's template writes both without quotes
        images = [a for a in Elements(export(nb, template)).of("img") if a.get("src", "").startswith("data:image/png")]
        assert images == [{"src": f"data:image/png;base64,{BAD_PNG}", "height": "20", "alt": images[0].get("alt", "")}]


def test_an_execution_count_that_is_not_a_number_is_not_written() -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x")])
    nb.cells[0].execution_count = '1]<img src=x onerror=alert(1)>'  # as nbgrader reads a file: invalid fields only warn
    safe_html.safe_notebook(nb)
    assert nb.cells[0].execution_count is None


# ---------------------------------------------------------------- math without MathJax


def test_math_is_shown_as_its_tex_and_no_page_loads_mathjax() -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("The slope $\\frac{dL}{da} = b$ and\n\n$$x^2$$")])
    for template in ("feedback", "formgrade"):
        page = export(nb, template)
        assert "$\\frac{dL}{da} = b$" in page and "$$x^2$$" in page
        assert "cdnjs" not in page and "mathjax.js" not in page.lower() and "x-mathjax-config" not in page


# ---------------------------------------------------------------- the class report


class _Row:
    def __init__(self, student: str, notebook: str, score: float, max_score: float, misconceptions: list[str],
                 attempted: bool) -> None:
        self.student, self.notebook, self.score, self.max_score = student, notebook, score, max_score
        self.misconceptions, self.attempted, self.status, self.late = misconceptions, attempted, "graded", ""


def test_the_class_report_carries_the_policy_and_escapes_every_name(tmp_path: Path) -> None:
    rows = [_Row(f'<img src="{CANARY}/x" onerror=alert(1)>', "02_<svg onload=alert(1)>", 1, 5, ["add.wrong_op"], True)]
    hostile = f'<img src="{CANARY}/y" onerror=alert(1)>'  # a verdict quotes learner text: the score-change section
    changes = score_changes.ScoreChanges(1, [score_changes.Change(rows[0].student, rows[0].notebook, hostile, 3.0, 0.0,
                                                                  3.0, hostile, hostile)], 1)
    class_report.write(class_report.page_path(tmp_path, "workbook"), "workbook", rows, [score_changes.section(changes)])
    written = class_report.page_path(tmp_path, "workbook").read_text()
    page = Elements(written)
    assert page_policy_of(page) == POLICY and "score-changes" in written
    assert not page.of("img") and all(not k.startswith("on") for _, a in page.tags for k in a)


def test_the_feedback_page_keeps_no_font_face_of_its_own_and_the_learners_text_is_untouched() -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("`@font-face{src:url(x)}` is CSS")])
    page = export(nb, "feedback")
    head, body = page.split("<body", 1)
    assert "@font-face" not in head and "glyphicon" in head  # bootstrap's rules, without its icon font
    assert "@font-face{src:url(x)}" in body  # only the page's own head is touched
