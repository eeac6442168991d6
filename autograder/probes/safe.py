"""Reading learner objects without trusting them: numbers, time limits, captured output."""

from __future__ import annotations

import contextlib
import io
import math
import numbers
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any


class LearnerError(Exception):
    """Learner code misbehaved: `key` says how, `fields` are the facts the probe saw (short strings).

    The sentence a learner reads is phrased on the answer side (checks/messages.PROBE_ERRORS[key]), which the probe
    side may not import; str() is a plain rendering of the facts, for the aids and for debugging."""

    def __init__(self, key: str, **fields: object) -> None:
        self.key = key
        self.fields = {k: str(v)[:500] for k, v in fields.items()}
        super().__init__(key)

    def __str__(self) -> str:
        facts = ", ".join(f"{k}: {v}" for k, v in self.fields.items())
        said = self.key.replace("_", " ")
        return f"{said} ({facts})" if facts else said

    def as_data(self) -> dict[str, object]:
        """What an observation carries of this error: the key and the facts."""
        return {"error": self.key, "fields": dict(self.fields)}


class LearnerTimeout(LearnerError):
    """Learner code ran past the per-check time limit."""


# What read_number caught lying (for the batch grader's flags); bounded, drained by whoever reports it.
SUSPICIONS: list[str] = []


class _Unrelated:
    """A fresh object nothing honest compares equal to."""

    __slots__ = ()


def lie(obj: object, value: float | None) -> str | None:
    """How `obj` (read as `value`) lies about being that number, or None: equal to anything, or a false float()."""
    try:
        if (obj == _Unrelated()) is True:
            return "compares equal to an unrelated object (an __eq__ that always says True)"
    except Exception:
        pass
    if value is None or not math.isfinite(value):
        return None
    far = value + 1.0 + abs(value)
    try:
        if (obj == far) is True:
            return f"claims to equal {far!r} while holding {value!r}"
    except Exception:
        pass
    probes = {"float(x)": lambda: float(obj), "abs(x)": lambda: abs(obj), "x - y": lambda: obj - far}  # type: ignore[operator]
    honest = {"float(x)": value, "abs(x)": abs(value), "x - y": value - far}
    for name, probe in probes.items():
        try:
            got = probe()
            if isinstance(got, (int, float)) and abs(float(got) - honest[name]) > 1e-9 * (1.0 + abs(far)):
                return f"gives {name} = {float(got)!r} while it holds {value!r}"
        except Exception:
            pass
    return None


def _caught(what: str, obj: object, how: str) -> LearnerError:
    if len(SUSPICIONS) < 100:
        SUSPICIONS.append(f"{what}: a {type(obj).__name__} that {how}")
    return LearnerError("number_lies", what=what, kind=type(obj).__name__, how=how)


def read_number(obj: object, what: str) -> float:
    """`obj` as a plain float, or LearnerError naming `what` when it is not a real number."""
    if type(obj) is float:  # the common case, read as the general path below reads it: the float itself
        return obj  # type: ignore[return-value]
    if isinstance(obj, bool):
        raise LearnerError("number_is_bool", what=what, shown=repr(obj))
    if isinstance(obj, float):
        # float.__float__ reads the stored double, whatever a subclass overrides.
        value = float.__float__(obj)
    elif isinstance(obj, int):
        try:
            value = float(int.__index__(obj))
        except OverflowError:
            value = math.inf
    elif isinstance(obj, numbers.Real):
        try:
            value = float(obj)
        except Exception as exc:
            raise LearnerError("number_unreadable", what=what, error=describe(exc)) from None
    else:
        how = lie(obj, None)
        if how:
            raise _caught(what, obj, how)
        raise LearnerError("not_a_number", what=what, kind=type(obj).__name__, shown=short_repr(obj))
    if type(obj) not in (float, int):  # a subclass or another Real: numpy's are honest, a learner's may lie
        how = lie(obj, value)
        if how:
            _caught(what, obj, how)  # recorded for the flags; the stored value is what gets judged
    if type(value) is not float:  # pragma: no cover - float() guarantees it; kept as the contract
        raise LearnerError("number_not_float", what=what)
    return value


def short_repr(obj: object, limit: int = 60) -> str:
    """repr() of a learner object that cannot raise, loop long or flood the message."""
    kind = type(obj)
    try:
        if kind is str:
            text = repr(str.__str__(obj)[: limit + 1])
        elif kind in (int, float, complex, bool, type(None)):
            text = "<a huge int>" if kind is int and obj.bit_length() > 200 else repr(obj)  # type: ignore[attr-defined]
        elif kind in (list, tuple, set, frozenset, dict):
            # the items may be learner objects, whose repr we never call
            text = f"{kind.__name__} of {len(obj)}" if len(obj) else repr(kind())  # type: ignore[arg-type]
        else:
            # never a learner __repr__ (it may raise, loop or lie), and never an address: the same object shows the
            # same on every run
            text = f"<{type.__dict__['__name__'].__get__(kind, type)} object>"
    except Exception:
        text = f"<{kind.__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe(exc: BaseException) -> str:
    """`TypeName: message`, safe against exceptions whose str() raises."""
    try:
        msg = str(exc)
    except Exception:
        msg = ""
    name = type(exc).__name__
    return f"{name}: {msg[:300]}" if msg else name


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise LearnerTimeout in the main thread after `seconds` (no limit off the main thread).

    With a real-time alarm where the OS has one; in Pyodide (the browser), which has no `signal.setitimer`, by
    counting the loop iterations and calls of Python code (`sys.monitoring`): a loop that never ends is stopped,
    a single call into C that never returns is not.
    """
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return
    if not hasattr(signal, "setitimer"):
        with _counted_time_limit(seconds):
            yield
        return

    done = False

    def on_alarm(signum: int, frame: object) -> None:
        if not done:
            raise LearnerTimeout("timeout", seconds=f"{seconds:g}")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    previous_hook = sys.unraisablehook
    sys.unraisablehook = _dropping_timeouts(previous_hook)
    # The alarm repeats: a single one can land in a finalizer run by the garbage collector (a generator's
    # close(), a __del__), where Python swallows the exception as "unraisable" and the loop would go on.
    outer, outer_interval = signal.setitimer(signal.ITIMER_REAL, seconds, min(max(seconds / 10, 0.05), 1.0))
    started = time.monotonic()
    try:
        yield
    finally:
        while not done:
            try:
                done = True  # from here on the handler does nothing
            except LearnerTimeout:  # pragma: no cover - a tick landed just before the assignment
                continue
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        sys.unraisablehook = previous_hook
        if outer:  # an alarm the caller had set (a test runner's deadline) goes on, less the time spent here
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - started), 1e-6), outer_interval)


TIME_LIMIT_TOOL = "autograder time limit"


@contextlib.contextmanager
def _counted_time_limit(seconds: float) -> Iterator[None]:
    """The time limit without signals: every 1024th jump or Python call looks at the clock (no limit before 3.12)."""
    monitoring = getattr(sys, "monitoring", None)
    tool = next((t for t in (4, 3) if monitoring is not None and monitoring.get_tool(t) is None), None)
    if tool is None:  # another tool holds both ids (a debugger, a profiler): run without a limit
        yield
        return
    deadline = time.monotonic() + seconds
    ticks = 0

    def tick(*_: object) -> None:
        nonlocal ticks
        ticks += 1
        if ticks & 1023 == 0 and time.monotonic() > deadline:
            raise LearnerTimeout("timeout", seconds=f"{seconds:g}")

    events = monitoring.events
    monitoring.use_tool_id(tool, TIME_LIMIT_TOOL)
    try:
        for event in (events.JUMP, events.PY_START):
            monitoring.register_callback(tool, event, tick)
        monitoring.set_events(tool, events.JUMP | events.PY_START)
        yield
    finally:
        monitoring.set_events(tool, 0)
        for event in (events.JUMP, events.PY_START):
            monitoring.register_callback(tool, event, None)
        monitoring.free_tool_id(tool)


def _dropping_timeouts(previous: Callable[[Any], object]) -> Callable[[Any], object]:
    """An unraisable hook that drops our own timeouts and passes every other exception on."""

    def hook(unraisable: Any) -> None:
        # A tick that lands in a finalizer is expected (the next tick stops the loop); reporting it would mean
        # formatting a traceback while further ticks arrive, which can itself be interrupted.
        if not isinstance(unraisable.exc_value, LearnerTimeout):
            previous(unraisable)

    return hook


class _Sink(io.StringIO):
    """A stream that keeps only its first `limit` characters."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def write(self, s: str) -> int:
        room = self.limit - self.tell()
        if room > 0:
            super().write(str(s)[:room])
        return len(s) if isinstance(s, str) else 0


@contextlib.contextmanager
def captured_output(limit: int = 10_000) -> Iterator[_Sink]:
    """Swallow stdout and stderr of learner code (bounded), so a check cell prints only its verdict."""
    sink = _Sink(limit)
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        yield sink
