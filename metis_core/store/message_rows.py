"""A `Message` to a `messages` row and back, fast enough to load 10,000 messages well under 0.5 s.

Rows at the current message schema are rebuilt as one JSON document per message and validated
with `Message.model_validate_json` (no intermediate dicts); older rows go through
`migrate_message_dict` first. This module writes no SQL transactions; `sessions.py` does.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache
from math import isfinite
from typing import Any

import orjson
from pydantic import TypeAdapter
from pydantic_core import SchemaSerializer

from metis_core.messages import SCHEMA_VERSION as MESSAGE_SCHEMA_VERSION
from metis_core.messages import ContentBlock, Message, MessageMetadata, MessageStatus, Role, TextBlock, ToolUseBlock
from metis_core.messages.metadata import RoutingDecisionRecord, RoutingMode, Usage
from metis_core.messages.migrations import migrate_message_dict
from metis_core.store.records import to_us

_JSON_COLUMNS = {"content", "metadata"}
_ROLE_TEXT = {role: role.value for role in Role}
_STATUS_TEXT = {status: status.value for status in MessageStatus}
_MODE_TEXT = {mode: mode.value for mode in RoutingMode}
"""Enum member -> its text: a dict lookup, where `.value` goes through the enum's Python descriptor."""
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@cache
def _content_serializer() -> SchemaSerializer:
    """The serializer of `Message.content`'s type, built on first use (a schema build at import costs
    every process that never writes a message)."""
    return TypeAdapter(list[ContentBlock]).serializer


_METADATA_SERIALIZER = MessageMetadata.__pydantic_serializer__
_DEFAULT_METADATA = MessageMetadata()
_DEFAULT_METADATA_FIELDS = dict(_DEFAULT_METADATA.__dict__)
_DEFAULT_METADATA_JSON = orjson.dumps(_METADATA_SERIALIZER.to_python(_DEFAULT_METADATA, mode="json")).decode()
"""The metadata column of a message whose metadata is all defaults (most of a request's history: its
system and user messages), dumped once."""


def _metadata_json(metadata: MessageMetadata) -> str:
    """The metadata column: the dump of an all-defaults metadata (its fields equal to the defaults, no
    extra field, the class itself) is always the same text, made once; a plain one is built directly
    (`plain_metadata_dump`); any other is dumped by the model's serializer."""
    if (
        type(metadata) is MessageMetadata
        and not metadata.__pydantic_extra__
        and metadata.__dict__ == _DEFAULT_METADATA_FIELDS
    ):
        return _DEFAULT_METADATA_JSON
    dump = plain_metadata_dump(metadata)
    if dump is None:
        dump = _METADATA_SERIALIZER.to_python(metadata, mode="json")
    return orjson.dumps(dump).decode()


def message_row(message: Message) -> tuple[str, str, str, str, str, int, int]:
    """(id, session_id, role, content_json, metadata_json, created_at_us, schema_version).

    The two JSON columns are each dumped by their own field type's serializer, then orjson: what
    `message.model_dump(mode="json", include={"content", "metadata"})` gives for them, without the
    message-level dump's include filter and Python wrapper (~20 % fewer instructions for a gateway
    call's three messages; `message_row_general` is that path, and tests hold the two equal). An
    all-defaults metadata column is a constant (`_metadata_json`); plain text and tool-use content and
    plain metadata are built as the serializers would build them (`plain_content_dump`,
    `plain_metadata_dump`)."""
    fields = message.__dict__  # the model's storage: one lookup, not five through BaseModel's __getattr__ hook
    content = plain_content_dump(fields["content"])
    if content is None:
        content = _content_serializer().to_python(fields["content"], mode="json")
    created = fields["created_at"] - _EPOCH  # `to_us`, inlined: a call into an interpreted module per message
    return (
        fields["id"],
        fields["session_id"],
        _ROLE_TEXT[fields["role"]],
        orjson.dumps(content).decode(),
        _metadata_json(fields["metadata"]),
        (created.days * 86_400 + created.seconds) * 1_000_000 + created.microseconds,
        fields["schema_version"],
    )


# --- the plain dumps: what the serializers give, built directly for the values a gateway call stores ---
#
# pydantic's JSON-mode dump of a content list or a metadata costs ~8,000 and ~34,000 instructions (each
# text block calls its `citations` field's exclude_if, a Python function; Usage's cost a field serializer);
# the record writer dumps three messages a call. Built here, it is the same dict, key for key and in the
# same order, whenever every value is plain: exact types (str, int, float, bool, None; the models
# themselves, not subclasses; enums of their own class), and JSON containers of those. Anything else
# (another block type, citations, an extra field of another kind, a subclass) goes to the serializer.
# tests/store/test_message_row_paths.py holds both to the serializer's dump, byte for byte.

_METADATA_FIELDS = ("model", "provider", "routing", "usage", "parent_tool_use_id", "status", "stop_reason",
                    "provider_raw", "user_id", "team_id", "tool_input_violations", "critical_blocks")
_USAGE_FIELDS = ("input_tokens", "output_tokens", "cached_input_tokens", "cache_creation_input_tokens",
                 "reasoning_tokens", "cost_usd", "pricing_version", "latency_ms", "details")
_ROUTING_FIELDS = ("mode", "chosen_model", "reason", "rule_name", "confidence", "alternatives_considered")
_PLAIN_DUMPS = (
    tuple(MessageMetadata.model_fields) == _METADATA_FIELDS
    and tuple(Usage.model_fields) == _USAGE_FIELDS
    and tuple(RoutingDecisionRecord.model_fields) == _ROUTING_FIELDS
    and tuple(TextBlock.model_fields) == ("type", "text", "citations")
    and tuple(ToolUseBlock.model_fields) == ("type", "id", "name", "input")
)
"""The models are still the ones these dumps were written for; if a field is added, moved or renamed
the plain dumps stand down (every dump goes to the serializer) until they are updated."""


def _plain(value: object) -> bool:
    """A JSON value the JSON-mode dump of an `Any` field returns as it is: exact str, int, finite float,
    bool, None, and dicts (str keys) and lists of those."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is float:  # inf and nan: the serializer makes them None (then null, as orjson writes them)
        return isfinite(value)  # type: ignore[arg-type]
    if kind is dict:
        for key, item in value.items():  # type: ignore[attr-defined]  # noqa: SIM110 - no generator per value
            if type(key) is not str or not _plain(item):
                return False
        return True
    if kind is list:
        for item in value:  # type: ignore[attr-defined]  # noqa: SIM110
            if not _plain(item):
                return False
        return True
    return False


def _plain_float(value: object) -> bool:
    return type(value) is float and isfinite(value)


def _text_or_none(value: object) -> bool:
    return value is None or type(value) is str


def plain_content_dump(blocks: list[ContentBlock]) -> list[dict[str, Any]] | None:
    """`list[ContentBlock]`'s JSON-mode dump for text blocks without citations and tool uses with a
    plain input; None for any other content (the serializer dumps it)."""
    if not _PLAIN_DUMPS:
        return None
    dumped: list[dict[str, Any]] = []
    for block in blocks:
        kind = type(block)
        fields = block.__dict__
        if kind is TextBlock:
            if fields["citations"] is not None or type(fields["text"]) is not str or fields["type"] != "text":
                return None
            dumped.append({"type": "text", "text": fields["text"]})
        elif kind is ToolUseBlock:
            if (type(fields["id"]) is not str or type(fields["name"]) is not str or fields["type"] != "tool_use"
                    or type(fields["input"]) is not dict or not _plain(fields["input"])):
                return None
            dumped.append({"type": "tool_use", "id": fields["id"], "name": fields["name"], "input": fields["input"]})
        else:
            return None
    return dumped


def plain_metadata_dump(metadata: MessageMetadata) -> dict[str, Any] | None:
    """`MessageMetadata`'s JSON-mode dump when every value is plain (see above); None otherwise."""
    if not _PLAIN_DUMPS or type(metadata) is not MessageMetadata:
        return None
    fields = metadata.__dict__
    status = fields["status"]
    if type(status) is not MessageStatus:
        return None
    for name in ("model", "provider", "parent_tool_use_id", "stop_reason", "user_id", "team_id"):
        if not _text_or_none(fields[name]):
            return None
    routing = _routing_dump(fields["routing"])
    usage = _usage_dump(fields["usage"])
    if routing is False or usage is False:
        return None
    provider_raw, violations = fields["provider_raw"], fields["tool_input_violations"]
    critical = fields["critical_blocks"]
    if not (provider_raw is None or (type(provider_raw) is dict and _plain(provider_raw))):
        return None
    if not (violations is None or (type(violations) is dict and _plain(violations))):
        return None
    if not (critical is None or (type(critical) is list and _plain(critical))):
        return None
    dump: dict[str, Any] = {
        "model": fields["model"], "provider": fields["provider"], "routing": routing, "usage": usage,
        "parent_tool_use_id": fields["parent_tool_use_id"], "status": _STATUS_TEXT[status],
        "stop_reason": fields["stop_reason"], "provider_raw": provider_raw, "user_id": fields["user_id"],
        "team_id": fields["team_id"], "tool_input_violations": violations, "critical_blocks": critical,
    }  # fmt: skip
    extra = metadata.__pydantic_extra__
    if extra:
        for name, value in extra.items():
            if not _plain(value):
                return None
            dump[name] = value
    return dump


def _routing_dump(routing: RoutingDecisionRecord | None) -> dict[str, Any] | bool | None:
    """The routing record's dump; None for none; False when not plain."""
    if routing is None:
        return None
    if type(routing) is not RoutingDecisionRecord or routing.__pydantic_extra__:
        return False
    fields = routing.__dict__
    mode, confidence, alternatives = fields["mode"], fields["confidence"], fields["alternatives_considered"]
    if (type(mode) is not RoutingMode or type(fields["chosen_model"]) is not str or type(fields["reason"]) is not str
            or not _text_or_none(fields["rule_name"]) or not (confidence is None or _plain_float(confidence))
            or type(alternatives) is not list or not _plain(alternatives)):
        return False
    return {"mode": _MODE_TEXT[mode], "chosen_model": fields["chosen_model"], "reason": fields["reason"],
            "rule_name": fields["rule_name"], "confidence": confidence, "alternatives_considered": alternatives}


def _usage_dump(usage: Usage | None) -> dict[str, Any] | bool | None:
    """Usage's dump (its cost as `Usage._decimal_as_string` writes it); None for none; False when not plain."""
    if usage is None:
        return None
    if type(usage) is not Usage or usage.__pydantic_extra__ or usage.details is not None:
        return False  # detail counts: the general dump writes them
    fields = usage.__dict__
    cost = fields["cost_usd"]
    for name in ("input_tokens", "output_tokens", "cached_input_tokens", "cache_creation_input_tokens",
                 "reasoning_tokens", "latency_ms"):
        if type(fields[name]) is not int:
            return False
    if not (cost is None or type(cost) is Decimal) or not _text_or_none(fields["pricing_version"]):
        return False
    return {
        "input_tokens": fields["input_tokens"], "output_tokens": fields["output_tokens"],
        "cached_input_tokens": fields["cached_input_tokens"],
        "cache_creation_input_tokens": fields["cache_creation_input_tokens"],
        "reasoning_tokens": fields["reasoning_tokens"], "cost_usd": None if cost is None else format(cost, "f"),
        "pricing_version": fields["pricing_version"], "latency_ms": fields["latency_ms"],
    }  # fmt: skip


def message_row_general(message: Message) -> tuple[str, str, str, str, str, int, int]:
    """`message_row` through the message's own dump: the path it is held to (tests)."""
    # Only the two columns stored as JSON: the other fields' serializers (created_at's strftime) are
    # Python code, and their values are taken from the message as they are.
    data = message.model_dump(mode="json", include=_JSON_COLUMNS)
    return (
        message.id,
        message.session_id,
        message.role.value,
        orjson.dumps(data["content"]).decode(),
        orjson.dumps(data["metadata"]).decode(),
        to_us(message.created_at),
        message.schema_version,
    )


def _current_row_json(row: tuple[Any, ...]) -> bytes:
    mid, sid, role, content, metadata, created, version = row
    return b"".join(
        (
            b'{"id":',
            orjson.dumps(mid),
            b',"session_id":',
            orjson.dumps(sid),
            b',"role":',
            orjson.dumps(role),
            b',"content":',
            content.encode(),
            b',"metadata":',
            metadata.encode(),
            b',"created_at":"',
            created.encode(),
            b'","schema_version":',
            str(version).encode(),
            b"}",
        )
    )


def message_from_row(row: tuple[Any, ...]) -> Message:
    mid, sid, role, content, metadata, created, version = row
    if version == MESSAGE_SCHEMA_VERSION:
        return Message.model_validate_json(_current_row_json(row))
    data = {
        "id": mid,
        "session_id": sid,
        "role": role,
        "content": orjson.loads(content),
        "metadata": orjson.loads(metadata),
        "created_at": created,
        "schema_version": version,
    }
    return Message.model_validate(migrate_message_dict(data))


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while bulk-loading rows and messages.

    Fetching and validating ~100k small objects triggers repeated full collections that,
    measured, take a 10,000-message load from ~0.15 s to ~0.4 s; none of these objects form cycles.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def messages_from_rows(rows: Iterable[tuple[Any, ...]]) -> list[Message]:
    with gc_paused():
        return [message_from_row(row) for row in rows]
