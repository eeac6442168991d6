"""The package's shape: one version, no shadowed module, and notebooks that say how to install it when it is missing.

The wheel itself, installed in a fresh environment, is tested in tests/test_wheel.py (slow).
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import json
import pkgutil
import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import autograder

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = (ROOT / "pyproject.toml").read_text()
NOTEBOOKS = sorted((ROOT / "solutions" / "workbook").glob("*.ipynb")) + sorted((ROOT / "notebooks" / "workbook").glob("*.ipynb"))


def submodules() -> list[str]:
    """Every module and subpackage under autograder, by dotted name."""
    return sorted(name for _, name, _ in pkgutil.walk_packages(autograder.__path__, "autograder."))


def imports_cell(path: Path) -> nbformat.NotebookNode:
    """The notebook's first code cell: its imports."""
    return next(c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")


def repository_url() -> str:
    """The project's repository URL as pyproject.toml declares it."""
    match = re.search(r'^Repository = "([^"]+)"$', PYPROJECT, re.M)
    assert match, "pyproject.toml has no [project.urls] Repository"
    return match.group(1)


def test_submodules_are_found():
    assert {"autograder.cli", "autograder.grading", "autograder.grading.batch"} <= set(submodules())


def test_no_submodule_is_shadowed_by_a_name_in_its_package():
    # `import autograder.check as m` must give the module, not a function that __init__ bound to the same name
    shadowed = []
    for name in submodules():
        module = importlib.import_module(name)
        parent_name, _, last = name.rpartition(".")
        bound = getattr(sys.modules[parent_name], last, module)
        if bound is not module:
            shadowed.append(f"{name} is shadowed by {parent_name}.{last} = {bound!r}")
    assert not shadowed


def test_the_version_is_written_once_and_read_without_importing_the_package():
    project = PYPROJECT.split("[project]", 1)[1].split("\n[", 1)[0]
    assert not re.search(r"^version\s*=", project, re.M), "pyproject.toml must not repeat the version"
    assert re.search(r'^dynamic = \["version"\]', project, re.M)
    assert 'version = {attr = "autograder.__version__"}' in PYPROJECT
    # setuptools reads a literal assignment statically (no import of the package and its dependencies at build time)
    tree = ast.parse((ROOT / "autograder" / "__init__.py").read_text())
    literal = [n.value.value for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
               and any(getattr(t, "id", None) == "__version__" for t in n.targets)]
    assert literal == [autograder.__version__]
    assert re.fullmatch(r"\d+\.\d+\.\d+(?:[ab]\d+|rc\d+|\.dev\d+)?", autograder.__version__)


IMPORTS_HINT = "  # No module named 'autograder'? See {url}"


def test_every_imports_cell_is_a_few_readable_lines_naming_the_repository_of_pyproject():
    url = repository_url()
    for path in NOTEBOOKS:
        lines = imports_cell(path).source.splitlines()
        assert len(lines) <= 4 and all(ln.startswith(("import ", "from ")) for ln in lines), f"{path}: {lines}"
        # the line that fails in a kernel without the package carries the pointer: IPython shows it in the error
        assert f"from autograder import check{IMPORTS_HINT.format(url=url)}" in lines, path
        # the same cell runs in the browser, where pip, git and a checkout mean nothing
        assert not any(word in ln for ln in lines for word in ("pip", "git+", "checkout")), path
    guide = (ROOT / "docs" / "instructor" / "one-machine.md").read_text()
    assert f'pip install "git+{url}"' in guide, "the instructor guide's install line uses another URL"


NBGRADER_WITH_CONFIG = re.compile(r"\bnbgrader (?:<command>|[a-z]+_[a-z_]+|autograde|export|db|validate|collect)[\s`][^`]*--config\b")


def test_no_doc_tells_nbgrader_to_take_a_config_file_it_ignores():
    # nbgrader 0.9.6 ignores `--config FILE`; only `python -m autograder grade --config FILE` takes it
    docs = [str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")]
    for name in ("README.md", "grading_config.py", "nbgrader_config.py", *docs):
        if (ROOT / name).exists():
            for line in (ROOT / name).read_text().splitlines():
                assert not NBGRADER_WITH_CONFIG.search(line), f"{name}: {line}"


def run_imports_cells(cwd: Path) -> list[list[dict]]:
    """Outputs of every notebook's imports cell, run in one real kernel (working in cwd) that cannot import autograder."""
    block = nbformat.v4.new_code_cell('import sys\nsys.modules["autograder"] = None  # what a kernel without it raises')
    nb = nbformat.v4.new_notebook(cells=[block, *(nbformat.v4.new_code_cell(imports_cell(p).source) for p in NOTEBOOKS)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, kernel_name="python3", allow_errors=True, timeout=60,
                   resources={"metadata": {"path": str(cwd)}}).execute()
    assert nb.cells[0].outputs == []
    return [json.loads(json.dumps(c.outputs)) for c in nb.cells[1:]]


ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.mark.slow
def test_without_autograder_every_imports_cell_points_at_the_repository(tmp_path: Path):
    url = repository_url()
    for where in (ROOT / "notebooks" / "workbook", tmp_path):  # where `./workbook lab` opens them; a hosted Jupyter
        for path, outputs in zip(NOTEBOOKS, run_imports_cells(where)):
            (out,) = outputs
            assert out["output_type"] == "error" and out["ename"] == "ModuleNotFoundError", (path, out)
            shown = ANSI.sub("", "\n".join(out["traceback"]))
            # IPython shows the failing line, and the pointer written on it, right above the error
            assert f"from autograder import check{IMPORTS_HINT.format(url=url)}" in shown, (path, shown)
            assert "No module named 'autograder'" in shown


def test_a_missing_dependency_of_autograder_keeps_its_real_error(monkeypatch: pytest.MonkeyPatch):
    # the hint is for a kernel without the package, not for a broken install: that one keeps its own error
    class BrokenInstall(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == "autograder":
                raise ModuleNotFoundError("No module named 'nbformat'", name="nbformat")

    monkeypatch.delitem(sys.modules, "autograder")
    monkeypatch.setattr(sys, "meta_path", [BrokenInstall(), *sys.meta_path])
    with pytest.raises(ModuleNotFoundError) as info:
        exec(compile(imports_cell(NOTEBOOKS[0]).source, "imports cell", "exec"), {})
    assert info.value.name == "nbformat"
