"""Incremental stream framing: SSE (text/event-stream) and NDJSON, from raw bytes to WireChunks.

Handles what real servers send: LF, CRLF or CR line endings (Gemini frames with CRLF), `:`
comment lines (OpenRouter keep-alives), multi-line `data:`, a UTF-8 BOM, and bytes split at any
point, including inside a multi-byte character. It does not parse the JSON inside `data`.
Bytes are held until an event (SSE: a blank line; NDJSON: a newline) is complete and only then
decoded, so a character split across chunks is never cut and each event is decoded once.
"""

from __future__ import annotations

from metis_core.transport.wire import WireChunk

BOM = b"\xef\xbb\xbf"


class SSEDecoder:
    """Feed bytes, get complete events. `finish()` flushes an event left without a blank line."""

    __slots__ = ("_buffer", "_started")

    def __init__(self) -> None:
        self._buffer = b""
        """Bytes after the last complete event, line endings already LF (a trailing CR held as is)."""
        self._started = False

    def feed(self, data: bytes) -> list[WireChunk]:
        buffer = self._buffer + data
        if not self._started:
            if BOM.startswith(buffer):  # empty, or a BOM split across chunks: wait for more
                self._buffer = buffer
                return []
            buffer = buffer.removeprefix(BOM)
            self._started = True
        held = b""
        if b"\r" in buffer:  # CRLF and lone CR endings read as LF (one split serves all three)
            if buffer.endswith(b"\r"):  # might be the first half of a CRLF: wait for the next bytes
                buffer, held = buffer[:-1], b"\r"
            buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        end = buffer.rfind(b"\n\n")
        if end < 0:
            self._buffer = buffer + held
            return []
        self._buffer = buffer[end + 2 :] + held
        return _events(buffer[: end + 2])

    def finish(self) -> list[WireChunk]:
        tail = self._buffer.removeprefix(BOM) if not self._started else self._buffer
        self._buffer = b""
        return _events(tail.replace(b"\r\n", b"\n").replace(b"\r", b"\n") + b"\n\n") if tail else []


def _events(raw: bytes) -> list[WireChunk]:
    """The events of complete SSE text: lines with LF endings, each event ended by a blank line."""
    out: list[WireChunk] = []
    event: str | None = None
    data: str | None = None
    for line in raw.decode("utf-8", "replace").split("\n"):
        if not line:
            if data is not None or event is not None:
                out.append(WireChunk(data or "", event))
                event = data = None
            continue
        name, _, value = line.partition(":")  # a `:` comment line has no name and is skipped
        if name == "data":
            value = value.removeprefix(" ")
            data = value if data is None else f"{data}\n{value}"
        elif name == "event":
            event = value.removeprefix(" ")
        # `id:` and `retry:` carry nothing our adapters use
    return out


class NDJSONDecoder:
    """One JSON document per line; blank lines skipped. `finish()` returns a last unterminated line."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[WireChunk]:
        buffer = self._buffer + data
        end = buffer.rfind(b"\n")
        if end < 0:
            self._buffer = buffer
            return []
        self._buffer = buffer[end + 1 :]
        return _lines(buffer[:end])

    def finish(self) -> list[WireChunk]:
        tail, self._buffer = self._buffer, b""
        return _lines(tail)


def _lines(raw: bytes) -> list[WireChunk]:
    return [WireChunk(line) for text in raw.decode("utf-8", "replace").split("\n") if (line := text.strip())]


def decode_all(body: bytes, framing: str) -> list[WireChunk]:
    """Frame a whole recorded body at once (tests and replays)."""
    decoder: SSEDecoder | NDJSONDecoder = SSEDecoder() if framing == "sse" else NDJSONDecoder()
    return [*decoder.feed(body), *decoder.finish()]
