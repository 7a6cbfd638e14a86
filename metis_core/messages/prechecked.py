"""Canonical values built from parts their caller has already checked, without pydantic validating them again.

A request reader or response parser builds a few blocks and a Message per gateway call from values it
has just type-checked; pydantic re-validating each field (and calling each default factory from Rust)
costs more than the translation itself. Each builder here gives an object equal to its constructor
call's (fields, defaults, fields_set, and how it dumps, copies and pickles; tests/messages/
test_prechecked.py holds them to it), and `message` runs the §5 check a COMPLETE Message gets.
Callers pass exact field types only (str, dict, canonical block and metadata instances, enum
members), and the containers they hand over are kept, not copied; anything else goes through the
constructors.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Final

from pydantic import BaseModel

from metis_core.ids import new_ulid
from metis_core.messages.blocks import (
    BLOCK_CLASSES,
    BlockOrigin,
    Citation,
    ImageBlock,
    ProviderToolCallBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from metis_core.messages.invariants import check_message
from metis_core.messages.message import Message, Role
from metis_core.messages.metadata import (
    MAX_TOKEN_COUNT,
    MessageMetadata,
    MessageStatus,
    RoutingDecisionRecord,
    RoutingMode,
    Usage,
)
from metis_core.messages.schema_version import SCHEMA_VERSION

_ASSISTANT: Final = Role.ASSISTANT
_COMPLETE: Final = MessageStatus.COMPLETE  # bound once: a `MessageStatus.X` lookup is slow on Python 3.11
_new: Final = object.__new__
_set_dict: Final = BaseModel.__dict__["__dict__"].__set__
_set_given: Final = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra: Final = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private: Final = BaseModel.__dict__["__pydantic_private__"].__set__
"""The setters of the four slots every pydantic model instance has (bound once: ~0.1 µs less per slot
than object.__setattr__ by name). Each builder below makes its instance as pydantic's own validation
leaves it: `_new(cls)`, then `__dict__` (every field, in declaration order), fields_set, extra and
private set through these; written out in each builder rather than in a shared helper, whose Python
frame was ~600 of the ~6,600 instructions a block cost (bench/results/gateway-history.md)."""


def text_block(text: str) -> TextBlock:
    """`TextBlock(text=text)`."""
    made: TextBlock = _new(TextBlock)
    _set_dict(made, {"type": "text", "text": text, "citations": None})
    _set_given(made, {"text"})
    _set_extra(made, None)
    _set_private(made, None)
    return made


def wire_text_block(value: Any) -> TextBlock:
    """`TextBlock(text=value)` for a value read off the wire: built directly when it is a str, else by
    the constructor (which coerces nothing and names the problem)."""
    return text_block(value) if type(value) is str else TextBlock(text=value)


def cited_text_block(text: str, citations: list[Citation] | None) -> TextBlock:
    """`TextBlock(text=text, citations=citations)`; the list is kept, not copied."""
    made: TextBlock = _new(TextBlock)
    _set_dict(made, {"type": "text", "text": text, "citations": citations})
    _set_given(made, {"text", "citations"})
    _set_extra(made, None)
    _set_private(made, None)
    return made


def tool_use_block(tool_id: str, name: str, tool_input: dict[str, Any]) -> ToolUseBlock:
    """`ToolUseBlock(id=tool_id, name=name, input=tool_input)`; `tool_input` is kept, not copied."""
    made: ToolUseBlock = _new(ToolUseBlock)
    _set_dict(made, {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input})
    _set_given(made, {"id", "name", "input"})
    _set_extra(made, None)
    _set_private(made, None)
    return made


_ROUTING_FIELDS: Final[dict[str, Any]] = {
    "mode": None, "chosen_model": None, "reason": None, "rule_name": None, "confidence": None,
    "alternatives_considered": None,
}  # fmt: skip
"""RoutingDecisionRecord's fields in declaration order (copied and filled in, as `_USAGE_FIELDS`)."""


def routing_record(mode: RoutingMode, chosen_model: str, reason: str) -> RoutingDecisionRecord:
    """`RoutingDecisionRecord(mode=mode, chosen_model=chosen_model, reason=reason)`."""
    fields = _ROUTING_FIELDS.copy()
    fields["mode"] = mode
    fields["chosen_model"] = chosen_model
    fields["reason"] = reason
    fields["alternatives_considered"] = []
    made: RoutingDecisionRecord = _new(RoutingDecisionRecord)
    _set_dict(made, fields)
    _set_given(made, {"mode", "chosen_model", "reason"})
    _set_extra(made, None)
    _set_private(made, None)
    return made


def thinking_block(text: str, signature: str | None, origin: BlockOrigin | None) -> ThinkingBlock:
    """`ThinkingBlock(text=text, signature=signature, origin=origin)`."""
    made: ThinkingBlock = _new(ThinkingBlock)
    _set_dict(made, {"type": "thinking", "text": text, "signature": signature, "origin": origin})
    _set_given(made, {"text", "signature", "origin"})
    _set_extra(made, None)
    _set_private(made, None)
    return made


def token_count(value: object) -> bool:
    """Whether `value` is what a Usage count holds as it is (an exact int within MAX_TOKEN_COUNT)."""
    return type(value) is int and value <= MAX_TOKEN_COUNT


_USAGE_FIELDS: Final[dict[str, Any]] = {
    "input_tokens": 0, "output_tokens": 0, "cached_input_tokens": 0, "cache_creation_input_tokens": 0,
    "reasoning_tokens": 0, "cost_usd": None, "pricing_version": None, "latency_ms": 0,
    "details": None,
}  # fmt: skip
"""Usage's fields in declaration order, copied and filled in by `usage`: a copy of a dict of the same
keys is cheaper than a new dict of twelve entries."""


def usage(input_tokens: int, output_tokens: int, cached_input_tokens: int, cache_creation_input_tokens: int,
          reasoning_tokens: int | None = None) -> Usage:
    """`Usage(input_tokens=..., output_tokens=..., cached_input_tokens=..., cache_creation_input_tokens=...)`, and
    `reasoning_tokens=...` when given; each count must pass `token_count`."""
    given = {"input_tokens", "output_tokens", "cached_input_tokens", "cache_creation_input_tokens"}
    if reasoning_tokens is None:
        reasoning_tokens = 0
    else:
        given.add("reasoning_tokens")
    fields = _USAGE_FIELDS.copy()
    fields["input_tokens"] = input_tokens
    fields["output_tokens"] = output_tokens
    fields["cached_input_tokens"] = cached_input_tokens
    fields["cache_creation_input_tokens"] = cache_creation_input_tokens
    fields["reasoning_tokens"] = reasoning_tokens
    made: Usage = _new(Usage)
    _set_dict(made, fields)
    _set_given(made, given)
    _set_extra(made, None)
    _set_private(made, None)
    return made


def price_usage(usage: Usage, latency_ms: int, cost: tuple[Decimal | None, str | None] | None) -> None:
    """Set latency (and cost and pricing version when `cost` is given) as attribute assignment would."""
    fields, given = usage.__dict__, usage.__pydantic_fields_set__
    fields["latency_ms"] = latency_ms
    given.add("latency_ms")
    if cost is not None:
        fields["cost_usd"], fields["pricing_version"] = cost
        given.update(("cost_usd", "pricing_version"))


_METADATA_DEFAULTS: Final[dict[str, Any]] = {
    "model": None, "provider": None, "routing": None, "usage": None, "parent_tool_use_id": None,
    "status": MessageStatus.COMPLETE, "stop_reason": None, "provider_raw": None, "user_id": None, "team_id": None,
    "tool_input_violations": None, "critical_blocks": None,
}  # fmt: skip
"""MessageMetadata's fields in declaration order, with their defaults (a test holds it to the model)."""
_METADATA_FIELD_COUNT: Final = len(_METADATA_DEFAULTS)


def metadata(**fields: Any) -> MessageMetadata:
    """`MessageMetadata(**fields)`, for declared fields only, each of its exact type (no coercion happens
    here); dicts and lists are kept, not copied."""
    values = {**_METADATA_DEFAULTS, **fields}
    if len(values) != _METADATA_FIELD_COUNT:  # a name outside the defaults added a key
        raise TypeError(f"not MessageMetadata fields: {sorted(fields.keys() - _METADATA_DEFAULTS.keys())}")
    made: MessageMetadata = _new(MessageMetadata)
    _set_dict(made, values)
    _set_given(made, set(fields))
    _set_extra(made, {})
    _set_private(made, None)
    return made


def default_metadata() -> MessageMetadata:
    """`MessageMetadata()`: every field its default, as `metadata()` with no field gives it, without
    building the fields from keywords (a user or system message read from a request usually has this)."""
    made: MessageMetadata = _new(MessageMetadata)
    _set_dict(made, _METADATA_DEFAULTS.copy())
    _set_given(made, set())
    _set_extra(made, {})
    _set_private(made, None)
    return made


_ANSWER_GIVEN: Final = frozenset(("model", "provider", "routing", "usage", "status", "stop_reason", "provider_raw",
                 "tool_input_violations"))


def answer_metadata(model: str, provider: str, routing: RoutingDecisionRecord, usage: Usage, status: MessageStatus,
                    stop_reason: str | None, provider_raw: dict[str, Any] | None,
                    tool_input_violations: dict[str, list[str]] | None) -> MessageMetadata:
    """`metadata(model=..., provider=..., routing=..., usage=..., status=..., stop_reason=..., provider_raw=...,
    tool_input_violations=...)`, what every parsed answer's metadata is, with its eight fields passed by
    position: a call with `**fields` makes a dict only to unpack it."""
    fields = _METADATA_DEFAULTS.copy()  # every key in declaration order: filled in, as `_USAGE_FIELDS`
    fields["model"] = model
    fields["provider"] = provider
    fields["routing"] = routing
    fields["usage"] = usage
    fields["status"] = status
    fields["stop_reason"] = stop_reason
    fields["provider_raw"] = provider_raw
    fields["tool_input_violations"] = tool_input_violations
    made: MessageMetadata = _new(MessageMetadata)
    _set_dict(made, fields)
    _set_given(made, set(_ANSWER_GIVEN))
    _set_extra(made, {})
    _set_private(made, None)
    return made


def canonical_blocks(content: list[Any]) -> bool:
    """Whether every item is an instance of one of the nine block classes themselves (what `message` takes)."""
    classes = BLOCK_CLASSES
    for block in content:  # noqa: SIM110 - not all() over a generator: ~2,000 instructions more for two blocks
        if type(block) not in classes:
            return False
    return True


_MESSAGE_FIELDS: Final[dict[str, Any]] = {
    "id": None, "session_id": None, "role": None, "content": None, "metadata": None, "created_at": None,
    "schema_version": SCHEMA_VERSION,
}  # fmt: skip
"""Message's fields in declaration order (copied and filled in, as `_USAGE_FIELDS`)."""


def message(role: Role, session_id: str, content: list[Any], metadata: MessageMetadata,
            message_id: str | None = None) -> Message:
    """`Message(role=..., session_id=..., content=..., metadata=...)` (and `id=message_id` when given):
    checked against §5 when COMPLETE, as the constructor checks it. `content` holds canonical block
    instances and is kept, not copied."""
    if message_id is None:
        message_id = new_ulid()
        given = {"role", "session_id", "content", "metadata"}
    else:
        given = {"id", "role", "session_id", "content", "metadata"}
    fields = _MESSAGE_FIELDS.copy()
    fields["id"] = message_id
    fields["session_id"] = session_id
    fields["role"] = role
    fields["content"] = content
    fields["metadata"] = metadata
    fields["created_at"] = datetime.now(UTC)  # `utc_now()`, without its frame
    built: Message = _new(Message)
    _set_dict(built, fields)
    _set_given(built, given)
    _set_extra(built, None)
    _set_private(built, None)
    if metadata.status is _COMPLETE and not _one_text_turn(role, content):
        check_message(built)
    return built


_ANSWER_CLASSES: Final = BLOCK_CLASSES - {ImageBlock, ToolResultBlock}
"""The block classes an assistant message may hold (§5.1's ALLOWED_BLOCKS["assistant"]; a test holds them equal)."""


def answer_blocks(content: list[Any]) -> bool:
    """Whether there is a block and every item is an instance of a block class an assistant message may hold,
    each tool call with its id and name and each provider tool call with its name: all the §5 check asks of
    an answer's blocks, in the one pass that checks their classes (what `answer` takes)."""
    if not content:
        return False
    classes = _ANSWER_CLASSES
    for block in content:
        kind = type(block)
        if kind not in classes:
            return False
        if kind is ToolUseBlock:
            if not (block.id and block.name):
                return False
        elif kind is ProviderToolCallBlock and not block.name:
            return False
    return True


def answer(session_id: str, content: list[Any], metadata: MessageMetadata, message_id: str) -> Message:
    """`Message(id=message_id, role=Role.ASSISTANT, session_id=..., content=..., metadata=...)` for content that
    passed `answer_blocks` and metadata from `answer_metadata` (model, provider, routing and usage set): the §5
    check the constructor runs would find nothing in it, so it is not run again. `content` is kept, not copied."""
    fields = _MESSAGE_FIELDS.copy()
    fields["id"] = message_id
    fields["session_id"] = session_id
    fields["role"] = _ASSISTANT
    fields["content"] = content
    fields["metadata"] = metadata
    fields["created_at"] = datetime.now(UTC)
    built: Message = _new(Message)
    _set_dict(built, fields)
    _set_given(built, {"id", "role", "session_id", "content", "metadata"})
    _set_extra(built, None)
    _set_private(built, None)
    return built


def text_message(role: Role, text: str, session_id: str) -> Message:
    """`Message(role=role, session_id=session_id, content=[TextBlock(text=text)])`, as `user_message` and
    `system_message` build it."""
    built = message(role, session_id, [text_block(text)], default_metadata())
    _set_given(built, {"role", "session_id", "content"})
    return built


def _one_text_turn(role: Role, content: list[Any]) -> bool:
    """A user or system message of one text block, which no §5.1/§5.3 rule can fault (text is allowed
    in both, and the content is not empty): `message` skips its check (a named fast path, docs/
    gateway.md "What it costs"; ~7,000 instructions for each such message, two per gateway call)."""
    return len(content) == 1 and type(content[0]) is TextBlock and (role is Role.USER or role is Role.SYSTEM)
