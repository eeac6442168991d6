"""A throw-away PostgreSQL server from Debian's package, on a unix socket in a temporary folder (no TCP port)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

PG_BINS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)


def _missing(reason: str) -> None:
    """In CI (which installs Debian's postgresql) a missing piece is a failure; elsewhere a skip with the reason."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


def _as_server_user(argv: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, run its commands as Debian's `postgres` user."""
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


def unavailable_reason() -> str | None:
    """Why no server can be started here, or None."""
    if not PG_BINS:
        return "Debian's postgresql is not installed (apt-get install postgresql; ./workbook test installs it when CI=true)"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (it is in the dev and cluster extras: pip install -e '.[dev]')"
    return None


@contextlib.contextmanager
def server(database: str = "gradebook") -> Iterator[str]:
    """Start a server with one empty database; yield its SQLAlchemy URL (psycopg 3); stop and delete it after."""
    reason = unavailable_reason()
    if reason:
        _missing(reason)
    bin_ = PG_BINS[-1]
    # not below pytest's tmp folder: that is private to root (0700), and the server runs as `postgres`
    base = Path(tempfile.mkdtemp(prefix="autograder-pg-"))
    if os.geteuid() == 0:
        shutil.chown(base, "postgres", "postgres")
    data, log = base / "data", base / "server.log"

    def run(*argv: str) -> None:
        done = subprocess.run(_as_server_user([str(bin_ / argv[0]), *argv[1:]]), capture_output=True, text=True, cwd=base)
        assert done.returncode == 0, f"{argv[0]} failed: {done.stdout}{done.stderr}" + (log.read_text() if log.exists() else "")

    try:
        run("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        # fsync off: a test server; listen on the socket in `base` only
        run("pg_ctl", "-D", str(data), "-l", str(log), "-w", "-o", f"-k {base} -c listen_addresses='' -F", "start")
        run("createdb", "-h", str(base), "-U", "postgres", database)
        yield f"postgresql+psycopg://postgres@/{database}?host={base}"
    finally:
        if data.exists():
            subprocess.run(_as_server_user([str(bin_ / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
                           capture_output=True, cwd=base)
        shutil.rmtree(base, ignore_errors=True)
