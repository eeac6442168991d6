"""nbgrader's modules without what a batch never runs, for the `grade` command's start-up.

`import nbgrader.api` first runs nbgrader/__init__.py, which imports nbgrader's four Jupyter server extensions
(assignment list, course list, validate, formgrader) and through them its apps, exchange, converters, nbconvert and
tornado: about 0.7 s of a ~2 s start for code a batch never runs. The package is registered here as a plain
namespace over the same folder, so `nbgrader.api`, `nbgrader.coursedir`, `nbgrader.utils` (and anything imported
later, the server extensions included) load as usual, each on its own. Only the CLI process calls this: a
process that imported nbgrader already keeps it as it is.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from collections.abc import Callable
from typing import Any


def import_without_server_extensions() -> bool:
    """Register `nbgrader` without running its `__init__` (True), unless it is already imported or not found."""
    if "nbgrader" in sys.modules:
        return False
    spec = importlib.util.find_spec("nbgrader")
    if spec is None or not spec.submodule_search_locations:
        return False
    package = importlib.util.module_from_spec(spec)
    sys.modules["nbgrader"] = package
    try:
        from nbgrader._version import __version__
    except Exception:  # an nbgrader laid out differently: import it the ordinary way
        del sys.modules["nbgrader"]
        return False
    package.__version__ = __version__  # `from nbgrader import __version__` (its apps) keeps working
    return True


def archive_util_on_first_use() -> bool:
    """Stand in for `setuptools.archive_util`, which nbgrader.utils imports for `zip_collect` alone: loading it
    loads setuptools and pkg_resources (~0.5 s). Its functions import the real module when first called."""
    name = "setuptools.archive_util"
    if name in sys.modules or importlib.util.find_spec("setuptools") is None:
        return False

    def forward(attr: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if sys.modules.get(name) is standin:
                del sys.modules[name]
            return getattr(importlib.import_module(name), attr)(*args, **kwargs)

        call.__name__ = attr
        return call

    standin = types.ModuleType(name, "setuptools.archive_util, imported when one of its functions is first called")
    for attr in ("unpack_archive", "unpack_directory", "unpack_zipfile", "unpack_tarfile", "default_filter"):
        setattr(standin, attr, forward(attr))
    sys.modules[name] = standin
    return True


def skip_unused_format_checkers() -> None:
    """jsonschema (imported by nbformat) loads rfc3987_syntax when it is installed (jupyter_events' extra pulls it
    in), and that module builds a Lark grammar at import: 1-9 s here, more than the rest of the grader's start. It
    only checks the "iri" string formats, which no notebook schema uses; without it jsonschema skips that checker.
    Likewise isoduration (and the arrow it loads), for the "duration" format only. Process-wide; before nbformat."""
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
    sys.modules.setdefault("isoduration", None)  # type: ignore[arg-type]


def lean_start() -> None:
    """What the `grade` command's start (and each cluster worker's) skips: unused format checkers, nbgrader's server
    extensions, setuptools until nbgrader's zip_collect is called."""
    skip_unused_format_checkers()
    import_without_server_extensions()
    archive_util_on_first_use()
