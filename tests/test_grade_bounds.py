"""Bounds the grader keeps on its own side, whatever the worker does: every read has a deadline, a notebook's outputs
have a total, and a worker that cannot start costs only its own notebook. Driven through runner.Session with a
forged worker on a socket pair (no sandbox needed)."""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.grading.grade import channel, runner
from autograder.grading.grade.channel import HEADER, Violation
from autograder.grading.grade.sandbox import client
from autograder.grading.grade.sandbox.frames import Channel
from autograder.grading.grade.worker.outputs import Outputs, _Stream
from autograder.settings import RESERVE, Limits, Tolerance


class ForgedWorker:
    """A worker whose channel the test writes: whatever a hostile worker process could write."""

    def __init__(self) -> None:
        ours, self.far = socket.socketpair()
        self.channel = Channel(ours.detach())
        self.killed = False

    def write(self, data: bytes) -> None:
        self.far.sendall(data)

    def exitcode(self, timeout: float = 0.0) -> int | None:
        return -9 if self.killed else None

    def out_of_memory(self) -> bool:
        return False

    def kill(self) -> None:
        self.killed = True

    def close(self) -> None:
        self.channel.close()
        self.far.close()


@pytest.fixture
def forged(monkeypatch: pytest.MonkeyPatch) -> ForgedWorker:
    worker = ForgedWorker()
    monkeypatch.setattr(client.MODE, "launch", lambda plan, files: worker)
    return worker


def frame(message: dict[str, Any]) -> bytes:
    data = channel.encode(message)
    return HEADER.pack(len(data)) + data


def session(cells: int, **limits: Any) -> runner.Session:
    return runner.Session([{"kind": "code", "source": "pass"}] * cells, Limits(**{"cell_timeout": 0.5, **limits}), {})


@pytest.mark.parametrize("stream, verdict", [
    (b"", "no answer within"),  # silence: the cell's deadline, not a hang
    (b"\x00\x00", "Violation: stopped in the middle of a message"),  # half a header, then silence
    (HEADER.pack(1000) + b'{"op": "cell"', "Violation: stopped in the middle of a message"),
    (HEADER.pack(2**31 - 1), "Violation: announced a message of 2147483647 bytes"),
    (HEADER.pack(-5), "Violation: announced a message of -5 bytes"),
])
def test_every_read_ends_at_its_deadline_in_a_verdict(forged: ForgedWorker, stream: bytes, verdict: str) -> None:
    forged.write(stream)
    s = session(1)
    t0 = time.monotonic()
    with pytest.raises((runner.Stopped, Violation)) as caught:
        s.recv(0.5 + runner.GRACE - 5.0)  # the cell's timeout, without the grace a real worker gets
    assert time.monotonic() - t0 < 3
    got = f"{type(caught.value).__name__}: {caught.value}"
    assert (verdict in got) if verdict.startswith("Violation") else (verdict in str(caught.value))
    assert forged.killed  # the notebook is stopped at its deadline
    s.close()


def test_a_read_never_waits_past_the_notebooks_own_deadline(forged: ForgedWorker) -> None:
    s = session(1, notebook_timeout=0.3)
    t0 = time.monotonic()
    with pytest.raises(runner.Stopped, match=r"time limit of 0\.3 s"):
        s.recv(60)
    assert time.monotonic() - t0 < 2
    s.close()


def test_a_notebooks_outputs_past_its_total_are_dropped_with_a_note(forged: ForgedWorker) -> None:
    cells, per_cell = 12, 20_000
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('x' * 20_000)") for _ in range(cells)])
    out = [{"output_type": "stream", "name": "stdout", "text": "x" * per_cell}]
    stream = b"".join(frame({"op": "cell", "index": i, "outputs": out, "tampered": [], "seq": i + 1}) for i in range(cells))
    threading.Thread(target=forged.write, args=(stream + frame({"op": "done", "seq": cells + 1}),), daemon=True).start()
    limits = Limits(notebook_output_bytes=50_000, output_bytes=30_000)
    s = runner.Session([{"kind": "code", "source": "pass"}] * cells, limits, {})
    notes: list[str] = []
    runner._converse(s, nb, [(i, None) for i in range(cells)], limits, Tolerance(), None, [], notes, [])
    s.close()
    kept = [c for c in nb.cells if c.outputs[0]["text"] == "x" * per_cell]
    assert 0 < len(kept) <= (50_000 + RESERVE) // per_cell
    assert all("passed 50000 bytes" in c.outputs[0]["text"] for c in nb.cells[len(kept):])
    total = sum(channel.output_size(o) for c in nb.cells for o in c.outputs)
    assert total <= 50_000 + RESERVE + cells * 200
    assert [n for n in notes if n.startswith(runner.OUTPUTS_DROPPED)] == [
        f"{runner.OUTPUTS_DROPPED} 50000 bytes, from {s.where.split(' (')[0].rsplit(' ', 1)[0]} {len(kept) + 1} on"]


def test_the_total_counts_outputs_as_the_autograded_file_holds_them_so_the_file_stays_near_it(forged: ForgedWorker) -> None:
    from autograder.grading.grade.bounded import notebook_file

    cells = 12
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('\\n' * 10_000)") for _ in range(cells)])
    out = [{"output_type": "stream", "name": "stdout", "text": "\n" * 10_000}]  # 20 kB as compact JSON, ~120 kB written
    stream = b"".join(frame({"op": "cell", "index": i, "outputs": out, "tampered": [], "seq": i + 1}) for i in range(cells))
    threading.Thread(target=forged.write, args=(stream + frame({"op": "done", "seq": cells + 1}),), daemon=True).start()
    limits = Limits(notebook_output_bytes=200_000, output_bytes=30_000)
    s = runner.Session([{"kind": "code", "source": "pass"}] * cells, limits, {})
    notes: list[str] = []
    runner._converse(s, nb, [(i, None) for i in range(cells)], limits, Tolerance(), None, [], notes, [])
    s.close()
    kept = sum(c.outputs[0]["text"] == "\n" * 10_000 for c in nb.cells)
    assert 0 < kept < cells and any(n.startswith(runner.OUTPUTS_DROPPED) for n in notes)
    assert len(notebook_file(nb)[0]) < 200_000 + RESERVE + 150_000  # one cell past the total at most


outputs_strategy = st.lists(st.one_of(
    st.builds(lambda t: {"output_type": "stream", "name": "stdout", "text": t}, st.text(st.sampled_from("ab\n\r\"\\é\t"))),
    st.builds(lambda d, t: {"output_type": "display_data", "metadata": {}, "data": {"application/json": d, "text/plain": t}},
              st.recursive(st.none() | st.integers() | st.text(max_size=5), lambda c: st.lists(c, max_size=4), max_leaves=20),
              st.text(st.sampled_from("xy\n"))),
), max_size=4)


@given(outputs_strategy)
@settings(max_examples=60, deadline=None)
def test_written_size_is_what_the_outputs_add_to_the_autograded_file(outputs: list[dict[str, Any]]) -> None:
    import copy

    from autograder.grading.grade.bounded import notebook_file, written_size

    def file_of(outs: list[Any]) -> int:
        return len(notebook_file(nbformat.from_dict(nbformat.v4.new_notebook(
            cells=[nbformat.v4.new_code_cell("1", outputs=outs)])))[0])

    before = copy.deepcopy(outputs)
    size = written_size(outputs)
    assert outputs == before  # measured, not changed
    assert abs(size - (file_of(copy.deepcopy(outputs)) - file_of([]))) <= 4


def test_the_honest_worker_drops_output_past_the_notebooks_total_and_the_cell_runs_on() -> None:
    outputs = Outputs(1_000_000, notebook_limit=30_000)
    stream = _Stream(outputs, "stdout")
    for _ in range(3):
        for _ in range(100):
            stream.write("y" * 99 + "\n")  # 10 kB a cell: never raises, unlike the per-cell cap
        outputs.next_cell()
    stream.write("more\n")
    assert outputs.dropped and "passed 30000 bytes" in outputs.export()[-1]["text"]
    assert outputs.spent <= 30_000 + 200


def test_a_spawn_that_times_out_is_retried_and_the_sandbox_is_kept_while_it_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    class SlowBox:
        alive = True
        launches = 0
        closed = False

        def launch(self, start: dict[str, Any]) -> str:
            self.launches += 1
            if self.launches == 1:
                raise client.SpawnTimeout("the sandbox did not start a worker within 10 s")
            return "worker"

        def ping(self) -> bool:
            return True

        def close(self) -> None:
            self.closed = True

    pool = client.Pool()
    box = SlowBox()
    monkeypatch.setattr(pool, "current", lambda: box)
    assert pool.launch({}) == "worker" and box.launches == 2 and not box.closed  # classmates' workers keep running

    class FailingBox(SlowBox):
        def launch(self, start: dict[str, Any]) -> str:
            raise client.SandboxFailed("the notebook's namespaces could not be set up")

    failing = FailingBox()
    monkeypatch.setattr(pool, "current", lambda: failing)
    with pytest.raises(client.SandboxFailed):
        pool.launch({})  # this notebook only: 0 with the reason
    assert not failing.closed


def test_a_worker_that_does_not_read_the_graders_request_stops_at_a_deadline(forged: ForgedWorker,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "REQUEST_TIMEOUT", 0.3)
    s = session(1)
    done = threading.Event()

    def flood() -> None:
        with pytest.raises(runner.Stopped, match="did not read"):
            for _ in range(10_000):
                s.send({"op": "observe", "check": "add_forward", "case": {"x": "y" * 10_000}})
        done.set()

    t = threading.Thread(target=flood)
    t.start()
    t.join(20)
    assert done.is_set()
    s.close()


def test_by_default_one_more_notebook_than_cpus_is_graded_at_a_time_never_more_than_fit_in_memory() -> None:
    from autograder.grading.batch import default_jobs

    gib = 2**30
    assert default_jobs(2048, cpus=2, memory_bytes=24 * gib) == 3
    assert default_jobs(2048, cpus=64, memory_bytes=32 * gib) == 16  # 16 notebooks at their 2 GiB limit fill it
    assert default_jobs(4096, cpus=8, memory_bytes=2 * gib) == 1  # never none
    assert 1 <= default_jobs(2048) <= len(os.sched_getaffinity(0)) + 1
