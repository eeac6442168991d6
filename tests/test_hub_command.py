"""`./workbook hub` refuses in one line what it cannot do: run the hub, or create the trial's accounts, without root."""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

import pytest
from support_mounts import drop, reachable

ROOT = Path(__file__).resolve().parent.parent


def as_ordinary_user(*args: str) -> subprocess.CompletedProcess[str]:
    """`./workbook hub ARGS` as an account without root (nobody, when the tests run as root)."""
    argv = [str(ROOT / "workbook"), "hub", *args]
    if os.geteuid() == 0:  # (where the checkout is below a closed folder, nobody reaches it in a mount namespace)
        nobody = pwd.getpwnam("nobody")
        argv = reachable([*drop(nobody.pw_uid, nobody.pw_gid), *argv], [ROOT])
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent"}
    return subprocess.run(argv, cwd="/", env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("args", "says"), [
    ((), "so ./workbook hub runs as root"),
    (("--create-users",), "--create-users makes Unix accounts: run ./workbook hub --create-users as root"),
    (("--bogus",), "usage: ./workbook hub [--create-users] [--install]"),
])
def test_the_hub_without_root_says_why_in_one_line(args: tuple[str, ...], says: str):
    done = as_ordinary_user(*args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and says in done.stderr, done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="without root ./workbook hub stops earlier: it must run as root")
def test_the_hub_in_a_checkout_closed_to_its_accounts_says_where_to_install_in_one_line(tmp_path: Path):
    closed = tmp_path / "closed"
    (closed / "autograd-workbook").mkdir(parents=True)
    closed.chmod(0o700)  # as a clone in /root is
    script = closed / "autograd-workbook" / "workbook"
    script.write_bytes((ROOT / "workbook").read_bytes())
    script.chmod(0o755)
    done = subprocess.run([str(script), "hub", "--create-users"], env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"but {closed} is closed to them" in done.stderr and "/opt/autograd-workbook" in done.stderr, done.stderr
    assert not (closed / "autograd-workbook" / "build").exists()  # it refused before installing anything
