"""AWS event-stream messages built for tests (prelude, string headers, payload, CRC32s), so a test can
put an event a recording lacks (an exception) into a real binary stream. Test data only."""

from __future__ import annotations

import struct
import zlib


def _headers(pairs: dict[str, str]) -> bytes:
    out = b""
    for name, value in pairs.items():
        raw_name, raw_value = name.encode(), value.encode()
        out += struct.pack("B", len(raw_name)) + raw_name + b"\x07" + struct.pack(">H", len(raw_value)) + raw_value
    return out


def message(headers: dict[str, str], payload: bytes) -> bytes:
    encoded = _headers(headers)
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + encoded + payload
    return body + struct.pack(">I", zlib.crc32(body))


def event_message(event_type: str, payload: bytes) -> bytes:
    return message({":event-type": event_type, ":content-type": "application/json", ":message-type": "event"}, payload)


def exception_message(exception_type: str, payload: bytes) -> bytes:
    return message({":exception-type": exception_type, ":content-type": "application/json",
                    ":message-type": "exception"}, payload)
