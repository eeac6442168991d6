"""What a notebook's grade depended on, kept in its resume record, and what of it has changed since.

A graded notebook's record carries its `Depends`: the grader's version (`GRADER_VERSION`, with Python's), the
submitted file's digest, a digest of each of the notebook's source cells as the assignment holds them (test cells,
locked and solution cells), the limits and other settings, the judging machinery every check shares, and a digest of
each check that ran in it (`Digests.check`). A later run regrades the notebook only when one of those differs now,
and says which (`moved`): a change to one check regrades the notebooks where that check ran, and no other.

A check's digest is of what decides its verdicts: its declaration, the compiled code of its functions (cases, judge,
what ran, fits) and of every function, class and constant of the package they reach (through their globals, closures
and nested code, transitively: a helper in truth/ or a table of expressions counts for every check that reaches it;
an object of the package counts by its class's code and, for a dataclass, its fields, never by state a run fills in),
the tolerance it is judged with (`Tolerance.for_check`), and the digests of the checks it isolates its failures with.
Bytecode, not text: a comment, a blank line or a moved function changes nothing; a docstring does (it is a constant).
The shared judging code (`JUDGING`) is digested as the text of its files: any edit there regrades every notebook where
a check ran.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import json
import types
from pathlib import Path
from typing import Any

from ... import checks as catalog
from ...checks.base import Check
from ...settings import Tolerance
from ..types import Depends, short_digest

PACKAGE = "autograder"
# The judging every check shares, whatever it declares: how cases are judged and blamed, the sentences, and the probes
# that observe the learner's code next to it. A change to any of these files may move any judged grade cell.
JUDGING = ("checks/run.py", "checks/base.py", "checks/messages.py", "grading/grade/judge.py", "probes")


def _sha(text: str | bytes) -> str:
    return hashlib.sha256(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")).hexdigest()


class Digests:
    """Digests of checks and of the package's code, each computed once per run (the catalogue does not change)."""

    def __init__(self, tolerance: Tolerance) -> None:
        self.tolerance = tolerance
        self._checks: dict[str, str] = {}
        self._objects: dict[int, str] = {}
        self._keep: list[object] = []  # what `_objects` digested, alive while its id is a key
        self._judging: str | None = None
        for name in catalog.BY_NAME:  # every check digested now, before this run judges anything
            self.check(name)

    def judging(self) -> str:
        """The digest of the judging code every check shares (`JUDGING`)."""
        if self._judging is None:
            root = Path(__file__).resolve().parents[2]
            h = hashlib.sha256()
            for part in JUDGING:
                path = root / part
                for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
                    h.update(f"{file.relative_to(root)}\0".encode() + file.read_bytes() + b"\0")
            self._judging = short_digest(h)
        return self._judging

    def check(self, name: str) -> str:
        """The digest of check `name` as this run would judge it ("" when the catalogue has no such check)."""
        if name not in self._checks:
            self._checks[name] = ""  # a cycle of isolated checks ends here
            check = catalog.BY_NAME.get(name)
            if check is not None:
                self._checks[name] = self._check(check)
        return self._checks[name]

    def _check(self, check: Check) -> str:
        tolerance = self.tolerance.for_check(check.name)
        declared = {f.name: self._value(getattr(check, f.name)) for f in dataclasses.fields(check)}
        parts = {"declared": declared,
                 "tolerance": tolerance.values(),
                 "isolated": {n: self.check(n) for n in (*check.isolate, *check.prerequisites)}}
        return short_digest(json.dumps(parts, sort_keys=True, default=repr).encode())

    def _value(self, value: Any) -> Any:
        """A JSON-able stand-in for a value a check reaches: its code's digest for code, the value itself for data."""
        if value is None or isinstance(value, (bool, int, float, str)):
            return value if not isinstance(value, float) else repr(value)
        if isinstance(value, enum.Enum):
            return f"{type(value).__qualname__}.{value.name}"
        if isinstance(value, (tuple, list)):
            return [self._value(v) for v in value]
        if isinstance(value, (set, frozenset)):
            return sorted((self._value(v) for v in value), key=repr)
        if isinstance(value, dict):
            return sorted(([self._value(k), self._value(v)] for k, v in value.items()), key=repr)
        if isinstance(value, functools.partial):
            return [self._value(value.func), self._value(value.args), self._value(value.keywords)]
        if isinstance(value, property):
            return ["property", self._value(value.fget), self._value(value.fset), self._value(value.fdel)]
        if isinstance(value, (staticmethod, classmethod)):
            return [type(value).__name__, self._value(value.__func__)]
        if isinstance(value, functools.cached_property):
            return ["cached_property", self._value(value.func)]
        if callable(value) and not isinstance(value, (types.FunctionType, type)) and hasattr(value, "__wrapped__"):
            return ["wrapper", type(value).__qualname__, self._value(value.__wrapped__)]  # functools.lru_cache's
        if isinstance(value, (types.FunctionType, type, types.ModuleType)) or (
                dataclasses.is_dataclass(value) and not isinstance(value, type)):
            return self._object(value)
        if isinstance(value, (bytes, bytearray)):
            return _sha(bytes(value))
        if type(value).__module__.startswith(PACKAGE):  # an object of the package: its class's code (its state, which
            return ["instance", self._value(type(value))]  # may hold what a run computed, is not read)
        return f"<{type(value).__module__}.{type(value).__qualname__}>"  # another library's object: by its type

    def _object(self, obj: Any) -> str:
        key = id(obj)
        if key not in self._objects:
            self._objects[key] = "<cycle>"  # a function reaching itself (recursion) ends here
            self._keep.append(obj)
            self._objects[key] = _sha(json.dumps(self._parts(obj), sort_keys=True, default=repr))
        return self._objects[key]

    def _parts(self, obj: Any) -> Any:
        if isinstance(obj, types.ModuleType):
            return f"module {obj.__name__}"  # what of it is used is reached through the names the code reads
        if isinstance(obj, type):
            if not obj.__module__.startswith(PACKAGE):
                return f"class {obj.__module__}.{obj.__qualname__}"
            return ["class", obj.__qualname__, [[k, self._value(v)] for k, v in vars(obj).items()
                                                if isinstance(v, (types.FunctionType, property, staticmethod, classmethod,
                                                                  functools.cached_property)) or k.isupper()]]
        if dataclasses.is_dataclass(obj):  # its fields and its class's code (a method it is used through)
            return [self._value(type(obj)), [[f.name, self._value(getattr(obj, f.name))] for f in dataclasses.fields(obj)]]
        if isinstance(obj, types.FunctionType):
            if not (obj.__module__ or "").startswith(PACKAGE):
                return f"function {obj.__module__}.{obj.__qualname__}"
            wrapped = getattr(obj, "__wrapped__", None)
            # a decorator's wrapper (functools.wraps) is its code and the function it wraps: its other state (the
            # cache of truth.memo.remembered, filled as a run goes) decides no verdict
            closure = [self._value(c.cell_contents) if _filled(c) and (wrapped is None or _constant(c.cell_contents))
                       else None for c in obj.__closure__ or ()]
            return ["function", self._code(obj.__code__, obj.__globals__), closure, self._value(obj.__defaults__),
                    self._value(obj.__kwdefaults__), None if wrapped is None else self._value(wrapped)]
        return repr(obj)

    def _code(self, code: types.CodeType, scope: dict[str, Any]) -> Any:
        """Compiled code, its constants (nested code too), and what the names it reads are in `scope` (its module)."""
        consts = [self._code(c, scope) if isinstance(c, types.CodeType) else self._value(c) for c in code.co_consts]
        reached = {}
        for name in code.co_names:
            if name in scope:
                value = scope[name]
                if isinstance(value, types.ModuleType) and value.__name__.startswith(PACKAGE):
                    # a module of the package: the names the code reads of it (attributes share co_names)
                    reached[name] = [[n, self._value(getattr(value, n))] for n in code.co_names if hasattr(value, n)
                                     and not isinstance(getattr(value, n), types.ModuleType)]
                else:
                    reached[name] = self._value(value) if _ours(value) else _outside(value)
        return [code.co_code.hex(), consts, list(code.co_names), sorted(reached.items())]


def _constant(value: Any) -> bool:
    """Code or an immutable value (not a container a run fills)."""
    return isinstance(value, (types.FunctionType, type, str, int, float, bool, bytes, tuple, frozenset)) or value is None


def _filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def _ours(value: Any) -> bool:
    """Whether the value is data, or code of this package (digested), rather than another library's object."""
    module = getattr(value, "__module__", None) if isinstance(value, (types.FunctionType, type)) else None
    return module is None or str(module).startswith(PACKAGE)


def _outside(value: Any) -> str:
    """Another library's function or class, by name (its version is the environment's, which no record holds)."""
    return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', type(value).__qualname__)}"


def moved(old: Depends, now: Depends, digests: Digests) -> list[str]:
    """What of the notebook's grade's dependencies changed since `old` was recorded, one short phrase each (empty:
    nothing did, and its grade cannot move). `now` has no `checks`: those that ran before are digested again."""
    why = []
    if old.grader != now.grader:
        why.append(f"the grader changed ({old.grader} -> {now.grader})")
    if old.submission != now.submission:
        why.append("the submitted file changed")
    for name in sorted(old.cells.keys() | now.cells.keys()):
        if old.cells.get(name) != now.cells.get(name):
            why.append("the cells of the assignment's other notebooks changed" if not name
                       else f"cell `{name}` of the assignment changed")
    for name in sorted(old.settings.keys() | now.settings.keys()):
        if old.settings.get(name) != now.settings.get(name):
            why.append(f"setting {name} changed ({old.settings.get(name)!r} -> {now.settings.get(name)!r})")
    if old.checks and old.judging != digests.judging():
        why.append("the judging code every check shares changed")
    for name in sorted(old.checks):
        if old.checks[name] != digests.check(name):
            why.append(f"check `{name}` changed")
    return why
