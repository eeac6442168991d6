"""The worker's PEP 578 audit hook: introspection and escape attempts by learner code, reported as they happen.

It reports; it never enforces (Python's audit hooks are not a sandbox: the OS sandbox enforces). An event
counts when it comes from learner code: the frame that raised it is the learner's, or a standard-library
wrapper (`inspect.currentframe`, `ctypes`, `subprocess`...) called by the learner. Libraries doing their own
work (IPython running a cell, matplotlib, tqdm, logging, dataclasses, typing) raise some of these events
themselves and are never blamed. Imports only the standard library: it runs inside the sandbox.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

# Events that count whenever learner code raises them (directly or through a wrapper in WRAPPERS).
EVENTS = {
    "sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile", "sys.addaudithook",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents",
    "code.__new__", "function.__new__",
    "os.kill", "os.killpg", "signal.pthread_kill",
    "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "pty.spawn",
    "sqlite3.connect",  # a gradebook is SQLite: no notebook needs a database while it is graded
    "autograder.grader_module",  # raised by the sandbox's stand-in `autograder` when a notebook imports the grader
}
FILE_EVENTS = ("open", "os.listdir", "os.scandir")  # reported for paths outside the notebook's folder (and /proc/*/fd)
PREFIXES = ("ctypes.", "socket.", "_ctypes.")
# Attributes whose reading or writing raises object.__getattr__ / __setattr__ and hands over a frame or code.
SECRET_ATTRS = {"__code__", "__globals__", "__closure__", "tb_frame", "gi_frame", "cr_frame", "ag_frame", "gi_code", "f_code",
                "f_back", "f_globals", "f_locals"}
# Modules a notebook never needs inside the grader's worker: the answer side and the grader's own machinery.
GRADER_MODULES = ("autograder.grading", "autograder.catalog", "autograder.check", "autograder.checks",
                  "autograder.truth", "autograder.numeric", "autograder.expressions", "autograder.net_reference")
# Standard-library modules that raise watched events on their caller's behalf: blame whoever called them.
WRAPPERS = ("inspect", "traceback", "ctypes", "subprocess", "socket", "os", "signal", "pty", "multiprocessing",
            "asyncio", "concurrent", "threading", "bdb", "pdb", "profile", "cProfile", "trace", "types", "importlib",
            "<frozen importlib", "code", "codeop", "runpy", "pickle", "marshal", "shutil")


def _runtime_dirs() -> tuple[str, ...]:
    """Where the Python runtime, installed libraries and the grader's own package live."""
    paths = sysconfig.get_paths()
    dirs = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    here = os.path.abspath(__file__)
    dirs.add(here[:here.rindex(f"{os.sep}autograder{os.sep}")])  # the folder holding the autograder package (in the
    # sandbox: the staged folder; else the checkout, its course config included), wherever this file sits below it
    return tuple(sorted(d.rstrip(os.sep) + os.sep for d in dirs))


def _stdlib_module(filename: str, stdlib: tuple[str, ...]) -> str:
    """The top-level name of the standard-library module a file belongs to ("" if it is not one)."""
    if filename.startswith("<frozen importlib"):
        return "<frozen importlib"
    for root in stdlib:
        if filename.startswith(root):
            rest = filename[len(root):]
            if rest.startswith("site-packages") or rest.startswith("dist-packages"):
                return ""
            return rest.split(os.sep, 1)[0].removesuffix(".py")
    return ""


def _stdlib_dirs() -> tuple[str, ...]:
    """Where the standard library lives."""
    paths = sysconfig.get_paths()
    return tuple(sorted({paths[k].rstrip(os.sep) + os.sep for k in ("stdlib", "platstdlib") if k in paths}))


def places() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the runtime's folders, the standard library's): the same for every worker, so the process that forks them
    works them out once (`prepared`)."""
    return _runtime_dirs(), _stdlib_dirs()


class Hook:
    """The audit hook: decides whether an event is the learner's and hands it to `report` (event, detail, where)."""

    def __init__(self, report: Callable[[str, str, str], None], max_reports: int,
                 where: tuple[tuple[str, ...], tuple[str, ...]] | None = None) -> None:
        self.report, self.max_reports = report, max_reports  # (settings.AUDIT_REPORTS: handed in, stdlib only here)
        self.runtime, self.stdlib = where or places()
        self.own = (*self.runtime, os.getcwd().rstrip(os.sep) + os.sep, os.getcwd(), "/tmp", "/dev/null", "/dev/urandom")
        self.getframe = sys._getframe  # taken now: a notebook that replaces sys._getframe cannot blind the hook
        self.busy: set[int] = set()
        self.seen: set[tuple[str, str]] = set()
        self.ident = threading.get_ident
        self.pid = os.getpid()
        self.getpid = os.getpid

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if not (event in EVENTS or event.startswith(PREFIXES) or event in ("object.__getattr__", "object.__setattr__",
                                                                          "import", "compile", *FILE_EVENTS)):
            return
        if self.getpid() != self.pid:
            return  # a process the notebook forked shares the channel's fd: only the worker itself may write on it
        me = self.ident()
        if me in self.busy:
            return  # the hook's own sys._getframe
        self.busy.add(me)
        try:
            self._check(event, args)
        except BaseException:  # an audit hook that raises would break the audited call: never in honest code
            pass
        finally:
            self.busy.discard(me)

    def _check(self, event: str, args: tuple[Any, ...]) -> None:
        if len(self.seen) >= self.max_reports:
            return
        detail = self._detail(event, args)
        if detail is None:
            return
        frame = self.getframe(2)  # _check <- __call__ <- the frame that raised the event
        wrappers_allowed = event not in ("object.__getattr__", "object.__setattr__", "compile")
        where = self._learner(frame, wrappers_allowed)
        if where is None:
            return
        key = (event, detail)
        if key in self.seen:
            return
        self.seen.add(key)
        self.report(event, detail, where)

    def _detail(self, event: str, args: tuple[Any, ...]) -> str | None:
        """What the event touched, or None when this occurrence is not worth reporting."""
        if event in ("object.__getattr__", "object.__setattr__"):
            obj, name = args[0], args[1]
            if name in SECRET_ATTRS:
                return f"{type(obj).__name__}.{name}"
            if event == "object.__setattr__" and isinstance(obj, type) and self._runtime_type(obj):
                return f"{obj.__module__}.{obj.__qualname__}.{name} replaced"
            return None
        if event == "import":
            name = str(args[0])
            return name if name.startswith(GRADER_MODULES) else None
        if event == "compile":
            filename = str(args[1]) if len(args) > 1 else ""
            # code given a library's file name would be taken for the runtime's own: an attempt to hide
            return f"code compiled as {filename}" if filename.startswith(self.runtime) else None
        if event in FILE_EVENTS:
            path = os.fsdecode(args[0]) if args and isinstance(args[0], (str, bytes)) else ""
            if path.startswith("/proc/") and "/fd" in path:
                return f"{event} {path}"
            # an absolute path outside the notebook's folder, /tmp and the runtime: the grader's files are what a
            # notebook would be after there (the sandbox hides them; this reports the attempt)
            outside = os.path.isabs(path) and not os.path.normpath(path).startswith(self.own)
            return f"{event} {path[:200]}" if outside else None
        if event == "autograder.grader_module":
            return f"import of the grader's {args[0]}"
        if event in ("os.kill", "os.killpg", "signal.pthread_kill"):
            return f"signal {args[1] if len(args) > 1 else '?'} to {args[0]}"
        if event == "subprocess.Popen":
            return f"runs {str(args[0])[:100]}"
        return event

    def _runtime_type(self, cls: type) -> bool:
        """A class of the runtime, a library or the grader (a notebook replacing its methods is patching them)."""
        if cls.__module__ == "__main__":
            return False
        if cls.__module__ == "builtins":
            return True
        module = sys.modules.get(cls.__module__)
        return module is not None and str(getattr(module, "__file__", "") or "").startswith(self.runtime)

    def _learner(self, frame: FrameType | None, through_wrappers: bool) -> str | None:
        """Where in learner code the event comes from, or None when the runtime or a library raised it on its own."""
        while frame is not None:
            filename = frame.f_code.co_filename
            if not filename.startswith(self.runtime) and not filename.startswith("<frozen"):
                if filename.startswith("<expression"):
                    return None  # the grader's probe code, run on the learner's objects
                return f"{frame.f_code.co_qualname} line {frame.f_lineno}" + (
                    "" if filename.startswith("<ipython-input") else f" of {filename[-80:]}")
            ipython_open = frame.f_code.co_name == "_modified_open"  # IPython's open() in the notebook's namespace
            if not through_wrappers or (_stdlib_module(filename, self.stdlib) not in WRAPPERS and not ipython_open):
                return None
            frame = frame.f_back
        return None


def install_audit_hook(report: Callable[[str, str, str], None], max_reports: int,
                       where: tuple[tuple[str, ...], tuple[str, ...]] | None = None) -> Hook:
    """Add the hook (for the life of the process: audit hooks cannot be removed); events go to `report`, the first
    `max_reports` distinct ones. `where`: `places()`, when the caller has it already."""
    hook = Hook(report, max_reports, where)
    sys.addaudithook(hook)
    return hook
