"""The tamper guard: everything the learner's process relies on to answer the grader, snapshotted before any learner
code runs and compared after every cell."""

from __future__ import annotations

import gc
import itertools
import operator
import sys
from typing import Any

GUARDED = ("builtins", "math", "json", "json.encoder", "numbers", "operator", "multiprocessing.connection")
UNGUARDED_NAMES = {"_", "__", "___", "_dh", "_oh", "_ih", "__builtins__", "_PREPARED"}  # the last: emptied by prepared.take


class Guard:
    """Everything the learner's process relies on to answer the grader, as it was before any learner code ran.

    After each cell the worker compares: a replaced attribute of an `autograder` module, of a class or function
    defined there (its code too), of `builtins`, `math`, `json`, ... or a `check` rebound in the notebook is
    tampering. Honest notebooks never replace these; new attributes are ignored.
    """

    def __init__(self, user_ns: dict[str, Any]) -> None:
        import autograder

        self.user_ns = user_ns
        self.check = autograder.check  # the function a notebook imports (the stand-in's, inside the sandbox)
        # (mapping, its keys, their values) for each mapping walked
        self.views: list[tuple[Any, tuple[Any, ...], tuple[Any, ...]]] = []
        self.functions: tuple[Any, ...] = ()
        self.owned: list[tuple[Any, type, dict[str, Any]]] = []  # (object, its class, its attributes) of `watch`
        self.items = self._take(self.views)
        # every guarded value fetched and compared at C speed: one itemgetter per mapping, called by `map` (a
        # mapping.get per item, in a loop per mapping, was most of the guard's time after each cell). A single key is
        # asked twice, so that every getter returns a tuple.
        walked = [(mapping, keys if len(keys) > 1 else keys * 2, values if len(keys) > 1 else values * 2)
                  for mapping, keys, values in self.views if keys]
        self.mappings = tuple(mapping for mapping, _, _ in walked)
        self.getters = tuple(operator.itemgetter(*keys) for _, keys, _ in walked)
        self.values = tuple(itertools.chain.from_iterable(values for _, _, values in walked))
        # A function's code, defaults, globals... as the collector sees them: reading `__code__` raises an audit
        # event per function (hundreds per cell through the worker's audit hook, ~4 ms); this is one call.
        self.referents = gc.get_referents
        self.function_parts = self.referents(*self.functions)

    @staticmethod
    def _modules() -> dict[str, Any]:
        names = [n for n in list(sys.modules) if n.split(".")[0] == "autograder"] + list(GUARDED)
        return {n: sys.modules[n] for n in names if n in sys.modules}

    def _take(self, views: list[tuple[Any, tuple[Any, ...], tuple[Any, ...]]] | None = None) -> dict[tuple[str, ...], Any]:
        """Every guarded item; with `views`, also each mapping walked with its keys and values (for `unchanged`)."""
        items: dict[tuple[str, ...], Any] = {}
        modules = self._modules()
        functions: list[Any] = []

        def view(mapping: Any, pairs: list[tuple[Any, Any]]) -> None:
            if views is not None:
                views.append((mapping, tuple(k for k, _ in pairs), tuple(v for _, v in pairs)))

        view(sys.modules, list(modules.items()))
        for mname, module in modules.items():
            pairs = [(k, v) for k, v in list(vars(module).items()) if k not in UNGUARDED_NAMES]
            view(vars(module), pairs)
            for key, value in pairs:
                items[(mname, key)] = value
                owner = getattr(value, "__module__", None) == mname
                if owner and isinstance(value, type):
                    members = list(vars(value).items())
                    view(vars(value), members)
                    for attr, member in members:
                        items[(mname, key, attr)] = member
                elif owner and callable(value) and hasattr(value, "__code__"):
                    items[(mname, key, "__code__")] = value.__code__
                    items[(mname, key, "__defaults__")] = value.__defaults__
                    functions.append(value)
                elif mname.startswith("autograder") and isinstance(value, dict):
                    entries = list(value.items())[:1000]
                    view(value, entries)
                    for k, v in entries:
                        items[(mname, key, f"[{k!r}]")] = v
        if views is not None:
            self.functions = tuple(functions)
        return items

    def watch(self, *objects: Any, mutable: tuple[str, ...] = ("seq", "function_parts")) -> None:
        """Also guard the worker's own objects (its writer, probe kit, connection, this guard): an attribute of one
        replaced (CPython raises no audit event for an instance's attribute) or its class swapped is tampering."""
        for obj in objects:
            state = {k: v for k, v in vars(obj).items() if k not in mutable}
            self.owned.append((obj, type(obj), state))

    def _owned_changes(self) -> list[str]:
        changed = []
        for obj, cls, state in self.owned:
            now = {k: v for k, v in vars(obj).items() if k in state or k not in ("seq", "function_parts")}
            if type(obj) is not cls:
                changed.append(f"the worker's {cls.__name__}'s class")
            changed += [f"the worker's {cls.__name__}.{k}" for k in sorted(set(now) | set(state))
                        if now.get(k, _MISSING) is not state.get(k, _MISSING)]
        return changed

    def unchanged(self) -> bool:
        """True when every guarded item is still the very object of the snapshot: identity checks at C speed, the
        same items `changes` compares (it runs only when this says something moved)."""
        if self.owned and self._owned_changes():
            return False
        try:
            now = itertools.chain.from_iterable(map(operator.call, self.getters, self.mappings))
            if not all(map(operator.is_, now, self.values)):
                return False
        except Exception:  # a guarded name removed (KeyError), or a lookup that fails: `changes` compares in full
            return False
        parts = self.referents(*self.functions)
        return len(parts) == len(self.function_parts) and all(map(operator.is_, parts, self.function_parts))

    def changes(self) -> list[str]:
        """What the notebook replaced since the snapshot (empty for an honest notebook)."""
        ns_check = self.user_ns.get("check")
        rebound = callable(ns_check) and ns_check is not self.check
        if not rebound and self.unchanged():
            return []
        owned = self._owned_changes()
        now = self._take()
        keys = [k for k, v in self.items.items() if k not in now or now[k] is not v]
        if not keys:  # a part nothing guards moved (a function's __dict__ made on first use): look again from here
            self.function_parts = self.referents(*self.functions)
        replaced = set(keys)
        changed = [".".join(k) for k in keys if not (len(k) > 2 and k[:2] in replaced)]  # a new function, not also its code
        if rebound:
            changed.append("check (rebound in the notebook)")
        return (owned + changed)[:10]


_MISSING = object()
