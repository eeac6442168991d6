"""Whether a learner function is the learner's own: not the grader's operations installed or called in its place.

The grader's own operations run beside learner code, in the sandbox and in the learner's kernel (`scaffold.py`, the
op table `op_table.py`), and the answer side is importable in a kernel: a submission could install one as its own
(`Value.__add__ = <the grader's>`), wrap one (`functools.partial`, `functools.wraps`, a lambda that calls it), or
compute with the op table. A check of such a target would judge the grader's code, so the probe reports it instead
(`graders_code`) and the check fails, saying so.

Grader code is code whose file lies in the grader's probes, truth or checks (the teaching aids, `autograder.aids` and
`autograder.workbook`, are the learner's to call). A target is looked at without running any of its code: its code
object's file, then what it can reach without a call (what it wraps, its closure, defaults and the globals its code
names, functions and classes it holds, containers of them), a few steps deep.
"""

from __future__ import annotations

import functools
import os
import types
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

_PACKAGE = Path(__file__).resolve().parent.parent
GRADER_DIRS = tuple(str(_PACKAGE / d) + os.sep for d in ("probes", "truth", "checks"))
GRADER_MODULES = ("autograder.probes", "autograder.truth", "autograder.checks")
_DEPTH, _MOST = 4, 2000  # how far from the target to look, and how many objects at most


def _is_grader_module(name: object) -> bool:
    return isinstance(name, str) and any(name == m or name.startswith(m + ".") for m in GRADER_MODULES)


def _shown(filename: str) -> str:
    """`autograder/probes/scaffold.py` for a grader file."""
    try:
        return str(Path(filename).resolve().relative_to(_PACKAGE.parent))
    except ValueError:  # pragma: no cover - a grader file is under the package
        return filename


def _code_names(code: types.CodeType) -> Iterator[str]:
    """The global names a code object and the functions defined in it look up."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_names(const)


def _reached(obj: Any) -> Iterator[Any]:
    """What an object holds that runs, or names what runs, without calling anything of the learner's."""
    kind = type(obj)
    if kind is types.FunctionType:
        yield from (c.cell_contents for c in obj.__closure__ or () if _filled(c))
        yield from obj.__defaults__ or ()
        yield from (obj.__kwdefaults__ or {}).values()
        wrapped = obj.__dict__.get("__wrapped__")  # functools.wraps
        if wrapped is not None:
            yield wrapped
        globs = obj.__globals__
        for name in dict.fromkeys(_code_names(obj.__code__)):
            if dict.__contains__(globs, name):
                yield dict.__getitem__(globs, name)
    elif kind in (types.MethodType, staticmethod, classmethod):
        yield obj.__func__
    elif kind is functools.partial:
        yield obj.func
        yield from obj.args
        yield from obj.keywords.values()
    elif kind in (dict, types.MappingProxyType):
        yield from obj.values()
    elif kind in (list, tuple, set, frozenset):
        yield from obj


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018  (an empty cell raises)
    except ValueError:
        return False
    return True


def graders_code(obj: Any) -> str | None:
    """The grader file `obj` is, wraps or calls (`autograder/probes/scaffold.py`), or None when it is the learner's.

    A class (a target such as `MLP`) is looked at with the methods it defines; a class reached from a function (the
    learner's `Value`, named in its own methods) only by where it was defined."""
    seen: set[int] = set()
    todo = [(obj, 0)]
    if isinstance(obj, type):
        todo += [(v, 0) for v in vars(obj).values() if type(v) in (types.FunctionType, staticmethod, classmethod)]
    while todo and len(seen) < _MOST:
        item, depth = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        kind = type(item)
        if kind is types.FunctionType:
            filename = item.__code__.co_filename
            if filename.startswith(GRADER_DIRS):
                return _shown(filename)
        elif kind is types.ModuleType and _is_grader_module(item.__name__):
            return _shown(getattr(item, "__file__", None) or item.__name__)
        elif isinstance(item, type) and _is_grader_module(type.__getattribute__(item, "__module__")):
            return _shown(item.__module__.replace(".", "/") + ".py")
        if depth < _DEPTH:
            todo.extend((x, depth + 1) for x in _reached(item))
    return None


def target_object(ns: Mapping[str, Any], target: str) -> Any:
    """The object a target names, as its class stores it (`Value.__add__` from the class's own __dict__), or None."""
    head, _, attr = target.partition(".")
    obj = ns.get(head)
    if not attr:
        return obj
    if not isinstance(obj, type):
        return None
    return next((vars(k)[attr] for k in obj.__mro__ if k is not object and attr in vars(k)), None)


_SEEN: dict[int, tuple[Any, str | None]] = {}  # each object looked at once (held, so that its id stays its own)


def _looked_at(obj: Any) -> str | None:
    known = _SEEN.get(id(obj))
    if known is not None and known[0] is obj:
        return known[1]
    if len(_SEEN) >= 256:  # a kernel redefines its functions as its cells run again: keep the latest
        _SEEN.clear()
    found = graders_code(obj)
    _SEEN[id(obj)] = (obj, found)
    return found


def borrowed(ns: Mapping[str, Any], targets: tuple[str, ...]) -> tuple[str, str] | None:
    """(target, grader file) for the first target that is the grader's code, or None (each target object is looked
    at once, on the first case of the first check that runs it)."""
    for target in targets:
        found = _looked_at(target_object(ns, target))
        if found:
            return target, found
    return None
