"""Incremental stream framing: SSE (text/event-stream) and NDJSON, from raw bytes to WireChunks.

Handles what real servers send: LF, CRLF or CR line endings (Gemini frames with CRLF), `:`
comment lines (OpenRouter keep-alives), multi-line `data:`, a UTF-8 BOM, and bytes split at any
point, including inside a multi-byte character. It does not parse the JSON inside `data`.
Bytes are held until a line is complete and only then decoded, so a character split across
chunks is never cut. `WireChunk` lives here, with what makes them: only a stream has chunks, so a
non-streaming call never builds the class.
"""

from __future__ import annotations

from dataclasses import dataclass

BOM = b"\xef\xbb\xbf"


@dataclass(slots=True)
class WireChunk:
    """One framed stream unit: an SSE event (`event` name + `data`) or one NDJSON line (`data`)."""

    data: str
    event: str | None = None


class SSEDecoder:
    """Feed bytes, get complete events. `finish()` flushes an event left without a blank line.

    Works line by line on the bytes: `bytes.splitlines` ends lines at LF, CRLF or CR alike, and a line
    is decoded only once its ending has arrived, so a character split across chunks is never cut.
    """

    __slots__ = ("_buffer", "_data", "_event", "_skip_lf", "_started")

    def __init__(self) -> None:
        self._buffer = b""
        """The start of a line whose ending has not arrived yet."""
        self._event: str | None = None
        self._data: str | None = None
        """The event being read (its name and `data` lines so far), sent on at the blank line ending it."""
        self._skip_lf = False
        """The bytes so far ended with CR: an LF opening the next chunk completes that CRLF."""
        self._started = False

    def feed(self, data: bytes) -> list[WireChunk]:
        if self._skip_lf and data:
            self._skip_lf = False
            if data[:1] == b"\n":
                data = data[1:]
        buffer = self._buffer + data
        if not self._started:
            if BOM.startswith(buffer):  # empty, or a BOM split across chunks: wait for more
                self._buffer = buffer
                return []
            buffer = buffer.removeprefix(BOM)
            self._started = True
        lines = buffer.splitlines()
        last = buffer[-1:]
        if last == b"\n":
            self._buffer = b""
        elif last == b"\r":  # might be the first half of a CRLF
            self._buffer = b""
            self._skip_lf = True
        else:
            self._buffer = lines.pop() if lines else b""
        out: list[WireChunk] = []
        event, value = self._event, self._data
        for line in lines:
            if not line:
                if value is not None or event is not None:
                    out.append(WireChunk(value or "", event))
                    event = value = None
                continue
            name, _, field = line.partition(b":")  # a `:` comment line has no name and is skipped
            if name == b"data":
                text = field.removeprefix(b" ").decode("utf-8", "replace")
                value = text if value is None else f"{value}\n{text}"
            elif name == b"event":
                event = field.removeprefix(b" ").decode("utf-8", "replace")
            # `id:` and `retry:` carry nothing our adapters use
        self._event, self._data = event, value
        return out

    def finish(self) -> list[WireChunk]:
        return self.feed(b"\n\n")  # ends a last line and the event it belongs to


class NDJSONDecoder:
    """One JSON document per line; blank lines skipped. `finish()` returns a last unterminated line."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[WireChunk]:
        lines = (self._buffer + data).split(b"\n")
        self._buffer = lines.pop()  # the start of a line whose newline has not arrived
        return [WireChunk(text) for line in lines if (text := line.decode("utf-8", "replace").strip())]

    def finish(self) -> list[WireChunk]:
        return self.feed(b"\n")


def decode_all(body: bytes, framing: str) -> list[WireChunk]:
    """Frame a whole recorded body at once (tests and replays)."""
    decoder: SSEDecoder | NDJSONDecoder = SSEDecoder() if framing == "sse" else NDJSONDecoder()
    return [*decoder.feed(body), *decoder.finish()]
