"""Raising, looping, lying or exiting learner code gives a failed check with a clear message: never a crash or a pass."""

import signal
import sys
import time

import pytest
from conftest import ENGINES

from autograder import checks as catalog
from autograder.checks import run_check, run_checks
from autograder.probes.safe import LearnerTimeout, time_limit
from autograder.settings import Limits

REFERENCE = (ENGINES / "reference.py").read_text()
FAST = Limits(check_timeout=0.3)


def engine(patch: str) -> dict:
    """The reference engine with `patch` run after it (it rebinds methods of Value and friends)."""
    ns: dict = {"__name__": "__learner__"}
    exec(compile(REFERENCE + "\n" + patch, "<learner>", "exec"), ns)
    return ns


def failure(check: str, patch: str) -> str:
    """The message of check `check` on the patched engine, which must fail."""
    result = run_check(catalog.get(check), engine(patch), limits=FAST)
    assert not result.passed and result.points == 0
    assert "Traceback" not in result.message
    return result.message


GRAD_AFTER_MUL = '''
_mul = Value.__mul__
def __mul__(self, other):
    out = _mul(self, other)
    inner = out._backward
    def _backward():
        inner()
        self.grad = {value}
    out._backward = _backward
    return out
Value.__mul__ = __mul__
'''


GRAD_AFTER_BACKWARD = '''
_bw = Value.backward
def backward(self):
    _bw(self)
    self.grad = {value}
Value.backward = backward
'''


@pytest.mark.parametrize(("value", "says"), [
    ("'0.5'", "is a str ('0.5'), expected a number"),
    ("None", "is a NoneType (None), expected a number"),
    ("[1.0]", "is a list (list of 1), expected a number"),
    ("complex(1, 0)", "is a complex"),
    ("True", "is a bool"),
    ("type('AlwaysEqual', (), {'__eq__': lambda s, o: True, '__hash__': lambda s: 0})()", "is a AlwaysEqual"),
])
def test_grad_that_is_not_a_number_fails_with_its_type(value, says):
    assert says in failure("backward_through_mul", GRAD_AFTER_BACKWARD.format(value=value))
    assert "out.grad" in failure("backward_through_mul", GRAD_AFTER_BACKWARD.format(value=value))


def test_junk_grad_inside_the_graph_names_the_failing_operation():
    message = failure("mul_local_backward", GRAD_AFTER_MUL.format(value="'0.5'"))
    # __mul__'s _backward is caught leaving a str in a.grad
    assert "a.grad is a str ('0.5')" in message


LIAR = '''
class Liar(float):
    """Stores 0.0 but claims to be anything: equal to all, close to all."""
    def __float__(self): return 1e9
    def __eq__(self, other): return True
    __hash__ = float.__hash__
    def __sub__(self, other): return Liar(0.0)
    __rsub__ = __sub__
    def __abs__(self): return 0.0
    def __lt__(self, other): return True
    __le__ = __lt__
'''


def test_float_subclass_that_lies_is_read_by_its_stored_value():
    message = failure("mul_local_backward", LIAR + GRAD_AFTER_MUL.format(value="Liar(0.0)"))
    assert "got a.grad = 0," in message and "expected" in message


def test_int_subclass_that_lies_is_read_by_its_stored_value():
    patch = "class Lying(int):\n    def __index__(self): return 7\n    def __float__(self): return 7.0\n"
    message = failure("mul_local_backward", patch + GRAD_AFTER_MUL.format(value="Lying(0)"))
    assert "got a.grad = 0," in message


def test_data_of_huge_int_fails_instead_of_overflowing():
    patch = "_add = Value.__add__\nValue.__add__ = lambda s, o: Value(10**400, (s,))\n"
    assert "expected" in failure("add_forward", patch)


def test_method_that_raises_names_the_exception_and_the_method():
    patch = "def __add__(self, other):\n    raise ValueError('no adding today')\nValue.__add__ = __add__\n"
    message = failure("add_forward", patch)
    assert "ValueError: no adding today in __add__" in message and "`out = a + b`" in message


def test_backward_closure_that_raises_is_blamed_on_the_closure():
    message = failure("mul_local_backward", GRAD_AFTER_MUL.format(value="1 / 0"))
    assert "ZeroDivisionError" in message and "__mul__.<locals>._backward" in message


def test_infinite_loop_hits_the_per_check_time_limit():
    patch = "def backward(self):\n    while True:\n        pass\nValue.backward = backward\n"
    assert "did not finish within 0.3 s" in failure("backward_through_add", patch)


def test_infinite_loop_in_the_net_hits_the_time_limit():
    patch = "def train(model, xs, ys, steps, lr):\n    while True:\n        pass\n"
    assert "did not finish within 0.3 s" in failure("train_descends", patch)


def test_sys_exit_in_a_method_is_a_failed_check():
    patch = "import sys\ndef tanh(self):\n    sys.exit(3)\nValue.tanh = tanh\n"
    assert "called sys.exit() in tanh" in failure("tanh_backward", patch)


def test_other_base_exceptions_are_failed_checks():
    patch = "def exp(self):\n    raise GeneratorExit('odd')\nValue.exp = exp\n"
    assert "GeneratorExit" in failure("exp_backward", patch)


def test_generator_prev_is_named():
    patch = '''
_init = Value.__init__
def __init__(self, data, _children=(), _op="", label=""):
    _init(self, data, _children, _op, label)
    self._prev = (c for c in _children)
Value.__init__ = __init__
'''
    assert "_prev is a generator" in failure("backward_once_per_node", patch)


def test_endless_prev_is_refused_without_hanging():
    patch = '''
import itertools
class Endless:
    def __iter__(self):
        return (Value(1.0) for _ in itertools.count())
_init = Value.__init__
def __init__(self, data, _children=(), _op="", label=""):
    _init(self, data, _children, _op, label)
    if _children:
        self._prev = Endless()
Value.__init__ = __init__
'''
    # the learner's + makes its own node: reading its children stops at the bound
    add = run_check(catalog.get("add_forward"), engine(patch), limits=Limits(check_timeout=5))
    assert not add.passed and "more than 100000 children" in add.message
    # the grader's backward() walking the learner's tanh node stops at the bound too, or at the time limit
    message = failure("tanh_backward", patch)
    assert "did not finish" in message or "more than 100000 children" in message, message


def test_a_timeout_swallowed_by_a_finalizer_is_dropped_and_other_unraisables_still_reported(monkeypatch):
    # an alarm tick inside a generator's close() or a __del__ is expected; reporting it (pytest turns it into a
    # failure, Python prints it) would format a traceback while more ticks arrive
    seen: list[BaseException] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))

    class Raises:
        def __init__(self, exc: BaseException) -> None:
            self.exc = exc

        def __del__(self) -> None:
            raise self.exc

    with time_limit(5):
        Raises(LearnerTimeout("tick"))
        Raises(ValueError("a learner bug"))
    assert [type(e) for e in seen] == [ValueError]
    Raises(LearnerTimeout("outside any limit"))
    assert [type(e) for e in seen] == [ValueError, LearnerTimeout]


def test_prev_holding_numbers_is_named():
    patch = '''
_init = Value.__init__
def __init__(self, data, _children=(), _op="", label=""):
    _init(self, data, _children, _op, label)
    self._prev = tuple(c.data for c in _children)
Value.__init__ = __init__
'''
    assert "is a float" in failure("tanh_backward", patch)  # the learner's tanh node, walked by the grader


def test_operator_returning_a_plain_number_is_named():
    patch = "Value.__mul__ = lambda self, other: self.data * getattr(other, 'data', other)\n"
    assert "not a Value" in failure("mul_forward", patch)


def test_flooding_stdout_is_swallowed_and_the_check_still_judges(capsys):
    patch = '''
_bw = Value.backward
def backward(self):
    for _ in range(100_000):
        print("debug " * 10)
    _bw(self)
Value.backward = backward
'''
    result = run_check(catalog.get("add_backward"), engine(patch), limits=Limits(check_timeout=5))
    assert result.passed
    assert capsys.readouterr().out == ""


def test_repr_that_raises_or_returns_junk_fails_cleanly():
    assert "RuntimeError" in failure("value_repr", "def r(self):\n    raise RuntimeError('x')\nValue.__repr__ = r\n")
    assert "TypeError" in failure("value_repr", "Value.__repr__ = lambda self: 42\n")


def test_learner_recursion_limit_change_is_undone():
    import sys

    before = sys.getrecursionlimit()
    patch = "import sys\ndef r(self):\n    sys.setrecursionlimit(60)\n    return 'Value(1.0)'\nValue.__repr__ = r\n"
    run_checks(catalog.spec_checks()[:3], engine(patch), limits=FAST)
    assert sys.getrecursionlimit() == before


def test_a_whole_hostile_engine_is_graded_without_raising():
    patch = LIAR + GRAD_AFTER_MUL.format(value="Liar(0.0)") + "Value.tanh = lambda self: (_ for _ in ()).throw(SystemExit)\n"
    results = run_checks(catalog.spec_checks(), engine(patch), limits=FAST)
    failed = {r.name for r in results if not r.passed}
    assert {"number_operands", "tanh_backward"} <= failed  # the checks that run the hostile * and tanh
    # the net's checks run the grader's Value operations, so the hostile ones cost them nothing
    assert not {"neuron_forward", "train_descends"} & failed


def test_time_limit_survives_a_timeout_swallowed_by_a_finalizer():
    # a loop that swallows every exception except on the first few tries would hang a one-shot alarm
    patch = '''
def backward(self):
    swallowed = 0
    while True:
        try:
            while True:
                pass
        except Exception:
            swallowed += 1
            if swallowed > 2:
                raise
Value.backward = backward
'''
    assert "did not finish within 0.3 s" in failure("backward_through_add", patch)


def test_an_alarm_set_before_a_check_still_rings_after_it() -> None:
    # (a test runner's deadline, pytest-timeout's among them, or a notebook's own alarm: a check may not cancel it)
    rang: list[float] = []

    def rings() -> bool:
        end = time.monotonic() + 10
        while not rang and time.monotonic() < end:
            time.sleep(0.01)
        return len(rang) == 1

    previous = signal.signal(signal.SIGALRM, lambda *_: rang.append(time.monotonic()))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.6)
        with time_limit(5):
            time.sleep(0.2)
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert rang or 0 < left <= 0.4, left  # still set, less the time the check took
        assert rings()
        rang.clear()
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        with time_limit(5):  # an alarm that comes due during a check rings as the check ends
            time.sleep(0.3)
        assert rings()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
