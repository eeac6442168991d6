"""What the docs may name, checked against the project itself: files, tests, code objects, settings, commands, figures.

The Sphinx extension (`workbook_docs.py`) resolves its roles through these functions and turns every failure into a
build warning (an error under `-W`); `tests/test_docs.py` runs the same checks over the page sources and the README,
so a page that names a file, a test, a command or a setting that does not exist fails in the quick test loop too.
Nothing here is typed twice: settings come from the traitlets classes, commands from `python -m autograder`'s parser,
`./workbook`'s own case labels and nbgrader's application, figures from `benchmarks/results/*.json`.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
RESULTS = ROOT / "benchmarks" / "results"

# Folders and files of the repository a page may name as a path (anything else in backticks, `course/` or
# `autograded/<student>/` say, is a place at run time, not a file of the project).
REPO_DIRS = ("autograder", "tests", "docs", "benchmarks", "scripts", "notebooks", "solutions", "hub", "lab-config", ".ci")
REPO_FILES = ("nbgrader_config.py", "grading_config.py", "pyproject.toml", "README.md")
PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(re.escape(d) for d in REPO_DIRS) + r")/[\w./-]*|"
                  + "|".join(re.escape(f) for f in REPO_FILES) + r")(?![\w<*{])")
ROLE = re.compile(r"\{(src|test|setting|default|bench|misconception)\}`([^`]+)`")
SETTING = re.compile(r"(?<![\w.])(c\.)?([A-Z][A-Za-z0-9]+)\.([a-z_][a-z0-9_]*)\b")
# A command as a line of a shell block or an inline code span shows it (after `cd x &&`, `sudo`, `VAR=value`)
COMMAND = re.compile(r"^\s*(?:\$ )?(?:sudo )?(?:[A-Z_]+=\S+ )*((?:\.venv/bin/)?python3? -m autograder(?:\.checks)?|\./workbook|nbgrader)"
                     r"(?=\s|$)(.*)$")
SHELL = ("", "bash", "sh", "console", "shell")


class Missing(LookupError):
    """A name in the docs that the project does not have; the message says what and where it looked."""


# ---------------------------------------------------------------- the repository


@functools.cache
def repo_url() -> str:
    """The repository's address, from pyproject.toml's [project.urls] (one place; the notebooks use it too)."""
    text = (ROOT / "pyproject.toml").read_text()  # (tomllib is Python 3.11+; the project runs on 3.10)
    return re.search(r'^Repository = "([^"]+)"', text, re.M).group(1).rstrip("/")  # type: ignore[union-attr]


def blob(path: str, line: int | None = None) -> str:
    """The address of a file of the repository (its main branch) for a link."""
    return f"{repo_url()}/blob/main/{path}" + (f"#L{line}" if line else "")


def check_path(path: str) -> Path:
    """A file or folder of the repository, or Missing."""
    target = ROOT / path.rstrip("/")
    if not target.exists():
        raise Missing(f"no such file or folder in the repository: {path}")
    return target


def check_test(spec: str) -> tuple[str, int | None]:
    """`tests/test_x.py` or `tests/test_x.py::test_name` (or `::Class::test_name`): (path, line), or Missing."""
    path, _, name = spec.partition("::")
    if not path.startswith("tests/") or not path.endswith(".py"):
        raise Missing(f"a test is named as tests/<file>.py[::test_name]: {spec}")
    file = check_path(path)
    if not name:
        return path, None
    tree = ast.parse(file.read_text())
    scope: list[ast.stmt] = tree.body
    node: ast.AST | None = None
    for part in name.split("::"):
        node = next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == part), None)
        if node is None:
            raise Missing(f"{path} has no test {name}")
        scope = getattr(node, "body", [])
    return path, getattr(node, "lineno", None)


def resolve_code(name: str) -> tuple[str, int | None]:
    """A path of the repository, or a dotted module/object of the package (autograder.grading.batch.run): its
    (path, line), or Missing. Dotted names survive a file's move only if the name still exists: a test says so."""
    if "/" in name or name.endswith((".py", ".md", ".toml", ".json", ".ipynb")):
        check_path(name)
        return name, None
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            break
        try:
            source = inspect.getsourcefile(obj if inspect.ismodule(obj) or inspect.isclass(obj) or callable(obj)
                                           else importlib.import_module(".".join(parts[:cut])))
            line = None if inspect.ismodule(obj) else inspect.getsourcelines(obj)[1]
        except (TypeError, OSError):
            source, line = inspect.getsourcefile(importlib.import_module(".".join(parts[:cut]))), None
        return str(Path(source).resolve().relative_to(ROOT)), line
    raise Missing(f"no module or object {name} in the package")


# ---------------------------------------------------------------- settings (traitlets)


def _declares_settings(file: Path) -> list[str]:
    """The classes of a module that declare a configurable trait (`... .tag(config=True)`), found without importing it."""
    def configurable(node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "tag" and any(
            k.arg == "config" and isinstance(k.value, ast.Constant) and k.value.value is True for k in node.keywords)

    tree = ast.parse(file.read_text())
    return [node.name for node in tree.body
            if isinstance(node, ast.ClassDef) and any(configurable(n) for n in ast.walk(node))]


@functools.cache
def our_settings() -> dict[str, type]:
    """Every class of the package that declares a setting, by name: wherever a trait with config=True is declared."""
    found: dict[str, type] = {}
    for file in sorted((ROOT / "autograder").rglob("*.py")):
        names = _declares_settings(file)
        if not names:
            continue
        module = importlib.import_module(".".join(file.relative_to(ROOT).with_suffix("").parts))
        for name in names:
            found[name] = getattr(module, name)
    return found


@functools.cache
def nbgrader_classes() -> dict[str, list[type]]:
    """nbgrader's and nbconvert's configurable classes, by name (several may share one: nbgrader's `Exchange`s)."""
    from traitlets.config import Configurable

    importlib.import_module("nbgrader.apps.nbgraderapp")  # imports every nbgrader application, converter and plugin
    importlib.import_module("nbgrader.exchange.default")
    importlib.import_module("nbconvert")
    seen: dict[str, list[type]] = {}
    todo = [Configurable]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub.__module__.split(".")[0] in ("nbgrader", "nbconvert", "traitlets", "jupyter_core"):
                if sub not in seen.setdefault(sub.__name__, []):
                    seen[sub.__name__].append(sub)
            todo.append(sub)
    return seen


def nbgrader_settings() -> dict[str, list[type]]:
    """nbgrader's and nbconvert's configurable classes, by name (a course's nbgrader_config.py sets them too)."""
    return nbgrader_classes()


@dataclass(frozen=True)
class Setting:
    """One configurable trait: its class, name, traitlets type, default and help."""

    cls: type
    name: str
    trait: Any

    @property
    def key(self) -> str:
        return f"{self.cls.__name__}.{self.name}"

    @property
    def anchor(self) -> str:
        return f"setting-{self.cls.__name__}-{self.name}".lower().replace("_", "-")

    @property
    def default(self) -> Any:
        return self.trait.default()

    def default_text(self) -> str:
        """The default as a reader reads it: `10 s`, `2048 MiB`, `1000000 bytes`, `0`."""
        value = self.default
        text = f"{value:g}" if isinstance(value, float) else repr(value) if isinstance(value, (str, dict, list)) else str(value)
        help_text = (self.trait.help or "").lower()
        if help_text.startswith("seconds"):
            return f"{text} s"
        if re.search(r"\bin mib\b", help_text):
            return f"{text} MiB"
        if help_text.startswith("bytes"):
            return f"{text} bytes"
        return text


def setting(key: str) -> Setting:
    """`Limits.check_timeout` (ours or nbgrader's), or Missing."""
    cls_name, _, name = key.partition(".")
    classes = [our_settings()[cls_name]] if cls_name in our_settings() else nbgrader_settings().get(cls_name, [])
    if not classes:
        raise Missing(f"no configurable class {cls_name} (ours: {', '.join(sorted(our_settings()))}; or nbgrader's)")
    for cls in classes:
        traits = cls.class_traits(config=True)
        if name in traits:
            return Setting(cls, name, traits[name])
    known = sorted({n for cls in classes for n in cls.class_traits(config=True)})
    raise Missing(f"{cls_name} has no setting {name} (it has: {', '.join(known) or 'none'})")


def own_settings(cls: type) -> list[Setting]:
    """The settings a class of ours declares itself (inherited ones are nbgrader's, documented there)."""
    own = cls.class_own_traits(config=True)
    return [Setting(cls, name, own[name]) for name in sorted(own)]


# ---------------------------------------------------------------- commands


@functools.cache
def autograder_commands() -> dict[str, set[str]]:
    """`python -m autograder`'s subcommands and the options of each ('' holds the top level's)."""
    import argparse

    from autograder.cli import build_parser

    parser = build_parser()
    found: dict[str, set[str]] = {"": {o for a in parser._actions for o in a.option_strings}}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[name] = {o for a in sub._actions for o in a.option_strings}
    return found


# ./workbook's commands whose extra arguments go to another program (jupyter lab, pytest, sphinx-build): any option
PASSTHROUGH = {"lab", "instructor", "test", "docs"}


@functools.cache
def workbook_commands() -> dict[str, set[str]]:
    """`./workbook`'s commands (its case labels) and the options each takes itself (read from the script)."""
    text = (ROOT / "workbook").read_text()
    body = text[text.index('case "$cmd" in'):]
    found: dict[str, set[str]] = {}
    for match in re.finditer(r"^    ([a-z]+)\)\n(.*?)^        ;;", body, re.S | re.M):
        found[match.group(1)] = set(re.findall(r"(--[a-z][a-z-]+)\)", match.group(2))) | set(
            re.findall(r"\"(--[a-z][a-z-]+)\"", match.group(2)))
    lite = (ROOT / "scripts" / "build_lite.py").read_text()
    found.setdefault("lite", set()).update(re.findall(r"add_argument\(\"(--[a-z-]+)\"", lite))
    return found


@functools.cache
def nbgrader_commands() -> set[str]:
    """nbgrader's subcommands, from its application."""
    from nbgrader.apps.nbgraderapp import NbGraderApp

    return set(NbGraderApp.subcommands)


def check_command(program: str, rest: str) -> None:
    """One command line a page shows, or Missing: its subcommand and the options it names must exist."""
    try:
        words = shlex.split(rest, comments=True)
    except ValueError:
        words = rest.split()
    words = [w for w in words if not w.startswith(("$", "<", "\\", "..."))]
    if program.startswith("python") and program.endswith(".checks"):
        return  # `python -m autograder.checks` takes no arguments: it rewrites the probes' table
    if program.startswith("python"):
        table, what = autograder_commands(), "python -m autograder"
    elif program == "./workbook":
        table, what = workbook_commands(), "./workbook"
    else:
        if words and not words[0].startswith("-") and words[0] not in nbgrader_commands():
            raise Missing(f"nbgrader has no command {words[0]}")
        return
    if not words or words[0].startswith("-"):
        unknown = [w.split("=")[0] for w in words if w.startswith("--") and w.split("=")[0] not in table[""]] \
            if "" in table else []
        if unknown:
            raise Missing(f"{what} has no option {unknown[0]}")
        return
    sub = words[0]
    if sub not in table:
        raise Missing(f"{what} has no command {sub} (it has: {', '.join(sorted(k for k in table if k))})")
    if what == "./workbook" and sub in PASSTHROUGH:
        return
    unknown = [w.split("=")[0] for w in words[1:] if w.startswith("--") and w.split("=")[0] not in table[sub]]
    if unknown:
        raise Missing(f"{what} {sub} has no option {unknown[0]}")


# ---------------------------------------------------------------- figures and misconceptions


@functools.cache
def results(name: str) -> dict[str, Any]:
    """benchmarks/results/<name>.json, or Missing."""
    path = RESULTS / f"{name}.json"
    if not path.exists():
        raise Missing(f"no results file {path.relative_to(ROOT)}: run benchmarks/{name}.py --results")
    return json.loads(path.read_text())


def figure(key: str) -> str:
    """`bench_grade.speedup` as the docs show it: `18.3x`, `6.6 s`, `439 notebooks/s`; or Missing."""
    name, _, fig = key.partition(".")
    data = results(name)
    if fig not in data["figures"]:
        raise Missing(f"{name}'s results have no figure {fig} (they have: {', '.join(sorted(data['figures']))})")
    f = data["figures"][fig]
    value = f"{f['value']:g}" if not float(f["value"]).is_integer() or f["unit"] not in ("", "x") else f"{f['value']:.0f}"
    if f["unit"] == "x":
        return f"{value}x"
    return f"{value} {f['unit']}".strip()


def misconception(key: str) -> str:
    """A misconception id of the catalogue, or Missing."""
    from autograder.checks import MISCONCEPTIONS

    if key not in MISCONCEPTIONS:
        raise Missing(f"no misconception {key} in autograder/checks/messages.py or ops.py")
    return key


def check_role(kind: str, value: str) -> None:
    """One role of a page, resolved; Missing when it names nothing."""
    if kind == "src":
        resolve_code(value)
    elif kind == "test":
        check_test(value)
    elif kind in ("setting", "default"):
        setting(value)
    elif kind == "bench":
        figure(value)
    elif kind == "misconception":
        misconception(value)


# ---------------------------------------------------------------- reading pages


def page_sources() -> list[Path]:
    """Every page source of the site, and the README."""
    return [*sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts), ROOT / "README.md"]


def _code(text: str) -> list[tuple[int, str, str]]:
    """(line, kind, text) of the code a page shows: each line of a fenced block (kind: its language) and each inline
    code span (kind: `span`)."""
    found: list[tuple[int, str, str]] = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        opening = re.match(r"^\s*(```+|~~~+)\s*\{?([\w-]*)\}?", line)
        if fence is None and opening:
            fence = opening.group(1)
            language = opening.group(2)
            continue
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            elif not line.lstrip().startswith(":"):  # a directive's options
                found.append((number, language, line))
            continue
        for span in re.findall(r"(?<!`)`([^`]+)`(?!`)", ROLE.sub("", line)):
            found.append((number, "span", span))
    return found


def names_in(text: str) -> list[tuple[int, str, str]]:
    """(line, kind, value) of every role, repository path, command and setting a page's text names."""
    found: list[tuple[int, str, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        for kind, value in ROLE.findall(line):
            found.append((number, kind, value))
        plain = re.sub(r"https?://\S+", "", ROLE.sub("", line))
        for path in PATH.findall(plain):
            found.append((number, "path", path.rstrip(".")))
        for prefix, cls, name in SETTING.findall(plain):
            found.append((number, "setting?" if not prefix else "setting", f"{cls}.{name}"))
    for number, kind, code in _code(text):
        if kind not in (*SHELL, "span"):
            continue
        for part in re.split(r"&&|;|\|\|", code.split(" # ")[0]):
            match = COMMAND.match(part)
            if match:
                found.append((number, "command", f"{match.group(1).removeprefix('.venv/bin/')}\0{match.group(2)}"))
    return found


def problems(path: Path) -> list[str]:
    """Every name a page uses that the project does not have, as `file:line: why`."""
    return problems_in(path.read_text(), str(path.relative_to(ROOT)))


def problems_in(text: str, label: str) -> list[str]:
    """Every name a page's text uses that the project does not have, as `label:line: why`."""
    out: list[str] = []
    rel = label
    for number, kind, value in names_in(text):
        try:
            if kind == "path":
                check_path(value)
            elif kind == "command":
                check_command(*value.split("\0"))
            elif kind == "setting?":
                cls = value.split(".")[0]
                if cls in our_settings() or cls in nbgrader_settings():
                    setting(value)
            else:
                if kind == "setting":
                    setting(value)
                else:
                    check_role(kind, value)
        except Missing as exc:
            out.append(f"{rel}:{number}: {exc}")
    return out


# ---------------------------------------------------------------- figures typed by hand

# A number with a unit of time or a ratio (`6.6 s`, `40 ms`, `3 min`, `18.3x`): such figures come from a benchmark's
# results ({bench}) or a setting's default ({default}), never from prose.
TIMING = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?:\s?(?:ms|µs|s|sec|secs|seconds?|min|mins|minutes?|h|hrs?|hours?)\b|[x×](?![\w(]))")


def hand_typed_timings(text: str) -> list[tuple[int, str]]:
    """(line, figure) of every timing or ratio typed into a page, outside the roles that read them from the project."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in TIMING.finditer(ROLE.sub("", line)):
            found.append((number, match.group(0)))
    return found


def package_installs(text: str) -> set[str]:
    """The Debian packages an `apt-get install` in `text` names."""
    found: set[str] = set()
    for match in re.finditer(r"apt-get install((?:\s+-[\w-]+)*)((?:\s+[a-z0-9][a-z0-9.+-]*)+)", text):
        found.update(match.group(2).split())
    return found


def marked_block(text: str, marker: str) -> str:
    """The first fenced block after `<!-- marker: ... -->`."""
    start = text.index(f"<!-- {marker}:")
    fence = text.index("```", start)
    body = text.index("\n", fence) + 1
    return text[body:text.index("```", body)]
