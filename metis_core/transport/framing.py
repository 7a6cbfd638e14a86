"""Incremental stream framing: SSE (text/event-stream) and NDJSON, from raw bytes to WireChunks.

Handles what real servers send: LF, CRLF or CR line endings (Gemini frames with CRLF), `:`
comment lines (OpenRouter keep-alives), multi-line `data:`, a UTF-8 BOM, and bytes split at any
point, including inside a multi-byte character. It does not parse the JSON inside `data`.
"""

from __future__ import annotations

import codecs

from metis_core.transport.wire import WireChunk


class SSEDecoder:
    """Feed bytes, get complete events. `finish()` flushes an event left without a blank line."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._buffer = ""
        self._event: str | None = None
        self._data: list[str] = []
        self._started = False

    def feed(self, data: bytes) -> list[WireChunk]:
        text = self._decoder.decode(data)
        if not self._started and text:
            text = text.removeprefix("\ufeff")
            self._started = True
        buffer = self._buffer + text
        held = ""
        if buffer.endswith("\r"):  # might be the first half of a CRLF: wait for the next bytes
            buffer, held = buffer[:-1], "\r"
        if "\r" in buffer:  # CRLF and lone CR endings read as LF (one split serves all three)
            buffer = buffer.replace("\r\n", "\n").replace("\r", "\n")
        *lines, rest = buffer.split("\n")
        self._buffer = rest + held
        out: list[WireChunk] = []
        for line in lines:
            self._line(line, out)
        return out

    def _line(self, line: str, out: list[WireChunk]) -> None:
        if not line:
            if self._data or self._event is not None:
                out.append(WireChunk(data="\n".join(self._data), event=self._event))
            self._event = None
            self._data = []
            return
        if line[0] == ":":
            return  # comment / keep-alive
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        # `id:` and `retry:` carry nothing our adapters use

    def finish(self) -> list[WireChunk]:
        out: list[WireChunk] = []
        tail = self._buffer + self._decoder.decode(b"", final=True)
        self._buffer = ""
        for line in tail.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
            self._line(line, out)
        self._line("", out)
        return out


class NDJSONDecoder:
    """One JSON document per line; blank lines skipped. `finish()` returns a last unterminated line."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._buffer = ""

    def feed(self, data: bytes) -> list[WireChunk]:
        self._buffer += self._decoder.decode(data)
        if "\n" not in self._buffer:
            return []
        *lines, self._buffer = self._buffer.split("\n")
        return [WireChunk(data=line.strip()) for line in lines if line.strip()]

    def finish(self) -> list[WireChunk]:
        tail = (self._buffer + self._decoder.decode(b"", final=True)).strip()
        self._buffer = ""
        return [WireChunk(data=tail)] if tail else []


def decode_all(body: bytes, framing: str) -> list[WireChunk]:
    """Frame a whole recorded body at once (tests and replays)."""
    decoder: SSEDecoder | NDJSONDecoder = SSEDecoder() if framing == "sse" else NDJSONDecoder()
    return [*decoder.feed(body), *decoder.finish()]
