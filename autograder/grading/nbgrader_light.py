"""nbgrader's modules without its package `__init__`, for the `grade` command's start-up.

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
