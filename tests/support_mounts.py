"""Folders other accounts may not enter, made passable for a test's own processes, and nothing more.

The suite runs as root, often from a checkout or a Python in root's home (mode 0700). A test that runs something as
another account (the grader as `nobody`, the hub's users) starts it in a private mount namespace in which each closed
folder on the way to the paths it needs is covered by a small tmpfs holding only the next folder on that way, bound at
its own path: the same files, made reachable, nothing made writable, and the rest of the closed folder hidden. A
needed folder that is itself closed (a clone made in `mktemp -d`) is covered the same way, holding all its entries.
"""

from __future__ import annotations

import os
import secrets
import shlex
import stat
from collections.abc import Iterable
from pathlib import Path


def closed_ancestors(paths: Iterable[str | os.PathLike]) -> dict[str, set[str]]:
    """Each folder above `paths` that others may not enter -> its children on the way to those paths."""
    found: dict[str, set[str]] = {}
    for path in paths:
        parts = Path(os.path.realpath(path)).parts
        for i in range(1, len(parts) - 1):
            folder = Path(*parts[: i + 1])
            if not folder.stat().st_mode & stat.S_IXOTH:
                found.setdefault(str(folder), set()).add(str(Path(*parts[: i + 2])))
        real = Path(*parts)
        if real.is_dir() and not real.stat().st_mode & stat.S_IXOTH:  # (a clone in `mktemp -d`: the path itself)
            found.setdefault(str(real), set()).update(str(entry) for entry in real.iterdir())
    return found


def reachable(argv: list[str], paths: Iterable[str | os.PathLike]) -> list[str]:
    """`argv`, run where every account can reach `paths` (in a private mount namespace, as root, only if needed).

    `argv` starts as root inside the namespace: to run it as another account, begin it with `setpriv` (`drop`).
    Closed folders are covered outermost first, so a closed folder inside another is covered inside its binding.
    """
    closed = closed_ancestors(paths)
    if not closed:
        return argv
    if os.geteuid() != 0:
        raise PermissionError(f"{sorted(closed)[0]} is closed to other accounts, and only root can cover it")
    script = ["set -e", "umask 022"]
    tag, n = f"{os.getpid()}-{secrets.token_hex(4)}", 0
    for folder in sorted(closed, key=lambda f: len(Path(f).parts)):
        stashes = []
        links = []
        for child in sorted(closed[folder]):
            if os.path.islink(child):  # a symbolic link is made again, not bound (a bind would follow it)
                links.append(f"ln -s {shlex.quote(os.readlink(child))} {shlex.quote(child)}")
                continue
            stash = f"/tmp/.autograder-mount-{tag}-{n}"
            n += 1
            make = "mkdir -p" if os.path.isdir(child) else "touch"
            stashes.append((stash, child, make))
            script += [f"{make} {stash}", f"mount --rbind {shlex.quote(child)} {stash}"]
        script.append(f"mount -t tmpfs -o mode=0755,size=64k tmpfs {shlex.quote(folder)}")
        for stash, child, make in stashes:
            remove = "rmdir" if make == "mkdir -p" else "rm"
            script += [f"{make} {shlex.quote(child)}", f"mount --move {stash} {shlex.quote(child)}", f"{remove} {stash}"]
        script += links
    script.append("exec " + shlex.join(argv))
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(script)]


def drop(uid: int, gid: int) -> list[str]:
    """The `setpriv` prefix that runs the rest of a command as `uid`:`gid`, with no other group and no capability."""
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
            "--"]
