"""A worker's channel as the grader reads and writes it: whole frames only, every read and write before a deadline.

Frames are multiprocessing's (`Connection.send_bytes`): a 4-byte big-endian signed length, then the bytes (the
worker side reads and writes them so). Nothing here blocks: the descriptor is non-blocking, and each call waits
with poll(2) until its deadline (time.monotonic()); never select(2), which refuses a descriptor past FD_SETSIZE
(1024), as a long batch's may be. A worker that sends nothing raises `Silent`; one that stops in the middle of a
frame, or announces a frame over the limit, raises `Garbled`: the second is a protocol violation.
"""

from __future__ import annotations

import errno
import os
import time

from ..channel import HEADER
from .linux import wait_fd

CHUNK = 1 << 20  # bytes read at a time


class Silent(TimeoutError):
    """Nothing arrived before the deadline (the worker is busy, or stuck)."""


class Garbled(Exception):
    """The bytes on the channel are not a frame the grader reads: cut off at the deadline, or too long."""


class Channel:
    """The grader's end of one worker's channel (a stream socket or pipe it owns)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        os.set_blocking(fd, False)

    def fileno(self) -> int:
        return self.fd

    def _wait(self, deadline: float, write: bool) -> bool:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        return wait_fd(self.fd, left, write)

    def _read(self, n: int, deadline: float, started: bool) -> bytes:
        """Exactly `n` bytes; Silent (nothing of the frame yet) or Garbled (part of it) at the deadline; EOFError."""
        parts: list[bytes] = []
        got = 0
        while got < n:
            try:
                chunk = os.read(self.fd, min(n - got, CHUNK))
            except BlockingIOError:
                if not self._wait(deadline, write=False):
                    if not started and got == 0:
                        raise Silent("nothing arrived") from None
                    raise Garbled(f"stopped in the middle of a message ({got + (HEADER.size if started else 0)} bytes "
                                  "of it, then nothing until its deadline)") from None
                continue
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                raise
            if not chunk:
                if got or started:
                    raise EOFError("the worker closed its channel in the middle of a message")
                raise EOFError("the worker closed its channel")
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    def recv(self, deadline: float, limit: int) -> bytes:
        """The next whole frame, at most `limit` bytes; Silent, Garbled (partial or over the limit) or EOFError."""
        (n,) = HEADER.unpack(self._read(HEADER.size, deadline, started=False))
        if n < 0 or n > limit:
            raise Garbled(f"announced a message of {n} bytes (at most {limit})")
        return self._read(n, deadline, started=True) if n else b""

    def poll(self, timeout: float = 0.0) -> bool:
        """True when something can be read (a frame's first byte, or the end of the channel) within `timeout` s."""
        return wait_fd(self.fd, max(0.0, timeout))

    def send(self, data: bytes, deadline: float) -> None:
        """Write one frame whole before the deadline; TimeoutError if the worker does not read it, OSError if gone."""
        view = memoryview(HEADER.pack(len(data)) + data)
        while view:
            try:
                view = view[os.write(self.fd, view):]
            except BlockingIOError:
                if not self._wait(deadline, write=True):
                    raise TimeoutError("the worker did not read what the grader sent") from None
            except InterruptedError:
                continue

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
