"""The site's own Sphinx extension: what the pages show is read from the project when the site builds, never typed.

Roles (each resolved through `references.py`; a name that does not resolve is a build warning, an error under -W):
  {src}`autograder/grading/batch.py` or {src}`autograder.grading.batch.run`  a file or object, linked to its source
  {test}`tests/test_x.py::test_name`    the test that proves a claim, linked to its source
  {setting}`Limits.check_timeout`       a setting, linked to its entry in the configuration reference
  {default}`Limits.check_timeout`       its default as a reader reads it (`10 s`), from the traitlets class
  {bench}`bench_grade.speedup`          a figure from benchmarks/results/<name>.json (`18.3x`)
  {misconception}`add.assigns_instead_of_accumulating`  an id of the catalogue, linked to its entry

Directives:
  {misconception-catalogue}   every misconception of autograder/checks/messages.py with its sentence, by method
  {settings-reference}        every class of the package that declares a setting, each trait with its help=
  {benchmark-results} NAME    a benchmark's results file: command, date, machine, commit, figures, output

When the site is built, every internal link and anchor of the HTML it wrote is checked (no network needed).
"""

from __future__ import annotations

import html.parser
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.util import logging

sys.path.insert(0, str(Path(__file__).resolve().parent))

import references as ref

LOG = logging.getLogger(__name__)
CATALOGUE = "how-checks-diagnose"  # the page holding the catalogue
CONFIGURATION = "configuration"  # the page holding the settings reference


def _warn(inliner: Any, lineno: int, text: str) -> list[nodes.Node]:
    msg = inliner.reporter.warning(text, line=lineno)
    return [msg]


def _link(text: str, url: str, literal: bool = True) -> nodes.Node:
    inner = nodes.literal(text, text) if literal else nodes.Text(text)
    return nodes.reference("", "", inner, refuri=url, internal=False)


def _internal(inliner: Any, text: str, page: str, anchor: str) -> nodes.Node:
    """A link to `page#anchor` of this site, relative to the page being read (the anchor is checked after the build)."""
    env = inliner.document.settings.env
    uri = env.app.builder.get_relative_uri(env.docname, page) + f"#{anchor}"
    return nodes.reference("", "", nodes.literal(text, text), refuri=uri, internal=True)


def src_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    try:
        path, line = ref.resolve_code(text)
    except ref.Missing as exc:
        return [nodes.literal(text, text)], _warn(inliner, lineno, str(exc))
    return [_link(text, ref.blob(path, line))], []


def test_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    try:
        path, line = ref.check_test(text)
    except ref.Missing as exc:
        return [nodes.literal(text, text)], _warn(inliner, lineno, str(exc))
    return [_link(text.removeprefix("tests/"), ref.blob(path, line))], []


def setting_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    try:
        found = ref.setting(text)
    except ref.Missing as exc:
        return [nodes.literal(text, text)], _warn(inliner, lineno, str(exc))
    if found.cls.__name__ in ref.our_settings():
        return [_internal(inliner, text, CONFIGURATION, found.anchor)], []
    return [nodes.literal(text, text)], []  # nbgrader's own: its documentation describes it


def default_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    try:
        shown = ref.setting(text).default_text()
    except ref.Missing as exc:
        return [nodes.Text(text)], _warn(inliner, lineno, str(exc))
    return [nodes.Text(shown)], []


def bench_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    try:
        shown = ref.figure(text)
    except ref.Missing as exc:
        return [nodes.Text(text)], _warn(inliner, lineno, str(exc))
    return [nodes.strong(shown, shown)], []


def misconception_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    try:
        ref.misconception(text)
    except ref.Missing as exc:
        return [nodes.literal(text, text)], _warn(inliner, lineno, str(exc))
    return [_internal(inliner, text, CATALOGUE, _mis_anchor(text))], []


def _mis_anchor(key: str) -> str:
    return "mis-" + key.replace(".", "-").replace("_", "-")


def _table(header: list[str], rows: list[list[nodes.Node | str]], widths: list[int]) -> nodes.table:
    table = nodes.table()
    group = nodes.tgroup(cols=len(header))
    table += group
    for w in widths:
        group += nodes.colspec(colwidth=w)
    head = nodes.thead()
    group += head
    row = nodes.row()
    for h in header:
        row += nodes.entry("", nodes.paragraph(text=h))
    head += row
    body = nodes.tbody()
    group += body
    for cells in rows:
        row = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            entry += cell if isinstance(cell, nodes.Node) else nodes.paragraph(text=cell)
            row += entry
        body += row
    return table


class MisconceptionCatalogue(Directive):
    """Every misconception id and its sentence, grouped by the method it lives in (messages.METHOD_OF)."""

    def run(self) -> list[nodes.Node]:
        from autograder.checks import MISCONCEPTIONS
        from autograder.checks.messages import METHOD_OF

        groups: dict[str, list[str]] = defaultdict(list)
        for key in MISCONCEPTIONS:
            groups[key.split(".")[0]].append(key)
        out: list[nodes.Node] = []
        order = list(METHOD_OF)  # the workbook's order, roughly: +, *, backward, bricks, the net, the exercises
        for prefix in sorted(groups, key=lambda p: (p == "common", order.index(p) if p in order else len(order), p)):
            out.append(nodes.rubric(text=METHOD_OF.get(prefix, prefix)))
            rows = []
            for key in sorted(groups[prefix]):
                idp = nodes.paragraph()
                idp += nodes.target("", "", ids=[_mis_anchor(key)])
                idp += nodes.literal(key, key)
                rows.append([idp, MISCONCEPTIONS[key].replace("{name}", "a node")])
            out.append(_table(["id", "what the learner reads"], rows, [30, 70]))
        return out


class SettingsReference(Directive):
    """Every class of the package that declares a setting, and each setting: type, default, help."""

    def run(self) -> list[nodes.Node]:
        out: list[nodes.Node] = []
        for name, cls in sorted(ref.our_settings().items()):
            module = cls.__module__
            out.append(nodes.rubric(text=f"{name}"))
            intro = nodes.paragraph()
            intro += nodes.Text("Declared in ")
            path, line = ref.resolve_code(f"{module}.{name}")
            intro += _link(f"{module}.{name}", ref.blob(path, line))
            doc = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
            if doc:
                intro += nodes.Text(f": {doc}")
            inherited = sorted(set(cls.class_traits(config=True)) - set(cls.class_own_traits(config=True)))
            if inherited:
                intro += nodes.Text(f" It also takes the settings of its nbgrader or nbconvert base class "
                                    f"({', '.join(inherited)}), documented there.")
            out.append(intro)
            rows = []
            for s in ref.own_settings(cls):
                key = nodes.paragraph()
                key += nodes.target("", "", ids=[s.anchor])
                key += nodes.literal(f"c.{s.key}", f"c.{s.key}")
                rows.append([key, type(s.trait).__name__, s.default_text(), s.trait.help or ""])
            out.append(_table(["setting", "type", "default", "what it does (its help=)"], rows, [30, 8, 14, 48]))
        return out


class BenchmarkResults(Directive):
    """A benchmark's results file, as it was written: how, when and where it ran, its figures, its output."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        try:
            data = ref.results(name)
        except ref.Missing as exc:
            return [self.state.document.reporter.warning(str(exc), line=self.lineno)]
        m = data["machine"]
        facts = nodes.bullet_list()
        for label, value in (
            ("command", nodes.literal(data["command"], data["command"])),
            ("date", nodes.Text(data["date"])),
            ("commit", nodes.literal(data["commit"], data["commit"])),
            ("machine", nodes.Text(f"{m['cpus']} CPUs ({m['cpu_model'] or 'model unknown'}), {m['memory_gib']} GiB, "
                                   f"{m['system']}, Python {m['python']}; load average (1, 5, 15 min) at the start "
                                   f"{' '.join(str(x) for x in m['load_average_at_start'])}"
                                   + (f", at the end {' '.join(str(x) for x in m['load_average_at_end'])}"
                                      if m.get("load_average_at_end") else ""))),
            *(("note", nodes.Text(note)) for note in data.get("notes", [])),
        ):
            item = nodes.paragraph()
            item += nodes.strong(text=f"{label}: ")
            item += value
            facts += nodes.list_item("", item)
        rows = [[nodes.paragraph("", "", nodes.literal(k, k)), ref.figure(f"{name}.{k}"), f["what"]]
                for k, f in data["figures"].items()]
        text = "\n".join(data["output"])
        # what the run printed first (its ratios side by side, as the benchmark prints them), then its named figures
        printed = nodes.literal_block(text, text, language="text")
        return [facts, nodes.rubric(text="What the run printed"), printed,
                nodes.rubric(text=f"Its named figures (the pages quote {name}.<figure>)"),
                _table(["figure", "value", "what"], rows, [34, 13, 53])]


# ---------------------------------------------------------------- every internal link and anchor of the built site


class _Page(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for key in ("id", "name"):
            if a.get(key):
                self.ids.add(a[key])  # type: ignore[arg-type]
        for key in ("href", "src"):
            if a.get(key):
                self.links.append(a[key])  # type: ignore[arg-type]


def broken_links(outdir: Path) -> list[str]:
    """Every link of the built site to a page, file or anchor of the site itself that is not there."""
    pages: dict[Path, _Page] = {}
    for page in outdir.rglob("*.html"):
        parsed = _Page()
        parsed.feed(page.read_text(errors="replace"))
        pages[page.resolve()] = parsed
    broken = []
    for page, parsed in sorted(pages.items()):
        if page.parent.name in ("_modules", "_sources"):
            continue
        for link in parsed.links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith("//") or parts.netloc:
                continue  # another host: never fetched here (no network); see the site's test
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(outdir)}: link to a missing file {link}")
                continue
            if parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else set()
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{page.relative_to(outdir)}: link to a missing anchor {link}")
    return broken


def check_links(app: Any, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for problem in broken_links(Path(app.outdir)):
        LOG.warning(problem, type="workbook", subtype="link")


def setup(app: Any) -> dict[str, Any]:
    for name, fn in (("src", src_role), ("test", test_role), ("setting", setting_role), ("default", default_role),
                     ("bench", bench_role), ("misconception", misconception_role)):
        app.add_role(name, fn)
    app.add_directive("misconception-catalogue", MisconceptionCatalogue)
    app.add_directive("settings-reference", SettingsReference)
    app.add_directive("benchmark-results", BenchmarkResults)
    app.connect("build-finished", check_links)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
