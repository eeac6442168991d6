"""A submission's files, read without trusting them: regular files inside the submission folder, nothing else.

Whatever collected the work (`nbgrader collect`, a git clone, a tar or zip archive unpacked as root) may have kept a
symbolic link (to the instructor's solutions, say), a hard link to a file outside the submission, a FIFO (whose
reader waits forever), a socket or a device node. None of them is ever opened as the file it pretends to be: each is
refused, with a flag naming it, everywhere the grader reads a submission (its notebooks, the files handed to the
notebook, `timestamp.txt`, the files copied into autograded/). Every read opens the name with O_NOFOLLOW and
O_NONBLOCK and checks what it opened (a regular file, the one the scan saw), so nothing can block or be swapped in.
"""

from __future__ import annotations

import base64
import datetime
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ...settings import OTHER_FILES_BYTES, OTHER_FILES_COUNT, SUBMISSION_ENTRIES, TIMESTAMP_BYTES


class Unreadable(Exception):
    """The submission cannot be graded at all; the message is the reason recorded for it."""


class Refused(Unreadable):
    """A file of the submission is not a regular file of its own: never read, and the row is FLAGGED with why."""


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


@dataclass
class Submission:
    """One student's submission folder as scanned: its regular files, and every entry refused with why."""

    folder: Path
    files: dict[str, os.stat_result] = field(default_factory=dict)  # relative POSIX path -> what the scan saw
    refused: dict[str, str] = field(default_factory=dict)  # relative path -> why it is refused
    problem: str = ""  # the folder itself is refused (a symbolic link): nothing in it is read

    @classmethod
    def scan(cls, folder: Path) -> Submission:
        """Walk the folder without following any link; refuse links, FIFOs, sockets, devices and outside hard links."""
        sub = cls(Path(folder))
        for level in (sub.folder, sub.folder.parent):  # submitted/<student>/<assignment> and submitted/<student>
            if level.is_symlink():
                sub.problem = f"the submission folder {level.name}/ is a symbolic link: refused, nothing in it is read"
                return sub
        if not sub.folder.is_dir():
            return sub
        seen: dict[tuple[int, int], int] = {}  # (device, inode) -> how many names in the submission link it
        stack, entries = [""], 0
        while stack:
            rel_dir = stack.pop()
            try:
                names = sorted(os.listdir(sub.folder / rel_dir))
            except OSError as exc:
                sub.refused[rel_dir or "."] = f"cannot be listed ({exc.strerror})"
                continue
            for name in names:
                entries += 1
                rel = f"{rel_dir}/{name}" if rel_dir else name
                if entries > SUBMISSION_ENTRIES:
                    sub.refused[rel] = f"beyond the first {SUBMISSION_ENTRIES} files of the submission: not read"
                    stack.clear()
                    break
                try:
                    st = os.lstat(sub.folder / rel)
                except OSError as exc:
                    sub.refused[rel] = f"cannot be read ({exc.strerror})"
                    continue
                if stat.S_ISDIR(st.st_mode):
                    stack.append(rel)
                elif stat.S_ISREG(st.st_mode):
                    sub.files[rel] = st
                    seen[(st.st_dev, st.st_ino)] = seen.get((st.st_dev, st.st_ino), 0) + 1
                else:
                    sub.refused[rel] = f"is {_kind(st.st_mode)}"
        for rel, st in list(sub.files.items()):
            if st.st_nlink > seen[(st.st_dev, st.st_ino)]:  # another name of this file lives outside the submission
                del sub.files[rel]
                sub.refused[rel] = "is a hard link to a file outside the submission"
        return sub

    def flags(self, names: set[str] | None = None) -> list[str]:
        """One flag per refused entry (or only for those named), naming the file and why."""
        if self.problem:
            return [self.problem]
        return [f"submission file {rel} refused: it {why}" for rel, why in self.refused.items()
                if names is None or rel in names]

    def why_refused(self, rel: str) -> str | None:
        """Why `rel` is not read (the folder, or the entry itself), or None when it may be read."""
        if self.problem:
            return self.problem
        if rel in self.refused:
            return f"the submitted {rel} is refused: it {self.refused[rel]}"
        return None

    @contextmanager
    def open(self, rel: str) -> Iterator[BinaryIO]:
        """The regular file the scan saw at `rel`, opened without following links or blocking; Refused otherwise,
        FileNotFoundError when there is none."""
        why = self.why_refused(rel)
        if why:
            raise Refused(why)
        if rel not in self.files:
            raise FileNotFoundError(rel)
        try:
            fd = os.open(self.folder / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            raise Refused(f"the submitted {rel} cannot be opened ({exc.strerror})") from None
        st = os.fstat(fd)
        seen = self.files[rel]
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino) or st.st_nlink != seen.st_nlink:
            os.close(fd)
            raise Refused(f"the submitted {rel} changed into {_kind(st.st_mode)} or another file while being read")
        with os.fdopen(fd, "rb") as f:
            yield f

    def read(self, rel: str, max_bytes: int) -> bytes:
        """The bytes of `rel`, at most `max_bytes` (more: Unreadable); Refused or FileNotFoundError as `open`."""
        with self.open(rel) as f:
            data = f.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise Unreadable(f"{rel} is more than {max_bytes} bytes")
        return data

    def bounded_files(self, budget: int = OTHER_FILES_BYTES, count: int = OTHER_FILES_COUNT) -> list[str]:
        """The files besides notebooks, in name order, while their number fits in `count` and their apparent sizes
        (st_size: a sparse file counts whole) in `budget` bytes; each one past a bound is refused, with why."""
        out: list[str] = []
        for rel, st in sorted(self.files.items()):
            if rel.endswith(".ipynb"):
                continue
            if len(out) >= count:
                self.refused[rel] = f"is beyond the first {count} files besides notebooks (OTHER_FILES_COUNT): not used"
            elif st.st_size > budget:
                self.refused[rel] = (f"is {st.st_size} bytes (its apparent size), more than the {budget} bytes left of "
                                     f"{OTHER_FILES_BYTES} for the files besides notebooks (OTHER_FILES_BYTES): not used")
            else:
                budget -= st.st_size
                out.append(rel)
        return out

    def other_files(self) -> dict[str, str]:
        """The files besides notebooks (data the notebook reads) within `bounded_files`' bounds, as base64 text:
        they reach the worker as data over its channel, never through a shared folder."""
        out: dict[str, str] = {}
        for rel in self.bounded_files():
            try:
                data = self.read(rel, self.files[rel].st_size)  # (grown since the scan: Unreadable, not used)
            except Refused:
                self.refused.setdefault(rel, "changed into another file while being read")
                continue
            except (OSError, Unreadable):
                continue
            out[rel] = base64.b64encode(data).decode("ascii")
        return out




@dataclass(frozen=True)
class SubmissionTime:
    """A submission's time as `timestamp.txt` gives it: None when there is none; `problem` says why it is unreadable."""

    when: datetime.datetime | None
    problem: str = ""


def submission_time(submission: Submission) -> SubmissionTime:
    """`timestamp.txt` read as nbgrader reads it, without trusting it.

    No file, or an empty one: no time (nbgrader warns and records none: on time). A file that is not a regular file of
    the submission, not UTF-8 or not a date is where nbgrader would stop the whole run (its `get_existing_timestamp`
    calls a `fail` that does not exist): here the notebook is graded with no time, as if the file were empty, and
    `problem` (a flag for the row) says why.
    """
    name = "timestamp.txt"
    try:
        raw = submission.read(name, TIMESTAMP_BYTES)
    except FileNotFoundError:
        return SubmissionTime(None)
    except (Unreadable, OSError) as exc:
        return SubmissionTime(None, _unreadable(str(exc) if isinstance(exc, Unreadable) else f"{name}: {exc.strerror}"))
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return SubmissionTime(None, _unreadable(f"{name} is not UTF-8 text"))
    if not text:
        return SubmissionTime(None)
    from nbgrader import utils as nbutils  # (only here: `similarity` reads submissions without nbgrader)

    try:
        return SubmissionTime(nbutils.parse_utc(text))
    except Exception:  # ValueError, OverflowError...: whatever the parser says, the text is not a time nbgrader can use
        return SubmissionTime(None, _unreadable(f"{name} holds {text[:40]!r}, not a date and time"))


def _unreadable(why: str) -> str:
    return f"submission time unreadable ({why}): graded as submitted on time, as with no timestamp.txt; check when it came in"
