"""The grader's end of the channel believes nothing: every message is checked, every output capped by its JSON bytes."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import stat
from pathlib import Path

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder import checks as catalog
from autograder.grading.grade import channel
from autograder.grading.grade.channel import Reader, Violation
from autograder.grading.grade.worker.outputs import Outputs
from autograder.grading.store.files import course_secret
from autograder.settings import MAX_DEPTH, MAX_ITEMS, MAX_OUTPUTS, MAX_STRING, RESERVE

CAP = 10_000


def wire(send) -> tuple[Reader, list[bytes]]:
    """What a Sender puts on the wire for the messages `send(writer)` sends."""
    ours, theirs = multiprocessing.Pipe()
    writer = channel.Sender(theirs)
    send(writer)
    frames = []
    while ours.poll(0.1):
        frames.append(ours.recv_bytes())
    return Reader(CAP), frames


def test_what_an_honest_worker_writes_reads_back_message_by_message() -> None:
    reader, frames = wire(lambda w: (w.grade(0), w.missing(["Value.__add__"]), w.observation({"grads": [1.0, float("nan")]}, []),
                                     w.audit("sys._getframe", "sys._getframe", "<module> line 1"), w.resumed([]), w.done()))
    got = [reader.read(f) for f in frames]
    assert [type(m).__name__ for m in got] == ["Grade", "Missing", "Observation", "Audit", "Resumed", "Done"]
    assert got[1].targets == ["Value.__add__"] and got[3].where == "<module> line 1"
    assert reader.audits == [got[3]]


def test_a_message_written_by_a_second_writer_breaks_the_sequence() -> None:
    reader, frames = wire(lambda w: (w.cell(0, [], []), w.cell(1, [], [])))
    forged = channel.encode({"op": "cell", "index": 1, "outputs": [], "tampered": [], "seq": 2})
    reader.read(frames[0])
    reader.read(forged)  # the forgery guessed the number right...
    with pytest.raises(Violation, match="numbered 2 where 3 was due"):
        reader.read(frames[1])  # ...so the real message exposes it


@pytest.mark.parametrize("message, evidence", [
    (b"\x00garbage", "not a JSON message"),
    (b"[1, 2]", "no known op"),
    (b'{"op": "judge", "seq": 1}', "no known op"),
    (b'{"op": "done", "seq": 1, "tampered": []}', "fields ['tampered']"),
    (b'{"op": "done"}', "numbered None where 1 was due"),
    (b'{"op": "done", "seq": true}', "numbered True where 1 was due"),
    (b'{"op": "grade", "index": -1, "seq": 1}', "cell index -1"),
    (b'{"op": "missing", "targets": "Value", "seq": 1}', "missing targets that are not a list"),
    (b'{"op": "missing", "targets": [1], "seq": 1}', "missing targets that is a int"),
    (b'{"op": "observation", "observation": [1.0], "suspects": [], "seq": 1}', "observation that is a list"),
    (b'{"op": "observation", "observation": {"x": 123456789012345678901234567890}, "suspects": [], "seq": 1}', "integer of"),
    (b'{"op": "resumed", "tampered": null, "seq": 1}', "tampered that are not a list"),
    (b'{"op": "audit", "event": "x", "detail": 1, "where": "", "seq": 1}', "audit detail that is a int"),
])
def test_a_malformed_message_is_a_violation_naming_what_is_wrong(message: bytes, evidence: str) -> None:
    with pytest.raises(Violation, match=evidence.replace("[", r"\[").replace("]", r"\]")):
        Reader(CAP).read(message)


def test_an_observation_nested_too_deep_or_too_big_is_refused() -> None:
    deep: object = 1.0
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    with pytest.raises(Violation, match="nested deeper"):
        channel.observation({"x": deep})
    with pytest.raises(Violation, match="items"):
        channel.observation({"x": [0.0] * (MAX_ITEMS + 1)})
    with pytest.raises(Violation, match="string of"):
        channel.observation({"repr": "x" * (MAX_STRING + 1)})


def cell(outputs: list) -> bytes:
    return channel.encode({"op": "cell", "index": 0, "outputs": outputs, "tampered": [], "seq": 1})


@pytest.mark.parametrize("output, evidence", [
    ({"output_type": "stream", "name": "stdin", "text": "x"}, "a stream named"),
    ({"output_type": "stream", "name": "stdout", "text": 5}, "text is a int"),
    ({"output_type": "stream", "name": "stdout", "text": "x", "extra": 1}, "with fields"),
    ({"output_type": "display_data", "data": {"image/png": {"not": "text"}}, "metadata": {}}, "image/png whose text is a dict"),
    ({"output_type": "display_data", "data": {"text/plain": 5}, "metadata": {}}, "text/plain whose text is a int"),
    ({"output_type": "display_data", "data": {}, "metadata": []}, "metadata is a list"),
    ({"output_type": "execute_result", "data": {}, "metadata": {}, "execution_count": "1"}, "execution_count"),
    ({"output_type": "error", "ename": "E", "evalue": "", "traceback": "line"}, "traceback is not a list"),
    ({"output_type": "update_display_data", "data": {}, "metadata": {}}, "no known output_type"),
    ("text", "no known output_type"),
])
def test_an_output_that_is_not_a_valid_nbformat_output_is_a_violation(output: object, evidence: str) -> None:
    with pytest.raises(Violation, match=evidence):
        Reader(CAP).read(cell([output]))


def big_outputs() -> dict[str, dict]:
    """Rich outputs far over the cap, each of a kind the old character count let through."""
    return {
        "json": {"output_type": "display_data", "data": {"application/json": {"rows": [[0.5] * 100] * 400}}, "metadata": {}},
        "png": {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo" * 40_000}, "metadata": {}},
        "html": {"output_type": "execute_result", "data": {"text/html": ["<td>x</td>"] * 40_000}, "metadata": {},
                 "execution_count": 1},
        "metadata": {"output_type": "display_data", "data": {"text/plain": "x"}, "metadata": {"pad": ["y" * 100] * 2000}},
    }


@pytest.mark.parametrize("kind", list(big_outputs()))
def test_the_grader_refuses_rich_outputs_over_the_cap_counted_in_json_bytes(kind: str) -> None:
    output = big_outputs()[kind]
    assert channel.output_size(output) > CAP + RESERVE
    with pytest.raises(Violation, match=f"bytes of outputs for one cell, over the cap of {CAP}"):
        Reader(CAP).read(cell([output]))


def test_many_small_outputs_are_refused_by_count() -> None:
    tiny = {"output_type": "display_data", "data": {"text/plain": ""}, "metadata": {}}
    with pytest.raises(Violation, match="outputs for one cell"):
        Reader(10**9).read(cell([tiny] * (MAX_OUTPUTS + 3)))


@pytest.mark.parametrize("kind", list(big_outputs()))
def test_the_honest_worker_keeps_rich_outputs_under_the_cap_the_grader_enforces(kind: str) -> None:
    outputs = Outputs(CAP)
    small = {"output_type": "display_data", "data": {"text/plain": "first"}, "metadata": {}}
    for out in (small, big_outputs()[kind]):
        outputs.rich(out["output_type"], out["data"], out["metadata"], out.get("execution_count"))
    exported = outputs.export()
    assert sum(channel.output_size(o) for o in exported) <= CAP + RESERVE
    assert "output truncated" in exported[-1]["text"]
    assert Reader(CAP).read(cell(exported)).outputs[0]["data"] == {"text/plain": "first"}


def test_the_honest_worker_stops_many_small_outputs_at_the_count() -> None:
    outputs = Outputs(10**9)
    for _ in range(MAX_OUTPUTS + 50):
        outputs.rich("display_data", {"text/plain": "."}, {})
    assert len(outputs.export()) == MAX_OUTPUTS + 1
    Reader(10**9).read(cell(outputs.export()))


def nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = {"next": value}
    return value


@pytest.mark.parametrize("data", [{"application/json": nested(12)}, {"application/json": {"n": 2**70}},
                                  {"application/vnd.x+json": [nested(20)]}])
def test_an_honest_display_the_channel_would_refuse_is_dropped_by_the_worker_not_sent(data: dict) -> None:
    outputs = Outputs(CAP)
    outputs.rich("display_data", {**data, "text/plain": "<JSON>"}, {"deep": nested(12)})
    read = Reader(CAP).read(cell(outputs.export()))  # an honest notebook's display never reads as a violation
    assert read.outputs[0]["data"] == {"text/plain": "<JSON>"} and read.outputs[0]["metadata"] == {}


def test_png_bytes_from_a_display_formatter_travel_as_base64() -> None:
    outputs = Outputs(CAP)
    outputs.rich("display_data", {"image/png": b"\x89PNG\r\n", "text/plain": "<Figure>"}, {})
    read = Reader(CAP).read(cell(outputs.export()))
    assert read.outputs[0]["data"]["image/png"] == "iVBORw0K"


TEXT = st.text(max_size=20)
MULTILINE = st.one_of(TEXT, st.lists(TEXT, max_size=3))
JSONISH = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-10, 10), st.floats(allow_nan=False), TEXT),
                       lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
                       max_leaves=8)
MIME = st.sampled_from(["text/plain", "text/html", "image/png", "application/json", "application/vnd.x+json", "bad mime"])
OUTPUTS = st.one_of(
    st.fixed_dictionaries({"output_type": st.just("stream"), "name": st.sampled_from(["stdout", "stderr", "other"]),
                           "text": st.one_of(MULTILINE, st.integers())}),
    st.fixed_dictionaries({"output_type": st.sampled_from(["display_data", "execute_result"]),
                           "data": st.dictionaries(MIME, st.one_of(MULTILINE, JSONISH), max_size=3),
                           "metadata": st.one_of(st.dictionaries(TEXT, JSONISH, max_size=2), st.lists(TEXT, max_size=1))},
                          optional={"execution_count": st.one_of(st.none(), st.integers(-2, 5), TEXT)}),
    st.fixed_dictionaries({"output_type": st.just("error"), "ename": TEXT, "evalue": TEXT,
                           "traceback": st.one_of(st.lists(TEXT, max_size=3), TEXT)}),
)


@settings(max_examples=100, deadline=None)
@given(OUTPUTS)
def test_the_channel_accepts_exactly_the_outputs_nbformat_s_schema_accepts(output: dict) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x")])
    nb.cells[0].outputs = [json.loads(json.dumps(output))]
    try:
        nbformat.validate(nb)
        valid = output.get("name", "stdout") in ("stdout", "stderr")  # stricter than the schema: no other streams
    except nbformat.ValidationError:
        valid = False
    try:
        checked = channel.output(json.loads(json.dumps(output)))
    except Violation:
        assert not valid, f"a valid output refused: {output}"
    else:
        assert valid, f"an invalid output accepted: {output}"
        nb.cells[0].outputs = [nbformat.from_dict(checked)]
        nbformat.validate(nb)


def test_the_course_secret_is_made_once_private_and_kept(tmp_path) -> None:
    first = course_secret(tmp_path)
    path = tmp_path / ".autograder-secret"
    assert len(first) == 32 and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert course_secret(tmp_path) == first
    os.chmod(path, 0o644)
    assert course_secret(tmp_path) == first and stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_hidden_cases_come_from_the_course_secret_and_visible_ones_from_the_package() -> None:
    check = catalog.get("add_forward")
    package = check.make_cases(True)
    mine, again, other = check.make_cases(True, b"a" * 32), check.make_cases(True, b"a" * 32), check.make_cases(True, b"b" * 32)
    assert mine == again and mine != package and mine != other
    assert check.make_cases(False, b"a" * 32) == check.make_cases(False)




def test_the_frame_header_is_written_once_in_the_grader_and_the_tests_pack_with_it():
    # the learner-side attack code in tests/adversarial/ frames by hand on purpose (a learner has no HEADER)
    root = Path(__file__).resolve().parent.parent
    code = [p for p in (root / "autograder").rglob("*.py")] + [p for p in (root / "tests").glob("*.py")]
    packing = [str(p.relative_to(root)) for p in code if re.search(r"""struct\.(pack|unpack|Struct)\(\s*["']!i""", p.read_text())]
    assert packing == ["autograder/grading/grade/channel.py"], packing
