"""The resume state: an append-only journal of what was graded from which inputs, one HMAC'd record a line.

Storing a group of notebooks appends their records in one write and one fsync, so a notebook costs the same at the
first record as at the 120,000th. The last record of a key wins. A record edited by anyone without the course
secret fails its HMAC and is ignored (its notebook is graded again); a last line cut short by a kill mid-append is
dropped (and cut off the file before the next append), so that notebook is graded again too. A journal holding
many superseded records is rewritten once, atomically, when a run opens it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from pathlib import Path
from typing import Any

from ..types import Record
from .files import atomic_write

JOURNAL_FILE = ".autograder-journal.jsonl"
COMPACT_AT = 4  # rewrite the journal when it holds this many lines per live record (and at least 1,000 lines)


class Journal:
    """The course's resume records, by key (assignment/student/notebook)."""

    def __init__(self, root: Path, secret: bytes) -> None:
        self.path = root / JOURNAL_FILE
        self.secret = secret
        self.rejected: set[str] = set()  # keys whose last record failed authentication
        self.records: dict[str, Record] = {}
        self._fd: int | None = None
        self._lines = 0  # lines in the file, superseded records included
        self._keep = 0  # bytes of whole lines in the file
        self._torn = False  # the file ends in a line cut short (a kill mid-append)
        self._load()

    @staticmethod
    def key(assignment: str, student: str, notebook: str) -> str:
        """The record's key: one per assignment, student and notebook."""
        return f"{assignment}/{student}/{notebook}"

    def _mac(self, key: str, body: dict[str, Any]) -> str:
        return hmac.new(self.secret, json.dumps([key, body], sort_keys=True).encode(), hashlib.sha256).hexdigest()

    def _load(self) -> None:
        try:
            data = self.path.read_bytes()
        except OSError:
            return  # no journal yet, or unreadable: everything is graded, which is always correct
        whole = data.rfind(b"\n") + 1
        self._torn = whole < len(data)  # killed mid-append: that last record is not one
        self._keep = whole
        lines = data[:whole].splitlines()
        for line in lines:
            try:
                key, body, mac = json.loads(line)
                key = str(key)
            except (ValueError, TypeError):
                continue
            if not hmac.compare_digest(str(mac), self._mac(key, body)):
                self.records.pop(key, None)
                self.rejected.add(key)
                continue
            record = Record.from_json(body)  # None: a record this version cannot read (graded again)
            self.rejected.discard(key)
            if record is None:
                self.records.pop(key, None)
            else:
                self.records[key] = record
        self._lines = len(lines)

    def get(self, key: str) -> Record | None:
        """The record under `key` if the grader wrote it (its HMAC checks out), else None."""
        return self.records.get(key)

    def _line(self, key: str, record: Record) -> bytes:
        body = record.to_json()
        return json.dumps([key, body, self._mac(key, body)], ensure_ascii=True).encode() + b"\n"

    def _open(self) -> int:
        if self._fd is None:
            if self._lines >= max(1000, COMPACT_AT * len(self.records)):
                self._rewrite()
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            if self._torn:
                os.ftruncate(fd, self._keep)  # the torn last line goes: the next record starts on a line of its own
                self._torn = False
            self._fd = fd
        return self._fd

    def _rewrite(self) -> None:
        atomic_write(self.path, b"".join(self._line(k, r) for k, r in self.records.items()))
        os.chmod(self.path, 0o600)
        self._lines, self._torn = len(self.records), False

    def append(self, entries: list[tuple[str, Record]]) -> None:
        """Add these records in one write, durable (fsync) before it returns."""
        if not entries:
            return
        data = b"".join(self._line(key, record) for key, record in entries)
        fd = self._open()
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
        for key, record in entries:
            self.records[key] = record
        self._lines = self._lines + len(entries)

    def close(self) -> None:
        """Close the journal's file."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
