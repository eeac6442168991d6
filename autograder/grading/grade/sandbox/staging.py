"""Staging: the code that runs inside the sandbox, copied into a folder the sandbox mounts read-only.

What is copied is `inside`'s list (the probes, the aids, the worker, the fork server, and the stand-in `autograder`
a notebook imports): never the repository, the course or the answer side.
"""

from __future__ import annotations

import os
import py_compile
import shutil
from pathlib import Path

from .inside import MODULES, PACKAGES, STANDINS


def package_root() -> Path:
    """The `autograder` package folder of this grader."""
    return Path(__file__).resolve().parents[3]


def _source(module: str) -> Path:
    """A module's or package's path relative to the package root (autograder.grading.grade.channel -> grading/grade/channel.py)."""
    return Path(*module.split(".")[1:])


def staged_files() -> dict[Path, Path]:
    """Where each staged file comes from: {path below dest/autograder: path in the package}."""
    pkg = package_root()
    files: dict[Path, Path] = {}
    for package in PACKAGES:
        folder = _source(package)
        for path in sorted((pkg / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".json"):
                files[path.relative_to(pkg)] = path
    for module in MODULES:
        files[_source(module).with_suffix(".py")] = pkg / _source(module).with_suffix(".py")
    for rel in list(files):  # every parent package's __init__.py (below the stand-in top-level one)
        for parent in rel.parents:
            if parent != Path(".") and parent / "__init__.py" not in files:
                files[parent / "__init__.py"] = pkg / parent / "__init__.py"
    for module, source in STANDINS.items():
        target = _source(module).with_suffix(".py") if module != "autograder" else Path("__init__.py")
        files[target] = pkg / source
    return files


def stage(dest: Path) -> None:
    """Copy the worker-side code, the teaching aids and the stand-in `autograder` into `dest`, for a read-only mount."""
    out = dest / "autograder"
    for rel, source in staged_files().items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, out / rel)
    cache = Path(os.environ.get("MPLCONFIGDIR") or Path.home() / ".cache" / "matplotlib")
    fonts = sorted(cache.glob("fontlist-*.json")) if cache.is_dir() else []
    if fonts:  # matplotlib's font list: without it the fork server spends seconds scanning the system's fonts
        (dest / "matplotlib").mkdir()
        shutil.copyfile(fonts[-1], dest / "matplotlib" / fonts[-1].name)
    # Bytecode next to the staged code (the mount is read-only, so the fork server could not cache it): compiled
    # here, while the grader imports nbgrader and waits for the server, not inside its preload (~70 ms)
    for source in out.rglob("*.py"):
        py_compile.compile(str(source), doraise=True)
    for path in dest.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    dest.chmod(0o755)
