"""`./workbook hub` refuses in one line what it cannot do: run the hub, or create the trial's accounts, without root."""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def as_ordinary_user(*args: str) -> subprocess.CompletedProcess[str]:
    """`./workbook hub ARGS` as an account without root (nobody, when the tests run as root)."""
    preexec = None
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")

        def preexec() -> None:
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent"}
    return subprocess.run([str(ROOT / "workbook"), "hub", *args], cwd=ROOT, env=env, preexec_fn=preexec,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("args", "says"), [
    ((), "so ./workbook hub runs as root"),
    (("--create-users",), "--create-users makes Unix accounts: run ./workbook hub --create-users as root"),
    (("--bogus",), "usage: ./workbook hub [--create-users] [--install]"),
])
def test_the_hub_without_root_says_why_in_one_line(args: tuple[str, ...], says: str):
    done = as_ordinary_user(*args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
