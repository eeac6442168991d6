"""What runs inside the sandbox is listed once (`autograder/grading/grade/sandbox/inside.py`): every import of the staged
code is staged, every preloaded module is staged, and no other module of the grader keeps its own list.

Static (the sandbox itself is exercised in tests/test_grade_sandbox.py): a staged module that imports one that was not
staged would fail only inside the sandbox, at the fork server's preload or, worse, in one notebook's cell.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from support import imported

from autograder.grading.grade.sandbox import inside, staging
from autograder.grading.grade.standin import staged_modules

PACKAGE = staging.package_root()


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, frozenset[str]]:
    """The staged folder and every module name in it, as the sandbox's stand-in `autograder` sees it."""
    dest = tmp_path_factory.mktemp("staged")
    staging.stage(dest)
    return dest, staged_modules(str(dest / "autograder"))


def module_name(rel: Path) -> str:
    """autograder/grading/grade/worker/main.py -> autograder.grading.grade.worker.main (a package's __init__ -> the package)."""
    parts = list(rel.with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    """True when `name` is a module or package of the grader's source (not a function or class imported by name)."""
    rel = Path(*name.split("."))
    return (PACKAGE.parent / rel).with_suffix(".py").is_file() or (PACKAGE.parent / rel / "__init__.py").is_file()


def test_every_autograder_module_the_staged_code_imports_is_staged(staged: tuple[Path, frozenset[str]]) -> None:
    dest, names = staged
    missing = []
    for path in sorted((dest / "autograder").rglob("*.py")):
        rel = path.relative_to(dest)
        name = module_name(rel)
        missing += [f"{name} imports {m}" for m in sorted(imported(path, name)) if is_module(m) and m not in names]
    assert missing == []


def test_the_check_above_catches_an_import_of_a_module_left_outside(tmp_path: Path) -> None:
    # the same walk on a staged worker file that imports the answer side: what the test above would report
    fake = tmp_path / "autograder" / "grading" / "grade" / "worker" / "leak.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("from ....truth import numeric\nfrom autograder.checks import run\nfrom . import guard\n")
    found = imported(fake, "autograder.grading.grade.worker.leak")
    assert {"autograder.truth.numeric", "autograder.checks", "autograder.grading.grade.worker.guard"} <= found
    assert is_module("autograder.truth.numeric") and not is_module("autograder.checks.run.run_checks")


def test_every_module_the_fork_server_preloads_is_staged_or_a_library(staged: tuple[Path, frozenset[str]]) -> None:
    _, names = staged
    ours = [n for n in inside.PRELOAD if n.split(".")[0] == "autograder"]
    assert ours and [n for n in ours if n not in names] == []
    assert set(inside.PRELOAD) - set(ours) == set(inside.LIBRARIES)


def test_only_the_listed_modules_and_their_parent_packages_are_staged(staged: tuple[Path, frozenset[str]]) -> None:
    _, names = staged
    listed = {*inside.MODULES, *inside.STANDINS}
    parents = {".".join(n.split(".")[:i]) for n in listed | set(inside.PACKAGES) for i in range(1, n.count(".") + 1)}
    assert {n for n in names if not n.startswith(inside.PACKAGES)} == listed | parents


def test_no_other_module_of_the_grader_names_a_staged_module_in_a_list_of_its_own() -> None:
    listed = {*inside.PACKAGES, *inside.MODULES} - {"autograder"}
    repeats = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "grading" / "grade" / "sandbox" / "inside.py":
            continue
        strings = {n.value for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Constant)}
        repeats += [f"{path.relative_to(PACKAGE)}: {s}" for s in sorted(listed & {s for s in strings if isinstance(s, str)})]
    assert repeats == []


def test_the_stand_in_workbook_offers_every_aid_and_every_name_the_notebooks_import() -> None:
    # the stand-in repeats autograder.workbook's import of the aids (it may not import the checks): held equal here
    import importlib

    import nbformat

    import autograder.aids
    import autograder.workbook

    standin = importlib.import_module("autograder.grading.grade.standin.workbook")
    aids = {n for n in autograder.workbook.__all__ if n in autograder.aids.__all__}
    imported_by_notebooks = set()
    root = PACKAGE.parent
    for path in [*(root / "solutions" / "workbook").glob("*.ipynb"), *(root / "notebooks" / "workbook").glob("*.ipynb")]:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            try:
                tree = ast.parse("\n".join(ln for ln in cell.source.splitlines() if not ln.lstrip().startswith(("%", "!"))))
            except SyntaxError:  # a learner stub may not parse yet
                continue
            imported_by_notebooks |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                                      and n.module == "autograder.workbook" for a in n.names}
    assert aids and {"summary", "unless_passing"} <= imported_by_notebooks
    assert sorted((aids | imported_by_notebooks) - set(dir(standin))) == []
