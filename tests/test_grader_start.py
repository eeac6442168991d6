"""`python -m autograder grade` starts without what a batch never runs, and what it left out still works when used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograder import lean_imports

LEFT_OUT = ["nbgrader.server_extensions.formgrader", "nbconvert", "tornado.web", "setuptools", "pkg_resources",
            "isoduration", "lark", "rfc3987_syntax.syntax_helpers"]

AS_THE_CLI_STARTS = """
import json, runpy, sys
sys.argv = ["autograder", "grade", "workbook", "--course", sys.argv[1], "--unsafe-no-sandbox", "--no-progress"]
try:
    runpy.run_module("autograder", run_name="__main__")
except SystemExit as exc:
    code = exc.code
import nbgrader.api, nbgrader.coursedir, nbgrader.utils  # what grading uses, loaded
print(json.dumps({"code": code, "loaded": sorted(n for n in %r if sys.modules.get(n) is not None)}))
"""


def test_grade_loads_nbgrader_without_its_server_extensions_nbconvert_or_setuptools(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", AS_THE_CLI_STARTS % (LEFT_OUT,), str(tmp_path / "no-course")],
                          capture_output=True, text=True, timeout=120)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] == 2 and "does not exist" in done.stderr  # the one-line error of a missing course
    assert result["loaded"] == []


def test_nbgraders_unzip_still_works_through_the_archive_stand_in(tmp_path: Path) -> None:
    archive = tmp_path / "submissions.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("alice/workbook/01_derivatives.ipynb", "{}")
    code = f"""
from autograder.grading.grade.nbgrader_light import archive_util_on_first_use, import_without_server_extensions
import sys
assert import_without_server_extensions() and archive_util_on_first_use()
from nbgrader import utils
assert "setuptools" not in sys.modules
utils.unzip({str(archive)!r}, {str(tmp_path / "out")!r})
print("setuptools" in sys.modules)
"""
    (tmp_path / "out").mkdir()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"  # the real module was loaded when first used
    assert (tmp_path / "out" / "alice" / "workbook" / "01_derivatives.ipynb").read_text() == "{}"


IRI_CHECKED = """
import sys
from autograder.lean_imports import lazy_iri_grammar
put = lazy_iri_grammar()
import jsonschema, nbformat
before = "lark" in sys.modules
check = jsonschema.Draft7Validator({"format": "iri"}, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
print(put, before, check.is_valid("https://example.org/\u00e9t\u00e9?q=1#f"), check.is_valid("no scheme here"),
      "lark" in sys.modules)
"""


def test_jsonschema_builds_the_iri_grammar_only_when_an_iri_is_first_validated():
    pytest.importorskip("rfc3987_syntax")
    done = subprocess.run([sys.executable, "-c", IRI_CHECKED], capture_output=True, text=True, timeout=120,
                          env=os.environ | {"AUTOGRADER_LAZY_IRI": "0"})  # (this process's own stand-in, not the venv's)
    assert done.returncode == 0, done.stderr
    # the stand-in was put, nothing of Lark loaded at import; IRIs are still judged (one valid, one not); then loaded
    assert done.stdout.split() == ["True", "False", "True", "False", "True"]


def test_the_venv_hook_puts_the_stand_in_in_every_interpreter_unless_switched_off(tmp_path: Path):
    pytest.importorskip("rfc3987_syntax")
    written = lean_imports.install_hook(str(tmp_path))
    assert sorted(Path(p).name for p in written) == ["_autograder_lean.pth", "_autograder_lean.py"]
    assert lean_imports.install_hook(str(tmp_path)) == []  # up to date: nothing rewritten
    probe = ("import site, sys; site.addsitedir(sys.argv[1]); import nbformat; "
             "print(type(sys.modules['rfc3987_syntax'].__dict__.get('__file__')).__name__, 'lark' in sys.modules)")
    seen = {}
    for switch in ("1", "0"):
        done = subprocess.run([sys.executable, "-S", "-c", probe, str(tmp_path)], capture_output=True, text=True,
                              timeout=120, env=os.environ | {"AUTOGRADER_LAZY_IRI": switch, "PYTHONPATH": os.pathsep.join(
                                  p for p in sys.path if p.endswith("site-packages"))})
        assert done.returncode == 0, done.stderr
        seen[switch] = done.stdout.split()
    assert seen == {"1": ["NoneType", "False"], "0": ["str", "True"]}  # stand-in (no file) vs the real module


def test_the_projects_venv_has_the_hook_installed_and_current():
    """./workbook writes it at every set-up: an interpreter of this venv imports nbformat without Lark."""
    if not Path(sys.prefix, "pyvenv.cfg").is_file():
        pytest.skip("not running in a virtual environment made by ./workbook")
    for path, text in lean_imports.hook_files().items():
        assert Path(path).is_file() and Path(path).read_text() == text, f"{path} missing or stale: run ./workbook"
    done = subprocess.run([sys.executable, "-c", "import sys, nbformat; print('lark' in sys.modules)"],
                          capture_output=True, text=True, timeout=120, env=os.environ | {"AUTOGRADER_LAZY_IRI": "1"})
    assert done.stdout.strip() == "False", done.stderr


RENDERED_ALONE = """
import json, sys
from autograder.grading.grade.nbgrader_light import markdown_renderer_alone
alone = markdown_renderer_alone()
from autograder.grading.pages import safe_html
html = safe_html.safe_markdown(sys.argv[1])
print(json.dumps({"alone": alone, "again": markdown_renderer_alone(), "html": html,
                  "loaded": sorted(n for n in ("nbclient", "jupyter_client", "zmq", "jinja2", "tornado") if n in sys.modules)}))
"""


def test_the_helpers_render_markdown_with_nbconverts_renderer_alone_to_the_same_html() -> None:
    from adversarial.page_attacks import hostile_notebook

    from autograder.grading.pages import safe_html

    cells = hostile_notebook("http://127.0.0.1:9").cells
    text = "\n\n".join(c.source for c in cells if c.cell_type == "markdown") + "\n\n```python\nx = 1\n```"
    done = subprocess.run([sys.executable, "-c", RENDERED_ALONE, text], capture_output=True, text=True, timeout=120, cwd="/")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["alone"] is True and result["again"] is False  # (once registered, or imported, it is left as it is)
    assert result["loaded"] == []  # no exporter, kernel client or server came with the renderer
    assert result["html"] == safe_html.safe_markdown(text)  # the same HTML as nbconvert imported the ordinary way
