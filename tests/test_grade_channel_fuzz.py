"""Whatever a worker writes on its channel, the grader reaches a verdict (a message, or a flagged violation) before
its deadline: random bytes, cut-off frames, huge lengths, deep nesting, odd Unicode and valid messages out of order,
through the grader's own frame reader (sandbox.frames) and message checker (channel.Reader), as runner.Session reads."""

from __future__ import annotations

import json
import socket
import threading
import time

import nbformat  # noqa: F401  (imported here: its first import inside a read is not the read's time)
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.grading.grade import channel
from autograder.grading.grade.channel import HEADER, Reader, Violation
from autograder.grading.grade.sandbox.frames import Channel, Garbled, Silent

CAP = 10_000
LIMIT = channel.max_message(CAP)
DEADLINE = 0.1  # seconds each read may wait (the cell, check or notebook timeout in a real batch)


def frame(data: bytes) -> bytes:
    return HEADER.pack(len(data)) + data


def honest(op: str, seq: int) -> bytes:
    fields = {"cell": {"index": 0, "outputs": [], "tampered": []}, "grade": {"index": 0}, "missing": {"targets": []},
              "observation": {"observation": {"x": 1.0}, "suspects": []}, "resumed": {"tampered": []}, "done": {},
              "audit": {"event": "e", "detail": "d", "where": "w"}}[op]
    return channel.encode({"op": op, **fields, "seq": seq})


ODD_TEXT = st.sampled_from(["\ud800", "\udfff", "a\x00b", "\ufeff", "\u202e", "e\u0301", "\U0001f600", "\x1b[31m",
                            "\ud83d\ude00", "\uffff", "\x7f"])
VALID_MESSAGES = st.builds(honest, st.sampled_from(["cell", "grade", "missing", "observation", "resumed", "done", "audit"]),
                           st.integers(-2, 5))
ODD_MESSAGES = st.builds(lambda op, text: json.dumps({"op": op, "event": text, "detail": text, "where": text, "seq": 1,
                                                      "targets": [text]}).encode(),
                         st.sampled_from(["audit", "missing"]), ODD_TEXT) | st.builds(
    lambda text: json.dumps({"op": "missing", "targets": [text], "seq": 1}, ensure_ascii=False).encode("utf-8", "surrogatepass"),
    ODD_TEXT)
NESTED = st.integers(1, 100_000).map(lambda depth: b"[" * depth + b"]" * depth) | st.integers(1, 50_000).map(
    lambda depth: b'{"op": "observation", "observation": ' + b'{"a": ' * depth + b"1" + b"}" * depth + b', "suspects": [], "seq": 1}')
WHOLE = (VALID_MESSAGES | ODD_MESSAGES | NESTED | st.binary(max_size=300)).map(frame)
PARTS = st.one_of(
    WHOLE,
    st.binary(max_size=300).map(lambda b: frame(b)[: max(1, len(b) // 2)]),  # cut off inside a frame
    st.integers(LIMIT + 1, 2**31 - 1).map(lambda n: HEADER.pack(n)),  # a huge length, nothing after
    st.integers(-(2**31), -1).map(lambda n: HEADER.pack(n) + b"x" * 8),  # a negative length
    st.binary(min_size=1, max_size=3),  # part of a header
)


def verdicts(stream: bytes, close: bool) -> tuple[list[str], float]:
    """Feed `stream` to the grader's reading; what it decided for each read, and the longest read in seconds."""
    ours, theirs = socket.socketpair()

    def write() -> None:
        try:
            theirs.sendall(stream)
        except OSError:
            return  # the grader stopped reading (a verdict came first)
        if close:
            theirs.close()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    reader, chan = Reader(CAP), Channel(ours.detach())
    seen: list[str] = []
    longest = 0.0
    try:
        while True:
            t0 = time.monotonic()
            try:
                message = reader.read(chan.recv(t0 + DEADLINE, LIMIT))
                seen.append(type(message).__name__)
            except (Violation, Garbled) as exc:
                seen.append(f"violation: {exc}"[:80])
                return seen, max(longest, time.monotonic() - t0)
            except (Silent, EOFError) as exc:
                seen.append(type(exc).__name__)
                return seen, max(longest, time.monotonic() - t0)
            finally:
                longest = max(longest, time.monotonic() - t0)
    finally:
        chan.close()
        writer.join(5)
        if not close:
            theirs.close()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(parts=st.lists(PARTS, max_size=6), close=st.booleans())
def test_every_stream_ends_in_a_verdict_within_its_deadline(parts: list[bytes], close: bool) -> None:
    seen, longest = verdicts(b"".join(parts), close)
    assert seen and (seen[-1].startswith("violation") or seen[-1] in ("Silent", "EOFError"))
    assert longest < DEADLINE + 2.0  # (slack for a loaded machine; a hang would be unbounded)


@pytest.mark.parametrize("text", ["\ud800", "x\udc00y", "a\x00b"])
def test_text_no_gradebook_can_store_is_a_violation_and_the_honest_writer_never_sends_it(text: str) -> None:
    for forged in (json.dumps({"op": "missing", "targets": [text], "seq": 1}).encode(),
                   json.dumps({"op": "audit", "event": "e", "detail": "d", "where": text, "seq": 1}).encode()):
        with pytest.raises(Violation, match="no gradebook can store"):
            Reader(CAP).read(forged)
    ours, theirs = socket.socketpair()
    writer = channel.Sender(theirs)
    writer.missing([text])
    writer.cell(0, [{"output_type": "stream", "name": "stdout", "text": text}], [])
    chan = Channel(ours.detach())
    reader = Reader(CAP)
    missing = reader.read(chan.recv(time.monotonic() + 5, LIMIT))
    cell = reader.read(chan.recv(time.monotonic() + 5, LIMIT))
    assert "\ufffd" in missing.targets[0] and "\ufffd" in cell.outputs[0]["text"]
    chan.close()
    theirs.close()


ANY_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=()), max_size=6)


@settings(max_examples=400, deadline=None)
@given(st.lists(ANY_TEXT, max_size=3), ANY_TEXT, st.booleans())
def test_the_grader_refuses_exactly_the_text_no_gradebook_can_store_however_the_worker_escapes_it(
        texts: list[str], key: str, ascii_only: bool) -> None:
    # the Reader looks for NUL and lone surrogates only in a message with a \u escape: the same verdict as looking
    # through every string of every message, whatever the text and however it is written
    data = json.dumps({"op": "missing", "targets": texts, key: 0, "seq": 1},
                      ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    try:
        raw = json.loads(data.decode("utf-8"))
    except ValueError:
        expected = None  # not a message at all (a surrogate written raw is not UTF-8)
    else:
        expected = bool(channel.unstorable(raw))
    try:
        Reader(CAP).read(data)
        refused = False
    except Violation as exc:
        refused = "no gradebook can store" in str(exc)
    assert refused == bool(expected)


def test_a_writer_that_stalls_mid_frame_is_a_violation_at_the_deadline_not_a_hang() -> None:
    ours, theirs = socket.socketpair()
    theirs.sendall(HEADER.pack(100) + b"x" * 10)
    chan = Channel(ours.detach())
    t0 = time.monotonic()
    with pytest.raises(Garbled, match="middle of a message"):
        chan.recv(t0 + 0.3, LIMIT)
    assert time.monotonic() - t0 < 2
    theirs.sendall(b"")
    chan.close()
    theirs.close()


def test_a_huge_length_prefix_is_refused_before_anything_is_read_or_held() -> None:
    ours, theirs = socket.socketpair()
    theirs.sendall(HEADER.pack(2**31 - 1))
    chan = Channel(ours.detach())
    with pytest.raises(Garbled, match="announced a message of 2147483647 bytes"):
        chan.recv(time.monotonic() + 5, LIMIT)
    chan.close()
    theirs.close()
