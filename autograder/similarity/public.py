"""Known public engines every submission is also compared with: micrograd as published, and any other source set in
`Similarity.public_engines` (an installed package's name, or a path to a .py file, a notebook or a folder of them).

A package is found without importing it (`importlib.util.find_spec` of a top-level name runs none of its code) and
its .py files are read as text. Nothing here is ever executed.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from .handout import SimilarityError, cell_text

SOURCE_BYTES = 2 << 20  # a public source file larger than this is not read
SOURCE_FILES = 200  # files read from one package or folder


@dataclass(frozen=True)
class PublicSource:
    """One public engine: a name to show ("micrograd 0.1.0 (package)") and its files' texts."""

    name: str
    files: dict[str, str]  # file name -> code

    @property
    def text(self) -> str:
        """Every file, one after the other."""
        return "\n\n".join(self.files.values())


def _read(path: Path) -> str:
    if path.stat().st_size > SOURCE_BYTES:
        return ""
    data = path.read_text("utf-8", errors="replace")
    if path.suffix != ".ipynb":
        return data
    try:
        cells = json.loads(data).get("cells", [])
    except (ValueError, AttributeError, RecursionError):
        return ""
    return "\n\n".join(cell_text(c) for c in cells if isinstance(c, dict) and c.get("cell_type") == "code")


def _files(root: Path) -> dict[str, str]:
    paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.suffix in (".py", ".ipynb") and p.is_file())
    out = {}
    for p in paths[:SOURCE_FILES]:
        text = _read(p)
        if text.strip():
            out[p.name if root.is_file() else str(p.relative_to(root))] = text
    return out


def load_source(entry: str) -> PublicSource:
    """The public source `entry` names: a path when one exists there, else an installed package; SimilarityError when
    neither is found."""
    path = Path(entry).expanduser()
    if path.exists():
        files = _files(path)
        if not files:
            raise SimilarityError(f"public engine {entry}: no .py file or notebook with code there")
        return PublicSource(path.name, files)
    spec = importlib.util.find_spec(entry) if entry.isidentifier() else None
    if spec is None or not (spec.submodule_search_locations or spec.origin):
        raise SimilarityError(f"public engine {entry!r} is neither a path nor an installed package (micrograd comes with "
                              "the similarity extra: pip install 'autograd-workbook[similarity]'; or set "
                              "Similarity.public_engines)")
    root = Path(next(iter(spec.submodule_search_locations))) if spec.submodule_search_locations else Path(spec.origin)
    try:
        version = f" {importlib.metadata.version(entry)}"
    except importlib.metadata.PackageNotFoundError:
        version = ""
    files = _files(root)
    if not files:
        raise SimilarityError(f"public engine {entry!r}: the package has no .py file to read")
    return PublicSource(f"{entry}{version} (package)", files)
