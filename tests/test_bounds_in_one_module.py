"""Every bound in one module: the sandbox's, the channel's, the worker's and the helpers' fixed bounds are
`autograder/settings.py`'s, beside the configurable `Limits`; no module of `autograder.grading` keeps a numeric bound
of its own, nor waits a literal number of seconds."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "autograder"
GRADING = PACKAGE / "grading"
# Numbers that are no bound on a submission, a worker or a wait: what they are instead. A new entry needs a reason.
NOT_BOUNDS = {
    "BUILD_FAILED": "an exit status the fork server reports",
    "SANDBOX_UID": "the uid inside the sandbox (nobody)",
    "OUTPUTS_DEPTH": "how deep nbformat's JSON nests a cell's outputs",
    "FLUSH": "how often a slow render sends what it has (pace, not a bound)",
    "SLOW_CELL": "a cell's size past which a render sends what it has so far (pace)",
    "MEMO_MARKDOWN": "the size of markdown worth memoising (a cache's, not a bound)",
    "NUDGE": "the judge's nudge factor of a hidden input",
    "WINDOW_PER_THREAD": "tasks queued per grading thread (pace)",
    "GROUP_SECONDS": "how long the writer gathers finished notebooks for one transaction (pace)",
    "FILE_THREADS": "threads writing autograded files (pace)",
    "COMPACT_AT": "when the journal is rewritten (its size, the grader's own file)",
    "FINISH_STUDENTS": "students per transaction after grading (pace)",
    "BUSY_TIMEOUT_MS": "how long a gradebook write waits for another program's lock (the course's database, not a "
                       "submission's)",
    "WAIT_FOR_WORKER": "how long a cluster run waits for its first worker (a scheduler's queue)",
    "SHARED_TIMEOUT": "how long a cluster worker waits for its run's settings from the scheduler",
    "RUNS_HELD": "cluster runs whose settings a worker keeps",
    "RETRIES": "times Dask retries a task that raised",
    "CHUNK": "bytes read from a channel at a time",
    "FRAME_LIMIT": "the longest frame a frame header can announce (its format)",
}
KERNEL = GRADING / "grade" / "sandbox" / "linux.py"  # the kernel's numbers: system calls, flags, prctl options
# the modules that bound a submission's worker, its channel and the grader's helpers: no literal wait there either
SANDBOX_AND_CHANNEL = [*(GRADING / "grade" / "sandbox").rglob("*.py"), *(GRADING / "grade" / "worker").rglob("*.py"),
                       *(GRADING / "grade" / f"{m}.py" for m in ("channel", "runner", "bounded"))]
WAITS = {"join", "wait", "gone", "settimeout", "wait_for", "wait_fd", "exitcode", "status", "sleep"}


def _numeric(node: ast.AST) -> bool:
    """A number, or a sum, product, power, tuple, list or dict of numbers (`64 * 2**20`, `(512 * MIB, 20_000)`)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.BinOp):
        return _numeric(node.left) or _numeric(node.right)
    if isinstance(node, ast.UnaryOp):
        return _numeric(node.operand)
    if isinstance(node, (ast.Tuple, ast.List)):
        return any(_numeric(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return any(_numeric(v) for v in node.values if v is not None)
    return False


def _zero(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0


def numeric_constants(path: Path) -> list[str]:
    """Module-level names a file binds to numbers: `NAME = 64 * 1024`."""
    found = []
    for node in ast.parse(path.read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        value = getattr(node, "value", None)
        if value is not None and _numeric(value):
            found += [t.id for t in targets if isinstance(t, ast.Name)]
            found += [e.id for t in targets if isinstance(t, ast.Tuple) for e in t.elts if isinstance(e, ast.Name)]
    return found


def literal_waits(path: Path) -> list[str]:
    """Calls given a literal number of seconds to wait: `x.join(5)`, `wait_fd(fd, 5.0)`, `f(timeout=10)` (0, a poll,
    is no wait)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        literal = [a for a in node.args[-1:] if name in WAITS and _numeric(a) and not _zero(a)]
        literal += [k.value for k in node.keywords if k.arg and "timeout" in k.arg and _numeric(k.value) and not _zero(k.value)]
        found += [f"{path.name}:{node.lineno} {name}(...)" for _ in literal[:1]]
    return found


def stray_bounds(root: Path, kernel: Path | None, sandbox_and_channel: list[Path]) -> list[str]:
    """Every numeric constant outside the allowed ones, and every literal wait of the sandbox and channel modules."""
    stray = [f"{p.relative_to(root.parent)}: {name}" for p in sorted(root.rglob("*.py")) if p != kernel
             for name in numeric_constants(p) if name not in NOT_BOUNDS]
    return stray + [w for p in sandbox_and_channel for w in literal_waits(p)]


def test_no_sandbox_or_channel_bound_lives_outside_the_settings_module() -> None:
    assert stray_bounds(GRADING, KERNEL, SANDBOX_AND_CHANNEL) == []


def test_the_fixed_bounds_are_in_settings_beside_the_limits() -> None:
    from autograder import settings

    names = set(numeric_constants(PACKAGE / "settings.py"))
    assert {"RESERVE", "MAX_OBSERVATION", "GRACE", "SPAWN_TIMEOUT", "NOTEBOOK_MOUNTS", "NOFILE", "NPROC",
            "WORKER_FILE_BYTES", "AUDIT_REPORTS", "HELPER_START_TIMEOUT"} <= names
    assert settings.Limits.class_trait_names(config=True)  # the configurable ones, in the same module


def test_the_check_finds_a_bound_and_a_literal_wait(tmp_path: Path) -> None:
    (tmp_path / "grading").mkdir()
    module = tmp_path / "grading" / "client.py"
    module.write_text("RESERVE = 64 * 1024\nNAMES = ('a', 'b')\nFLUSH = 0.05\n\ndef f(proc, fd):\n    proc.join(5)\n"
                      "    wait_fd(fd, 2.5)\n    g(timeout=10)\n    g(size=10)\n")
    assert stray_bounds(tmp_path / "grading", None, [module]) == [
        "grading/client.py: RESERVE", "client.py:6 join(...)", "client.py:7 wait_fd(...)", "client.py:8 g(...)"]
