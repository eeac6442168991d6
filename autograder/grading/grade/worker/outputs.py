"""A cell's outputs as nbformat dicts, the way nbclient would record them, bounded as the grader bounds them: per cell
(`Limits.output_bytes`, counted in JSON bytes whatever the type) and per notebook (`Limits.notebook_output_bytes`),
and `sys.stdout` / `sys.stderr` while a cell runs."""

from __future__ import annotations

import json
from typing import Any

from ....settings import ERROR_LINES, ERROR_TEXT, MAX_DEPTH, MAX_OUTPUTS, RESERVE
from .. import channel


class OutputLimitExceeded(Exception):
    """The cell printed more than the output cap; printing more ends the cell."""


class Outputs:
    """The outputs of the running cell, as nbformat dicts, bounded to `limit` bytes of JSON (channel.output_size).

    The grader measures the same way and refuses more, so this count is only the honest worker's courtesy.
    """

    def __init__(self, limit: int, notebook_limit: int = 2**62) -> None:
        self.limit = limit
        self.notebook_limit = notebook_limit  # bytes all cells may leave; `spent`: what earlier cells left
        self.spent = 0
        self.items: list[dict[str, Any]] = []
        self.size = 0
        self.truncated = False  # past the cell's cap: printing more ends the cell
        self.dropped = False  # past the notebook's: what comes is dropped, and the cell runs on

    def _room(self, n: int) -> bool:
        if self.truncated or self.dropped:
            return False
        if self.size + n > self.limit or len(self.items) >= MAX_OUTPUTS:
            self.truncated = True
            self._note(channel.NOTE.format(limit=self.limit))
            return False
        if self.spent + self.size + n > self.notebook_limit:
            self.dropped = True
            self._note(channel.NOTEBOOK_NOTE.format(limit=self.notebook_limit))
            return False
        self.size += n
        return True

    def _note(self, text: str) -> None:
        note = {"output_type": "stream", "name": "stdout", "text": "\n" + text + "\n"}
        self.items.append(note)
        self.size += channel.output_size(note)

    def next_cell(self) -> None:
        """The cell is over: its outputs count against the notebook's bound; the next cell starts with none."""
        self.spent += self.size
        self.clear()

    def stream(self, name: str, text: str) -> None:
        """Text printed to stdout or stderr (consecutive writes to one stream make one output, as in Jupyter)."""
        if not text:
            return
        last = self.items[-1] if self.items else None
        joins = last is not None and last["output_type"] == "stream" and last["name"] == name and isinstance(last["text"], list)
        envelope = 0 if joins else channel.output_size({"output_type": "stream", "name": name, "text": ""})
        if not self._room(envelope + channel.text_size(text)):
            return
        if joins:
            last["text"].append(text)  # type: ignore[index]  # joined in export(): appending to one str is quadratic
        else:
            self.items.append({"output_type": "stream", "name": name, "text": [text]})

    def export(self) -> list[dict[str, Any]]:
        """The outputs as nbformat dicts (stream chunks joined)."""
        return [{**o, "text": "".join(o["text"])} if isinstance(o.get("text"), list) else o for o in self.items]

    def rich(self, output_type: str, data: dict[str, Any], metadata: dict[str, Any], count: int | None = None) -> None:
        """A display_data or execute_result, counted by its JSON bytes whatever its mime types hold."""
        room = self.limit - self.size
        bundle, meta = _mime_json(data, room), _json_copy(metadata or {}, room)
        if bundle is None or meta is None:  # a part alone is over the cap: not worth copying
            self._room(self.limit + 1)
            return
        out: dict[str, Any] = {"output_type": output_type, "data": bundle, "metadata": meta if isinstance(meta, dict) else {}}
        if output_type == "execute_result":
            out["execution_count"] = count
        if self._room(channel.output_size(out)):
            self.items.append(out)

    def error(self, ename: str, evalue: str, traceback: list[str]) -> None:
        """An exception that ended the cell: always kept (within the grader's reserve), shortened."""
        lines = [str(t)[: ERROR_TEXT] for t in traceback[-ERROR_LINES:]]
        out = {"output_type": "error", "ename": ename[: ERROR_TEXT], "evalue": evalue[: ERROR_TEXT],
               "traceback": lines}
        n = channel.output_size(out)
        if self.size + n > self.limit + RESERVE // 2:
            return  # a cell showing error after error: the first ones already decide its grade
        self.size += n
        self.items.append(out)

    def clear(self) -> None:
        """clear_output(): the cell starts over with no output."""
        self.items.clear()
        self.size = 0
        self.truncated = self.dropped = False


def _mime_json(data: dict[str, Any], room: int) -> dict[str, Any] | None:
    """A display's mime bundle as JSON-ready copies (bytes as base64, like ipykernel), dropping what cannot be;
    None when one value alone is bigger than `room` bytes."""
    import base64

    bundle: dict[str, Any] = {}
    for mime, value in data.items():
        if isinstance(value, bytes):
            value = base64.b64encode(value).decode("ascii")
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            value = "".join(value)
        if isinstance(value, str):
            if len(value) > room:
                return None
        elif channel.JSON_MIME.match(str(mime)):
            value = _json_copy(value, room)
            if value is None:
                return None
        else:
            continue
        if value is not _NOT_JSON:
            bundle[str(mime)] = value
    return bundle


_NOT_JSON = object()


def _json_copy(value: Any, room: int) -> Any:
    """A plain-JSON copy of `value` (so later changes to it change no output), _NOT_JSON if it has no JSON form,
    None if its JSON is bigger than `room` bytes."""
    try:
        text = channel.encode(value)
    except (TypeError, ValueError, RecursionError):
        return _NOT_JSON
    if len(text) > room:
        return None
    copy = json.loads(text)
    try:  # the channel's own rule (nesting, integer size): what it would refuse is dropped here, never sent
        channel.plain(copy, "an output", MAX_DEPTH, None)
    except channel.Violation:
        return _NOT_JSON
    return copy


class _Stream:
    """sys.stdout / sys.stderr while a cell runs."""

    def __init__(self, outputs: Outputs, name: str) -> None:
        self.outputs, self.name = outputs, name
        self.encoding, self.errors = "utf-8", "strict"

    def write(self, s: Any) -> int:
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        if self.outputs.truncated:  # a runaway print loop: stop it now rather than at the time limit
            raise OutputLimitExceeded(f"the cell printed more than {self.outputs.limit} bytes")
        self.outputs.stream(self.name, s)
        if self.outputs.truncated:
            raise OutputLimitExceeded(f"the cell printed more than {self.outputs.limit} bytes")
        return len(s)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("no file descriptor while grading")
