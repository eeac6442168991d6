"""The unprivileged mode as a real unprivileged user: a small batch graded by `python -m autograder grade` running as
`nobody` (uid 65534, no capability, no cgroup it may create), with the README's claims for that mode checked on
what it recorded: the summary names the mode, seccomp refuses what no limit counts (memfd) and every new process,
the mounts stop at their own sizes, RLIMIT_AS stops a memory bomb, no process outlives its notebook, and honest
classmates score full marks.

The suite runs as root, so the test drops to `nobody` itself (`setpriv`). Where the Python runtime sits below a
folder `nobody` may not enter (pyenv in /root, mode 0700), or the checkout is, the grader runs in a private mount
namespace in which that folder is an empty tmpfs holding only the runtime and the checkout, bound at their own paths
(tests/support_mounts.py): the same interpreter and libraries, made reachable, nothing made writable. Run as an
ordinary user, the test grades as that user.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from adversarial import corpus  # (it gathers escapes.py's and bounds.py's cases too)
from support_mounts import drop, reachable

from autograder.grading.grade.sandbox import bwrap
from autograder.grading.grade.sandbox.cgroup import UNPRIVILEGED_MODE
from autograder.settings import NOFILE

pytestmark = pytest.mark.slow  # generates the workbook assignment with nbgrader, then grades a batch: a minute or two

ROOT = Path(__file__).resolve().parent.parent
NOBODY = 65534
CONFIG = """c = get_config()
load_subconfig({config!r})
c.CourseDirectory.root = {root!r}
c.Limits.cell_timeout = 20.0
c.Limits.check_timeout = 5.0
c.Limits.notebook_timeout = 120.0
c.Limits.memory_mb = 1024
"""
CASES = {
    **corpus.HONEST,
    **{name: corpus.CASES[name] for name in ("memory_bomb", "tampers_course", "setsid_survivor",  # corpus, escapes.py
                                             "memfd_hold", "pipe_hold", "dev_fill", "leaves_a_note", "reads_a_note",  # bounds.py
                                             "deathsig_survivor", "posix_shm_hold", "sparse_fill", "channel_mq_leaves",
                                             "channel_mq_reads", "channel_around_leaves", "channel_around_reads")},
}


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the unprivileged mode's test: {reason}")
    pytest.skip(reason)


def as_user(argv: list[str]) -> list[str]:
    """`argv` run as `nobody` (when we are root), with every path the grader needs reachable by it; else as we are."""
    if os.geteuid() != 0:
        return argv
    return reachable([*drop(NOBODY, NOBODY), *argv], needed())


def needed() -> set[str]:
    """What the grader runs: the Python runtime (its executable, standard library, site-packages) and the checkout."""
    import sysconfig

    return {sys.base_prefix, sys.prefix, os.path.realpath(sys.executable), str(ROOT),
            *(sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib"))}


def nobody_env(course: Path, home: Path) -> dict[str, str]:
    """A clean environment for the unprivileged grader: its own HOME, the venv's tools first."""
    return {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
           "AUTOGRADER_COURSE_DIR": str(course), "MPLCONFIGDIR": str(home / "matplotlib"), "PYTHONDONTWRITEBYTECODE": "1"}


@pytest.fixture(scope="module")
def batch() -> dict:
    """A course of honest and hostile submissions, graded by `nobody` in one batch."""
    reason = bwrap.unavailable_reason()
    if reason:
        _unavailable(reason)
    base = Path(tempfile.mkdtemp(prefix="autograder-unprivileged-"))  # below /tmp: pytest's own tmp is root's, 0700
    try:
        yield grade_as_nobody(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def grade_as_nobody(base: Path) -> dict:
    course, home = base / "course", base / "home"
    course.mkdir()
    (home / "matplotlib").mkdir(parents=True)
    fonts = sorted((Path.home() / ".cache" / "matplotlib").glob("fontlist-*.json"))
    if fonts:  # matplotlib's font list: without it the first plot scans the system's fonts (seconds)
        shutil.copy(fonts[-1], home / "matplotlib")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "AUTOGRADER_COURSE_DIR": str(course)}
    gen = subprocess.run(["nbgrader", "generate_assignment", corpus.ASSIGNMENT, "--force",
                          f"--CourseDirectory.release_directory={base / 'release'}",
                          f"--NbGrader.config_file={ROOT / 'grading_config.py'}"],
                         cwd=base, env=env, capture_output=True, text=True, timeout=600)
    assert gen.returncode == 0, gen.stderr
    corpus.build(course, CASES)
    (course / "test_config.py").write_text(CONFIG.format(config=str(ROOT / "grading_config.py"), root=str(course)))
    if os.geteuid() == 0:
        base.chmod(0o755)
        for path in [base, *base.rglob("*")]:
            os.lchown(path, NOBODY, NOBODY)
    probe = subprocess.run(as_user(["bwrap", "--ro-bind", "/", "/", "--unshare-all", "true"]), capture_output=True,
                           text=True, timeout=60)
    if probe.returncode != 0:  # (no unprivileged user namespaces here)
        _unavailable(f"bubblewrap cannot start as an unprivileged user here: {probe.stderr.strip()[:200]}")
    argv = [sys.executable, "-m", "autograder", "grade", corpus.ASSIGNMENT, "--course", str(course), "--config",
            str(course / "test_config.py"), "--no-progress", "--jobs", "2", "--csv", str(course / "summary.csv")]
    result = subprocess.run(as_user(argv), cwd=course, env=nobody_env(course, home), capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    time.sleep(3)  # a survivor would hunt 2 s after its notebook ended
    grader = NOBODY if os.geteuid() == 0 else os.geteuid()  # (other graders on this machine are other users' processes)
    left = corpus.left_behind(corpus.TOKEN, user=grader)
    rows = {r["student_id"]: r for r in csv.DictReader(open(course / "summary.csv")) if r["notebook"] == corpus.NB}
    return {"course": course, "stdout": result.stdout, "rows": rows, "left": left}


def printed(batch: dict, student: str) -> str:
    """Everything the student's notebook printed or raised while it was graded, from its autograded notebook."""
    nb = json.loads((batch["course"] / "autograded" / student / corpus.ASSIGNMENT / f"{corpus.NB}.ipynb").read_text())
    return json.dumps([c.get("outputs", []) for c in nb["cells"]])


def test_the_grader_ran_as_an_unprivileged_user_and_the_summary_names_the_mode(batch: dict) -> None:
    grader = NOBODY if os.geteuid() == 0 else os.geteuid()
    assert grader != 0 and (batch["course"] / ".autograder-secret").stat().st_uid == grader  # the grader made it
    assert f"sandbox: bubblewrap, {UNPRIVILEGED_MODE}" in batch["stdout"].splitlines()  # the line after the summary


@pytest.mark.parametrize("student", list(CASES))
def test_each_submission_scores_as_the_corpus_says(batch: dict, student: str) -> None:
    case, row = CASES[student], batch["rows"][student]
    assert float(row["score"]) == sum(case.expect.values()), row
    assert case.reason in row["reason"]
    if case.flag:
        assert case.flag in row["flags"]
    else:
        assert row["flags"] == "", row["flags"]


def test_honest_classmates_score_full_marks_unflagged(batch: dict) -> None:
    row = batch["rows"]["honest_correct"]
    assert (float(row["score"]), float(row["max_score"]), row["flags"], row["reason"]) == (5, 5, "", "")


def test_seccomp_refuses_memory_no_limit_counts_and_every_new_process(batch: dict) -> None:
    assert "memfd refused: 1" in printed(batch, "memfd_hold")  # EPERM
    for student in ("deathsig_survivor", "setsid_survivor"):
        assert "PermissionError" in printed(batch, student) and "Operation not permitted" in printed(batch, student)
    assert batch["left"] == "", f"a process outlived its notebook: {batch['left']}"


def test_pipe_buffers_stop_at_the_kernels_per_user_soft_limit(batch: dict) -> None:
    """The README's claim for this mode: what a notebook can hold in pipes is bounded by `pipe-user-pages-soft`."""
    held = re.search(r"pipe bytes held: (\d+)", printed(batch, "pipe_hold"))
    assert held, printed(batch, "pipe_hold")[-500:]
    page = os.sysconf("SC_PAGE_SIZE")
    soft = int(Path("/proc/sys/fs/pipe-user-pages-soft").read_text()) * page
    past_it = NOFILE // 2 * 2 * page  # past the soft limit, each new pipe gets the kernel's minimum, 2 pages
    assert 0 < int(held.group(1)) <= soft + past_it, (held.group(1), soft)


def test_each_mount_stops_at_its_own_size_and_dev_is_read_only(batch: dict) -> None:
    out = printed(batch, "dev_fill")
    assert "/dev stopped: 30" in out and "/dev/shm stopped: 28" in out and "/tmp stopped: 28" in out  # EROFS, ENOSPC


def test_the_address_space_limit_stops_a_memory_bomb(batch: dict) -> None:
    assert "ran out of memory" in batch["rows"]["memory_bomb"]["reason"]


def test_nothing_outside_the_sandbox_was_reached(batch: dict) -> None:
    assert [p for p in batch["course"].parent.rglob("pwned-*")] == []
