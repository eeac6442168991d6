"""tests/support_mounts.py: another account reaches exactly the paths a test names below closed folders, nested too,
and nothing else there; the files stay as they are."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from support_mounts import closed_ancestors, drop, reachable

NOBODY = 65534
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="covering a closed folder needs root")


@pytest.fixture
def closed() -> Path:
    """outer/ (0700) holds a secret and inner/ (0700), which holds other.txt and needed/file.txt (readable by all)."""
    base = Path(tempfile.mkdtemp(prefix="support-mounts-"))  # below /tmp: pytest's own tmp is root's, 0700
    base.chmod(0o755)
    (base / "outer" / "inner" / "needed").mkdir(parents=True)
    (base / "outer" / "secret.txt").write_text("secret")
    (base / "outer" / "inner" / "other.txt").write_text("other")
    (base / "outer" / "inner" / "needed" / "file.txt").write_text("the needed file")
    (base / "outer").chmod(0o700)
    (base / "outer" / "inner").chmod(0o700)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def as_nobody(argv: list[str], paths: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(reachable([*drop(NOBODY, NOBODY), *argv], paths), cwd="/", capture_output=True, text=True,
                          timeout=30)


def test_nested_closed_folders_are_each_covered_on_the_way(closed: Path):
    needed = closed / "outer" / "inner" / "needed"
    assert closed_ancestors([needed]) == {str(closed / "outer"): {str(closed / "outer" / "inner")},
                                          str(closed / "outer" / "inner"): {str(needed)}}


def test_another_account_reads_the_named_path_and_sees_nothing_else_of_the_closed_folders(closed: Path):
    outer, needed = closed / "outer", closed / "outer" / "inner" / "needed"
    done = as_nobody(["sh", "-c", f"cat {needed}/file.txt; echo; ls -A {outer}; ls -A {outer}/inner; id -u"], [needed])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n") == ["the needed file", "inner", "needed", str(NOBODY), ""], done.stdout


def test_nothing_is_made_writable(closed: Path):
    needed = closed / "outer" / "inner" / "needed"
    done = as_nobody(["sh", "-c", f"touch {needed}/new || touch {closed}/outer/new"], [needed])
    assert done.returncode != 0 and "Permission denied" in done.stderr, done.stderr
    assert not (needed / "new").exists() and not (closed / "outer" / "new").exists()


def test_without_it_the_account_cannot_reach_the_path(closed: Path):
    needed = closed / "outer" / "inner" / "needed"
    done = subprocess.run([*drop(NOBODY, NOBODY), "cat", str(needed / "file.txt")], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode != 0 and "Permission denied" in done.stderr, done.stderr


def test_a_needed_folder_that_is_itself_closed_is_reached_with_all_its_entries(closed: Path):
    needed = closed / "outer" / "inner"  # 0700 itself, like a clone made in `mktemp -d`
    (needed / "link").symlink_to("other.txt")
    done = as_nobody(["sh", "-c", f"cat {needed}/other.txt {needed}/link {needed}/needed/file.txt; echo; ls -A {needed}"],
                     [needed])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n") == ["otherotherthe needed file", "link", "needed", "other.txt", ""], done.stdout
    assert as_nobody(["touch", f"{needed}/new"], [needed]).returncode != 0 and not (needed / "new").exists()


def test_an_open_path_runs_as_it_is():
    assert reachable(["true"], ["/usr/bin"]) == ["true"]
