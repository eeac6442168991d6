"""The grader's own files in the course folder, each written so that a kill at any moment leaves the old file or the
new one: `atomic_write` (every file the grader writes goes through it), the course's grading lock, its secret, and
where the reports go."""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ..types import GradingError

LOCK_FILE = ".autograder.lock"
SECRET_FILE = ".autograder-secret"
REPORT_DIR = "reports"  # the course's folder of the pages and CSVs written for the instructor


def course_secret(root: Path) -> bytes:
    """The course's secret (32 random bytes, hex, mode 0600), created on the first `grade` and kept for every re-run.

    It draws the hidden checks' inputs and authenticates the resume state; no grading worker can see it.
    """
    path = root / SECRET_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_secret(path)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
        f.flush()
        os.fsync(f.fileno())
    return _read_secret(path)


def _read_secret(path: Path) -> bytes:
    try:
        text = path.read_text().strip()
        os.chmod(path, 0o600)
    except OSError as exc:
        raise GradingError(f"cannot read the course secret {path}: {exc.strerror}") from None
    if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise GradingError(f"the course secret {path} is damaged (not 64 hex digits); restore it, or delete it to make "
                           "a new one (the hidden checks' inputs will change)")
    return bytes.fromhex(text)


def atomic_write(path: Path, data: bytes, durable: bool = True) -> None:
    """Write `data` to `path` so that a kill at any moment leaves the old file or the new one, never half of it;
    `durable` also survives a power cut (fsync)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def course_lock(root: Path) -> Iterator[None]:
    """Hold the course's grading lock, or refuse at once when another grader holds it.

    The lock file exists only while a grader holds it: the holder removes it before letting go, and a grader that
    locked a file someone removed meanwhile (its inode is no longer the path's) locks the new one instead.
    """
    path = root / LOCK_FILE
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise GradingError(f"another grader is already running on {root} (it holds {path}); wait for it to finish") from None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the last holder removed it after we opened it: lock the file the path names now
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # still holding the lock: nobody else can have taken this file meanwhile
        os.close(fd)  # closing releases the lock
