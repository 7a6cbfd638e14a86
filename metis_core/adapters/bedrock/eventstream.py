"""ConverseStream's binary framing (application/vnd.amazon.eventstream) -> WireChunks, by botocore.

Each AWS event-stream message (prelude, headers, payload, CRCs) is parsed and checksummed by
botocore's EventStreamBuffer. An event becomes `WireChunk(event=<:event-type>, data=<JSON payload>)`;
an exception message `WireChunk(event="exception:<:exception-type>")`. Bytes left over when the
body ends are a message cut off: TruncatedStreamError. It does not read the JSON inside.
"""

from __future__ import annotations

from typing import Any

import orjson

from metis_core.adapters.bedrock.errors import PROVIDER
from metis_core.adapters.bedrock.signing import require_botocore
from metis_core.errors import MalformedResponseError, TruncatedStreamError
from metis_core.transport.framing import WireChunk

EXCEPTION_PREFIX = "exception:"


class EventStreamDecoder:
    """Feed raw body bytes, get one WireChunk per complete event-stream message."""

    def __init__(self) -> None:
        require_botocore()
        from botocore.eventstream import EventStreamBuffer

        self._buffer: Any = EventStreamBuffer()
        self._pending = 0
        """Bytes fed and not yet part of a parsed message."""

    def feed(self, data: bytes) -> list[WireChunk]:
        from botocore.eventstream import ParserError

        self._pending += len(data)
        self._buffer.add_data(data)
        out: list[WireChunk] = []
        try:
            for message in self._buffer:
                self._pending -= message.prelude.total_length
                out.append(_chunk(message.headers, message.payload))
        except ParserError as exc:
            raise MalformedResponseError(
                f"the event stream is corrupt ({type(exc).__name__}: {exc}); retry the turn", provider=PROVIDER
            ) from None
        return out

    def finish(self) -> list[WireChunk]:
        if self._pending:
            raise TruncatedStreamError(
                f"the event stream ended {self._pending} bytes into a message (body cut off); "
                "the partial answer is kept, retry the turn for a full one",
                provider=PROVIDER,
            )
        return []


def _chunk(headers: dict[str, Any], payload: bytes) -> WireChunk:
    data = payload.decode("utf-8", "replace")
    kind = headers.get(":message-type")
    if kind == "exception":
        return WireChunk(data=data, event=EXCEPTION_PREFIX + str(headers.get(":exception-type") or "unknown"))
    if kind == "error":
        code = str(headers.get(":error-code") or "unknown")
        return WireChunk(data=f'{{"message": {_json_string(headers.get(":error-message"))}}}',
                         event=EXCEPTION_PREFIX + code)
    return WireChunk(data=data, event=str(headers.get(":event-type") or ""))


def _json_string(value: object) -> str:
    return orjson.dumps(str(value or "")).decode()
