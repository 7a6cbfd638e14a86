"""The OTLP/JSON encoding of traces (ExportTraceServiceRequest), written without the OTel SDK.

Ids are lowercase hex (16 bytes for a trace, 8 for a span), times are Unix nanoseconds as decimal
strings, 64-bit integers are strings, enums are their integer values — as the OTLP JSON mapping
says. Ids are derived, not random: the same session always exports to the same trace.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ulid import ULID

from metis_core.events.envelope import Event
from metis_core.ids import SESSION_PREFIX

SPAN_KIND_INTERNAL = 1
SPAN_KIND_CLIENT = 3
STATUS_CODE_UNSET = 0
STATUS_CODE_ERROR = 2

AttributeValue = str | bool | int | float | list[str] | list[int] | list[float] | list[bool]


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def trace_id_for_session(session_id: str) -> str:
    """A metis session id (`sess_<ULID>`) is 128 bits already: its ULID bytes are the trace id, so
    the trace id reads back as the session. Any other id is hashed (SHA-256, first 16 bytes)."""
    if session_id.startswith(SESSION_PREFIX):
        try:
            return ULID.from_str(session_id[len(SESSION_PREFIX):]).bytes.hex()
        except ValueError:
            pass
    return _digest(f"metis.session:{session_id}").hex()[:32]


def span_id_for_event(event_id: str) -> str:
    """The first 8 bytes of SHA-256 of the opening event's id (never all zero in practice)."""
    span_id = _digest(f"metis.event:{event_id}").hex()[:16]
    return span_id if span_id != "0" * 16 else "0" * 15 + "1"


def unix_nanos(event: Event) -> str:
    return str(event.timestamp_us * 1000)


def any_value(value: AttributeValue) -> dict[str, Any]:
    """One OTLP AnyValue. bool is checked before int (a bool is an int in Python)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    return {"arrayValue": {"values": [any_value(item) for item in value]}}


def attribute_list(attributes: Mapping[str, AttributeValue | None]) -> list[dict[str, Any]]:
    """KeyValue list in insertion order; None values are left out (OTel has no null attribute)."""
    return [{"key": key, "value": any_value(value)} for key, value in attributes.items() if value is not None]


def is_attribute_value(value: Any) -> bool:
    """A scalar, or a list of scalars of one type: what an OTel attribute can hold."""
    if isinstance(value, str | bool | int | float):
        return True
    if isinstance(value, list) and value:
        kinds = {type(item) for item in value}
        return len(kinds) == 1 and kinds <= {str, bool, int, float}
    return False
