"""Every message between the grader and a grading worker, built and validated in one place.

The worker is the learner's process, so the grader believes nothing it says about itself: each message is
checked here against a strict schema (its op, where it may come in the conversation, field types, sizes,
counts, a sequence number) and every cell output must be a valid nbformat output whose JSON bytes fit the
cap. Anything off raises `Violation` with the evidence; the runner then scores the notebook 0 from that
point and flags it. Messages travel as JSON, never pickle.
"""

from __future__ import annotations

import json
import os
import re
import struct
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the worker imports this module too, and never needs nbformat
    from nbformat import NotebookNode

from ...settings import (  # what one notebook may send: every bound of the channel is settings.py's
    ERROR_TEXT,
    MAX_CELL_INDEX,
    MAX_DEPTH,
    MAX_INTEGER,
    MAX_ITEMS,
    MAX_LIST,
    MAX_OBSERVATION,
    MAX_OUTPUTS,
    MAX_STRING,
    RESERVE,
)

# Every frame between the grader and a process it started (a worker, a helper): a 4-byte big-endian signed length,
# then that many bytes, as multiprocessing's Connection.send_bytes frames them. Defined here once: the worker writes
# with it (`Sender`), the grader reads and writes with it (`sandbox.frames`, `bounded`), and so do the tests.
HEADER = struct.Struct("!i")
FRAME_LIMIT = 2 ** (8 * HEADER.size - 1) - 1  # the longest frame a header can announce

NOTE = "[output truncated: more than {limit} bytes]"
NOTEBOOK_NOTE = "[output dropped: this notebook's outputs passed {limit} bytes]"


class Violation(Exception):
    """The worker broke the protocol; the message is the evidence (what was wrong, where)."""


def max_message(output_bytes: int) -> int:
    """The largest message the grader reads from a worker: a cell's outputs at the cap, plus room to say so."""
    return output_bytes + RESERVE + MAX_OBSERVATION


def encode(message: dict[str, Any]) -> bytes:
    """A message as the bytes on the wire (JSON; NaN and infinities as Python's json writes them)."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()


def _c_encoder() -> Any:
    """json's C encoder with encode()'s settings, as one callable (obj, level) -> list of str chunks."""
    from json import encoder

    return encoder.c_make_encoder(None, None, encoder.encode_basestring, None, ":", ",", False, False, True)


def _size(value: Any) -> int:
    # (surrogatepass: a lone surrogate printed by learner code is measured here, and replaced by the Sender)
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))


def output_size(output: dict[str, Any]) -> int:
    """The bytes an output takes as compact JSON: the measure of every output cap, in the worker and here."""
    return _size(output)


def text_size(text: str) -> int:
    """The bytes a piece of text adds inside a JSON string (escapes included)."""
    return _size(text) - 2


# ------------------------------------------------------------------ grader -> worker


def plan(cells: list[dict[str, str]], limits: Any) -> dict[str, Any]:
    """What a worker is started with: the cells to run in order and the limits (every configurable trait of Limits)."""
    return {"cells": cells, "limits": {name: getattr(limits, name) for name in sorted(limits.trait_names(config=True))}}


def missing_request(check: str) -> dict[str, Any]:
    """Ask which of a check's targets the notebook lacks."""
    return {"op": "missing", "check": check}


def observe_request(check: str, case: dict[str, Any]) -> dict[str, Any]:
    """Ask for the raw observations of one case (the case carries inputs, never answers)."""
    return {"op": "observe", "check": check, "case": case}


def resume_request() -> dict[str, Any]:
    """The grade cell is judged: run on."""
    return {"op": "resume"}


def decode_request(data: bytes) -> dict[str, Any]:
    """A request from the grader, in the worker (the grader is trusted; this only parses)."""
    request = json.loads(data)
    if not isinstance(request, dict) or request.get("op") not in ("missing", "observe", "resume"):
        raise ValueError(f"not a request: {data[:80]!r}")
    return request


# ------------------------------------------------------------------ worker -> grader (built in the worker)


class Sender:
    """The worker's end of the channel: every message numbered and written whole, one at a time.

    The encoder and the write are taken when the worker starts (C functions, framed as multiprocessing's
    Connection.send_bytes frames them), so a notebook that patches `json` or `Connection` later changes nothing.
    """

    def __init__(self, conn: Any) -> None:
        self.fd = conn.fileno()
        self.seq = 0
        self.lock = threading.Lock()  # the audit hook may report from any thread the notebook starts
        self.encode = _c_encoder()
        self.write = os.write
        self.pack = HEADER.pack

    def _send(self, message: dict[str, Any]) -> None:
        with self.lock:
            self.seq += 1
            text = "".join(self.encode({**message, "seq": self.seq}, 0))
            try:
                data = text.encode()
            except UnicodeEncodeError:  # a lone surrogate somewhere (printed, or in a repr): the grader refuses those
                data = b""
            if not data or "\\u0000" in text:  # (NUL too) so the honest worker replaces what the grader cannot store
                data = "".join(self.encode(storable({**message, "seq": self.seq}), 0)).encode()
            view = memoryview(self.pack(len(data)) + data)
            while view:
                view = view[self.write(self.fd, view):]

    def cell(self, index: int, outputs: list[dict[str, Any]], tampered: list[str]) -> None:
        """A code cell ran: its outputs, and what the worker's guard saw replaced."""
        self._send({"op": "cell", "index": index, "outputs": outputs, "tampered": tampered})

    def grade(self, index: int) -> None:
        """A grade cell is reached: the worker waits for requests."""
        self._send({"op": "grade", "index": index})

    def missing(self, targets: list[str]) -> None:
        """The check's targets the notebook lacks."""
        self._send({"op": "missing", "targets": targets})

    def observation(self, observation: dict[str, Any], suspects: list[str]) -> None:
        """The raw observations of one case, and learner objects caught lying on the way."""
        self._send({"op": "observation", "observation": observation, "suspects": suspects})

    def resumed(self, tampered: list[str]) -> None:
        """The grade cell is over."""
        self._send({"op": "resumed", "tampered": tampered})

    def done(self) -> None:
        """Every cell ran."""
        self._send({"op": "done"})

    def audit(self, event: str, detail: str, where: str) -> None:
        """An audited event raised from learner code, as it happens."""
        self._send({"op": "audit", "event": event, "detail": detail, "where": where})


def _storable_text(text: str) -> str:
    """`text` with every NUL and lone surrogate replaced by U+FFFD (what no gradebook or CSV can hold)."""
    text = text.replace("\0", "\ufffd")
    try:
        text.encode()
    except UnicodeEncodeError:
        text = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)
    return text


def storable(value: Any) -> Any:
    """A copy of a message whose every string (keys too) the grader can store: see `unstorable`."""
    if isinstance(value, str):
        return _storable_text(value)
    if isinstance(value, list):
        return [storable(v) for v in value]
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    return value


def unstorable(value: Any) -> str:
    """What in a decoded message no gradebook, CSV or notebook file could hold ("" for nothing): a NUL character
    (PostgreSQL's text and many CSV readers refuse it) or a lone surrogate (not Unicode text; UTF-8 cannot encode it)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\0" in item:
                return "a NUL character"
            if not item.isascii():
                try:
                    item.encode()
                except UnicodeEncodeError:
                    return "a lone surrogate (not Unicode text)"
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
    return ""


# ------------------------------------------------------------------ worker -> grader (checked in the grader)


@dataclass(frozen=True)
class Cell:
    """A code cell ran in the worker."""

    index: int
    outputs: list[NotebookNode]
    tampered: list[str]
    size: int = 0  # the outputs' JSON bytes (output_size), as the cap counts them


@dataclass(frozen=True)
class Grade:
    """The worker reached a grade cell."""

    index: int


@dataclass(frozen=True)
class Missing:
    """The targets a check needs that the notebook lacks."""

    targets: list[str]


@dataclass(frozen=True)
class Observation:
    """The raw observations of one case."""

    observation: dict[str, Any]
    suspects: list[str]


@dataclass(frozen=True)
class Resumed:
    """The grade cell is over."""

    tampered: list[str]


@dataclass(frozen=True)
class Done:
    """The notebook ran to its end."""


@dataclass(frozen=True)
class Audit:
    """An audited event the worker's hook attributed to learner code."""

    event: str
    detail: str
    where: str


Message = Cell | Grade | Missing | Observation | Resumed | Done | Audit
FIELDS: dict[str, set[str]] = {
    "cell": {"index", "outputs", "tampered"},
    "grade": {"index"},
    "missing": {"targets"},
    "observation": {"observation", "suspects"},
    "resumed": {"tampered"},
    "done": set(),
    "audit": {"event", "detail", "where"},
}


@dataclass
class Reader:
    """The grader's end of the channel: decodes each message and checks it before anyone uses it."""

    output_bytes: int
    seq: int = 0
    audits: list[Audit] = field(default_factory=list)

    def read(self, data: bytes) -> Message:
        """The message in `data`, or Violation saying what is wrong with it."""
        try:
            raw = json.loads(data.decode("utf-8"))
        except (ValueError, RecursionError):  # (UnicodeDecodeError is a ValueError)
            raise Violation(f"sent {len(data)} bytes that are not a JSON message in UTF-8 ({data[:60]!r}...)") from None
        # A NUL or a lone surrogate reaches a decoded message only through a \u escape: strict UTF-8 refuses an
        # encoded surrogate and JSON a raw control character, so without one there is nothing to look for
        bad = unstorable(raw) if b"\\u" in data else ""
        if bad:
            raise Violation(f"sent text no gradebook can store: {bad} in a message ({_peek(raw)})")
        if not isinstance(raw, dict) or not isinstance(raw.get("op"), str) or raw["op"] not in FIELDS:
            raise Violation(f"sent a message with no known op ({_peek(raw)})")
        op = raw["op"]
        keys = set(raw) - {"op", "seq"}
        if keys != FIELDS[op]:
            raise Violation(f"sent a {op!r} message with fields {sorted(keys)}, expected {sorted(FIELDS[op])}")
        message = self._message(op, raw)
        self.seq += 1
        if raw.get("seq") != self.seq or type(raw.get("seq")) is not int:
            raise Violation(f"sent a {op!r} message numbered {_peek(raw.get('seq'))} where {self.seq} was due "
                            "(a second writer on the channel?)")
        if isinstance(message, Audit):
            self.audits.append(message)
        return message

    def _message(self, op: str, raw: dict[str, Any]) -> Message:
        if op == "cell":
            outputs, size = self.outputs(raw["outputs"])
            return Cell(_index(raw["index"]), outputs, names(raw["tampered"], "tampered"), size)
        if op == "grade":
            return Grade(_index(raw["index"]))
        if op == "missing":
            return Missing(names(raw["targets"], "missing targets"))
        if op == "observation":
            return Observation(observation(raw["observation"]), names(raw["suspects"], "suspects"))
        if op == "resumed":
            return Resumed(names(raw["tampered"], "tampered"))
        if op == "audit":
            return Audit(*(_string(raw[k], f"audit {k}", MAX_STRING) for k in ("event", "detail", "where")))
        return Done()

    def outputs(self, value: Any) -> tuple[list[NotebookNode], int]:
        """A cell's outputs, each a valid nbformat v4 output, all within the cap in JSON bytes; and their size."""
        if not isinstance(value, list):
            raise Violation(f"sent cell outputs that are a {type(value).__name__}, not a list")
        if len(value) > MAX_OUTPUTS + 2:
            raise Violation(f"sent {len(value)} outputs for one cell (at most {MAX_OUTPUTS})")
        checked = [output(o, i) for i, o in enumerate(value)]
        total = sum(output_size(o) for o in checked)
        if total > self.output_bytes + RESERVE:
            raise Violation(f"sent {total} bytes of outputs for one cell, over the cap of {self.output_bytes} bytes")
        from nbformat import from_dict

        return [from_dict(o) for o in checked], total


def _peek(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _index(value: Any) -> int:
    if type(value) is not int or not 0 <= value < MAX_CELL_INDEX:
        raise Violation(f"sent a cell index {_peek(value)}")
    return value


def _string(value: Any, what: str, limit: int) -> str:
    if not isinstance(value, str):
        raise Violation(f"sent {what} that is a {type(value).__name__}, not text")
    if len(value) > limit:
        raise Violation(f"sent {what} of {len(value)} characters (at most {limit})")
    return value


def names(value: Any, what: str) -> list[str]:
    """A short list of short strings (targets, suspicions, replaced names)."""
    if not isinstance(value, list) or len(value) > MAX_LIST:
        raise Violation(f"sent {what} that are not a list of at most {MAX_LIST} strings ({_peek(value)})")
    return [_string(x, what, MAX_STRING) for x in value]


def observation(value: Any) -> dict[str, Any]:
    """Raw observations: a dict of plain JSON numbers, strings, bools, lists and dicts, bounded in size and depth."""
    if not isinstance(value, dict):
        raise Violation(f"sent an observation that is a {type(value).__name__}, not a dict")
    count = plain(value, "the observation", MAX_DEPTH, MAX_STRING)
    if count > MAX_ITEMS:
        raise Violation(f"sent an observation of {count} items (at most {MAX_ITEMS})")
    size = len(encode(value))
    if size > MAX_OBSERVATION:
        raise Violation(f"sent an observation of {size} bytes (at most {MAX_OBSERVATION})")
    return value


def plain(value: Any, where: str, depth: int, string: int | None) -> int:
    """How many items `value` holds; Violation unless it is plain JSON within `depth` levels (strings within `string`)."""
    kind = type(value)
    if kind in (bool, int, float) or value is None:
        if kind is int and abs(value) > MAX_INTEGER:
            raise Violation(f"sent an integer of {value.bit_length()} bits in {where}")
        return 1
    if kind is str:
        if string is not None and len(value) > string:
            raise Violation(f"sent a string of {len(value)} characters in {where} (at most {string})")
        return 1
    if depth <= 0:
        raise Violation(f"sent data nested deeper than {MAX_DEPTH} levels in {where}")
    if kind is list:
        return 1 + sum(plain(x, where, depth - 1, string) for x in value)
    if kind is dict:
        return 1 + sum(plain(v, where, depth - 1, string) for v in value.values())
    raise Violation(f"sent a {kind.__name__} in {where}")  # pragma: no cover - json.loads makes only the kinds above


# nbformat 4.5's output schema (nbformat/v4/nbformat.v4.5.schema.json), spelled out so each failure names its field.
OUTPUT_FIELDS = {
    "stream": ({"output_type", "name", "text"}, set()),
    "display_data": ({"output_type", "data", "metadata"}, set()),
    "execute_result": ({"output_type", "data", "metadata", "execution_count"}, set()),
    "error": ({"output_type", "ename", "evalue", "traceback"}, set()),
}
JSON_MIME = re.compile(r"^application/(.*\+)?json$")


def output(value: Any, i: int = 0) -> dict[str, Any]:
    """One cell output checked against nbformat's v4 schema; multiline strings joined. Violation names the field."""
    where = f"output {i + 1}"
    if not isinstance(value, dict) or value.get("output_type") not in OUTPUT_FIELDS:
        kind = value.get("output_type") if isinstance(value, dict) else value
        raise Violation(f"sent {where} of no known output_type ({_peek(kind)})")
    kind = value["output_type"]
    required, optional = OUTPUT_FIELDS[kind]
    if not required <= set(value) <= required | optional:
        raise Violation(f"sent {where} ({kind}) with fields {sorted(value)}, expected {sorted(required)}")
    if kind == "stream":
        if value["name"] not in ("stdout", "stderr"):
            raise Violation(f"sent {where}, a stream named {_peek(value['name'])}")
        return {"output_type": kind, "name": value["name"], "text": _multiline(value["text"], where)}
    if kind == "error":
        tb = value["traceback"]
        if not isinstance(tb, list) or not all(isinstance(t, str) for t in tb):
            raise Violation(f"sent {where}, an error whose traceback is not a list of strings")
        return {"output_type": kind, "ename": _string(value["ename"], f"{where}'s ename", ERROR_TEXT),
                "evalue": _string(value["evalue"], f"{where}'s evalue", 10 * ERROR_TEXT), "traceback": tb}
    out = {"output_type": kind, "data": _mimebundle(value["data"], where), "metadata": value["metadata"]}
    if not isinstance(value["metadata"], dict):
        raise Violation(f"sent {where} whose metadata is a {type(value['metadata']).__name__}")
    plain(value["metadata"], f"{where}'s metadata", MAX_DEPTH, None)
    if kind == "execute_result":
        count = value["execution_count"]
        if count is not None and (type(count) is not int or count < 0):
            raise Violation(f"sent {where} with execution_count {_peek(count)}")
        out["execution_count"] = count
    return out


def _multiline(value: Any, where: str) -> str:
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return "".join(value)
    if not isinstance(value, str):
        raise Violation(f"sent {where} whose text is a {type(value).__name__}")
    return value


def _mimebundle(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise Violation(f"sent {where} whose data is a {type(value).__name__}, not a mime bundle")
    bundle: dict[str, Any] = {}
    for mime, data in value.items():
        if JSON_MIME.match(mime):
            plain(data, f"{where}'s {mime}", MAX_DEPTH, None)
            bundle[mime] = data
        else:
            bundle[mime] = _multiline(data, f"{where}'s {mime}")
    return bundle

