"""nbgrader's modules without what a batch never runs, for the `grade` command's start-up.

`import nbgrader.api` first runs nbgrader/__init__.py, which imports nbgrader's four Jupyter server extensions
(assignment list, course list, validate, formgrader) and through them its apps, exchange, converters, nbconvert and
tornado: about 0.7 s of a ~2 s start for code a batch never runs. The package is registered here as a plain
namespace over the same folder, so `nbgrader.api`, `nbgrader.coursedir`, `nbgrader.utils` (and anything imported
later, the server extensions included) load as usual, each on its own. Only the CLI process calls this: a
process that imported nbgrader already keeps it as it is.
"""

from __future__ import annotations

import importlib.util
import sys

from ...lean_imports import lazy_iri_grammar, on_first_use


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


RENDERER_PACKAGES = ("nbconvert", "nbconvert.filters", "nbconvert.preprocessors")


def markdown_renderer_alone() -> bool:
    """Register nbconvert's packages in RENDERER_PACKAGES without running their `__init__` (True), so that its markdown
    renderer (`nbconvert.filters.markdown`) loads with what it imports itself, and not the exporters (Jinja), the
    execute preprocessor (nbclient, jupyter_client, zmq) or the postprocessors (tornado): ~180 modules, ~0.08 s of CPU
    at the start of the helpers' zygote, which is the one caller (nothing else of nbconvert runs in a helper). The same
    renderer, the same HTML. False, nothing changed, when nbconvert is imported already or laid out differently."""
    if any(name in sys.modules for name in RENDERER_PACKAGES):
        return False
    try:
        for name in RENDERER_PACKAGES:
            spec = importlib.util.find_spec(name)
            if spec is None or not spec.submodule_search_locations:
                raise ImportError(name)
            package = sys.modules[name] = importlib.util.module_from_spec(spec)
            parent, _, child = name.rpartition(".")
            if parent:
                setattr(sys.modules[parent], child, package)
        from nbconvert.filters.markdown import markdown2html_mistune  # noqa: F401
    except Exception:  # another layout: nbconvert imported the ordinary way, when it is first used
        for name in [n for n in sys.modules if n.partition(".")[0] == "nbconvert"]:
            del sys.modules[name]
        return False
    return True


def archive_util_on_first_use() -> bool:
    """Stand in for `setuptools.archive_util`, which nbgrader.utils imports for `zip_collect` alone: loading it
    loads setuptools and pkg_resources (~0.5 s). Its functions import the real module when first called."""
    return on_first_use("setuptools.archive_util", ("unpack_archive", "unpack_directory", "unpack_zipfile",
                                                    "unpack_tarfile", "default_filter"))


def skip_unused_format_checkers() -> None:
    """jsonschema (imported by nbformat) loads rfc3987_syntax when it is installed, and that module builds a Lark
    grammar at import (seconds): a stand-in loads it when an IRI is first validated (`lean_imports`). isoduration
    (and the arrow it loads, ~0.05 s) serves the "duration" format alone, which no notebook schema uses: without it
    jsonschema skips that checker in this process. Process-wide; before nbformat."""
    lazy_iri_grammar()
    sys.modules.setdefault("isoduration", None)  # type: ignore[arg-type]


def lean_start() -> None:
    """What the `grade` command's start (and each cluster worker's) skips: unused format checkers, nbgrader's server
    extensions, setuptools until nbgrader's zip_collect is called."""
    skip_unused_format_checkers()
    import_without_server_extensions()
    archive_util_on_first_use()
