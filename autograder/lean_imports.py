"""Stand-ins that load a costly module on first use instead of at import, for every command's start.

The costliest: `rfc3987_syntax`, which jsonschema's format checkers import (the `format-nongpl` extra that nbformat
and jupyter-events ask for) to check the "iri" and "iri-reference" formats. Its import builds about 35 Lark
parsers: 1.5-2.5 s of CPU here, 5-9 s of wall time on a busy machine, paid by every process that imports nbformat
(each nbgrader command, `python -m autograder grade`, the Jupyter server), although no notebook or event schema
uses those formats (jsonschema issues #1392, #1428). `lazy_iri_grammar` puts a stand-in in its place whose
`is_valid_syntax` (the one name jsonschema imports) loads the real module when a string is first checked, so an
IRI is still validated exactly as before, only later.

The project's virtual environment runs `lazy_iri_grammar` in every interpreter it starts (a `.pth` file that
`./workbook` writes, with a copy of this module: see `venv_config` there; AUTOGRADER_LAZY_IRI=0 turns it off);
`python -m autograder` runs it in any environment. Standard library only, nothing of the grader imported: the
copy in the venv's site-packages also runs inside the grading sandbox's interpreter.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types

TYPE_CHECKING = False  # (not typing's: this module runs at every interpreter start in the venv, typing costs ~3 ms)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

IRI_GRAMMAR = "rfc3987_syntax"
_LOCK = threading.Lock()


def on_first_use(name: str, functions: Iterable[str], doc: str = "") -> bool:
    """Register a stand-in for module `name` (True) unless it is imported already or not installed: each of its
    `functions` (names `from name import f` binds at once) and any other attribute loads the real module then."""
    top = name.partition(".")[0]
    if name in sys.modules:
        return False
    try:  # (a submodule's spec is not looked up: that would import its package, the cost being saved)
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    standin = types.ModuleType(name, doc or f"{name}, imported when first used")
    standin.__spec__ = spec if top == name else None

    def real() -> types.ModuleType:
        with _LOCK:
            if sys.modules.get(name) is standin:
                del sys.modules[name]
            return importlib.import_module(name)

    def forward(attr: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            return getattr(real(), attr)(*args, **kwargs)

        call.__name__ = call.__qualname__ = attr
        return call

    def attribute(attr: str) -> Any:  # PEP 562: any other public name loads the real module
        if attr.startswith("__"):  # what the import system asks of a module (`__path__`) is not a use
            raise AttributeError(attr)
        return getattr(real(), attr)

    for attr in functions:
        setattr(standin, attr, forward(attr))
    standin.__getattr__ = attribute  # type: ignore[method-assign]
    sys.modules[name] = standin
    return True


def lazy_iri_grammar() -> bool:
    """Keep the Lark grammar of `rfc3987_syntax` out of this process until an IRI is validated (True: stand-in put)."""
    return on_first_use(IRI_GRAMMAR, ["is_valid_syntax"], "rfc3987_syntax, loaded when an IRI is first validated "
                        "(autograder.lean_imports: its import builds a Lark grammar, seconds of CPU)")


# The venv's hook: a copy of this module and the `.pth` line that runs it at every interpreter start (as setuptools'
# distutils-precedence.pth does); AUTOGRADER_LAZY_IRI=0 turns it off for one command (the start-up benchmark's
# "before").
HOOK = "_autograder_lean"
SWITCH = "AUTOGRADER_LAZY_IRI"
PTH_LINE = f'import os; os.environ.get("{SWITCH}", "1") != "0" and __import__("{HOOK}").lazy_iri_grammar()\n'


def hook_files(site_packages: str | None = None) -> dict[str, str]:
    """The hook's files (path -> text) in `site_packages` (default: this interpreter's purelib)."""
    import os
    import sysconfig

    folder = site_packages or sysconfig.get_paths()["purelib"]
    with open(__file__, encoding="utf-8") as f:
        source = f.read()
    return {os.path.join(folder, f"{HOOK}.py"): source, os.path.join(folder, f"{HOOK}.pth"): PTH_LINE}


def install_hook(site_packages: str | None = None) -> list[str]:
    """Write the hook's files that are missing or stale; the paths written. For `./workbook`'s set-up of the
    project's venv only: never into a Python the project did not make."""
    import os

    written = []
    for path, text in hook_files(site_packages).items():
        try:
            with open(path, encoding="utf-8") as f:
                if f.read() == text:
                    continue
        except OSError:
            pass
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
        written.append(path)
    return written


if __name__ == "__main__":  # python -m autograder.lean_imports --install (./workbook's venv set-up)
    if sys.argv[1:] != ["--install"]:
        sys.exit("usage: python -m autograder.lean_imports --install")
    install_hook()
