"""Every read and write of the grader's side has a deadline, whatever the descriptor's number.

select(2) refuses a descriptor at or past FD_SETSIZE (1024), which a long batch's grader reaches (its gradebook,
journal, worker channels and threads); the channel and the fork server wait with poll(2) instead. These tests put
a worker's channel, and the fork server's control socket, above 1024 and grade through them.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from test_grade_sandbox import LIMITS, _unavailable, outputs

from autograder.grading.grade.channel import HEADER
from autograder.grading.grade.sandbox import bwrap, client, frames, linux

HIGH = 1500  # past FD_SETSIZE: every descriptor a test opens has this number or a higher one


@contextlib.contextmanager
def descriptors_past_fd_setsize(count: int = HIGH + 100) -> Iterator[list[int]]:
    """RLIMIT_NOFILE raised to at least `count`, and every descriptor below HIGH taken (closed afterwards): the next
    one this process opens is HIGH or more."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < count:
        pytest.skip(f"RLIMIT_NOFILE's hard limit ({hard}) is below {count}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, count), hard))
    fillers: list[int] = []
    try:
        while not fillers or fillers[-1] < HIGH - 1:
            fillers.append(os.open(os.devnull, os.O_RDONLY))
        yield fillers
    finally:
        for fd in fillers:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.fixture
def high_pair() -> Iterator[tuple[frames.Channel, socket.socket]]:
    """A grader's Channel on descriptor HIGH (a stream socket, as the sandbox's), and the worker's end."""
    with descriptors_past_fd_setsize():
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        channel = frames.Channel(ours.detach())
        try:
            yield channel, theirs
        finally:
            channel.close()
            theirs.close()


def frame(data: bytes) -> bytes:
    return HEADER.pack(len(data)) + data


def test_wait_fd_works_on_a_descriptor_past_fd_setsize_and_keeps_its_timeout() -> None:
    with descriptors_past_fd_setsize():
        r, w = os.pipe()
        try:
            assert r >= HIGH and w >= HIGH
            assert not linux.wait_fd(r, 0.05)  # nothing yet: False once the timeout passed, never an error
            assert linux.wait_fd(w, 0.0, write=True)
            os.write(w, b"x")
            assert linux.wait_fd(r, 5.0)
            os.read(r, 1)
            os.close(w)
            assert linux.wait_fd(r, 5.0)  # the writer is gone: readable (the read says end of file)
        finally:
            os.close(r)


def test_a_channel_past_fd_setsize_reads_a_frame_before_its_deadline(high_pair: Any) -> None:
    channel, worker = high_pair
    assert channel.fileno() >= HIGH and not channel.poll(0.01)
    worker.sendall(frame(b'{"op": "done"}'))
    assert channel.poll(5.0)
    assert channel.recv(time.monotonic() + 5, 1000) == b'{"op": "done"}'


def test_a_silent_worker_on_a_channel_past_fd_setsize_ends_in_silent_at_the_deadline(high_pair: Any) -> None:
    channel, _ = high_pair
    deadline = time.monotonic() + 0.2
    with pytest.raises(frames.Silent):
        channel.recv(deadline, 1000)
    assert time.monotonic() >= deadline  # it waited its time out, and no more than the test's own timeout


def test_a_frame_cut_off_on_a_channel_past_fd_setsize_is_garbled_at_the_deadline(high_pair: Any) -> None:
    channel, worker = high_pair
    worker.sendall(HEADER.pack(4096) + b'{"op": "cell"')
    with pytest.raises(frames.Garbled, match="stopped in the middle of a message"):
        channel.recv(time.monotonic() + 0.2, 10_000)


def test_a_worker_that_reads_nothing_times_out_the_graders_write_past_fd_setsize(high_pair: Any) -> None:
    channel, _ = high_pair
    with pytest.raises(TimeoutError):
        channel.send(b"x" * 2**24, time.monotonic() + 0.3)  # far more than a socket buffer holds


def test_a_sandbox_started_by_a_grader_holding_more_than_fd_setsize_descriptors_grades() -> None:
    """The fork server's control socket keeps its number (pass_fds) and each worker's channel is a new descriptor of
    the grader: both past 1024 here."""
    if bwrap.unavailable_reason():
        _unavailable(str(bwrap.unavailable_reason()))
    with descriptors_past_fd_setsize():
        try:
            box = client.Sandbox().start()
        except client.Unavailable as exc:
            _unavailable(str(exc))
        try:
            assert box.control is not None and box.control.fileno() > 1024
            for text in ("first", "second"):  # a second notebook: the server's loop went round with that socket
                worker = box.launch({"plan": {"cells": [{"kind": "code", "source": f"print({text!r})"}],
                                              "limits": LIMITS}, "files": {}})
                try:
                    assert worker.channel.fileno() > 1024
                    message: dict[str, Any] = {}
                    deadline = time.monotonic() + 60
                    while message.get("op") != "cell":
                        message = json.loads(worker.channel.recv(deadline, 2**24))
                    assert outputs(message) == f"{text}\n"
                finally:
                    worker.close()
        finally:
            box.close()
