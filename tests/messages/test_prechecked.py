"""Each prechecked builder gives exactly what its constructor call gives: fields, defaults, fields_set, extras.

The builders skip pydantic's validation of values their callers already checked (the gateway's hot
path); these tests hold every builder to the validating constructor it stands for, and the Message
builder to the same §5 check.
"""

from __future__ import annotations

from datetime import UTC
from decimal import Decimal
from typing import Any

import pytest
from prechecked_reference import behaviour
from pydantic import BaseModel

from metis_core.errors import MessageInvariantError
from metis_core.messages import (
    BlockOrigin,
    Citation,
    ImageBlock,
    ImageSource,
    Message,
    MessageMetadata,
    MessageStatus,
    Role,
    RoutingDecisionRecord,
    RoutingMode,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    prechecked,
)
from metis_core.messages.metadata import MAX_TOKEN_COUNT


def state(value: Any) -> Any:
    """Everything a model instance holds, nested models included: what equality alone would not show."""
    if isinstance(value, BaseModel):
        return (type(value).__name__, {k: state(v) for k, v in value.__dict__.items()},
                sorted(value.model_fields_set), value.__pydantic_extra__, value.__pydantic_private__,
                list(value.__dict__))
    if isinstance(value, list):
        return [state(v) for v in value]
    if isinstance(value, dict):
        return {k: state(v) for k, v in value.items()}
    return value


def same(built: BaseModel, reference: BaseModel) -> None:
    assert built == reference
    assert state(built) == state(reference)
    assert built.model_dump_json() == reference.model_dump_json()
    assert behaviour(built) == behaviour(reference)  # dumps, copies, pickles, equality, hashing


@pytest.mark.parametrize("text", ["", "hello", "ünïcödé \n"])
def test_text_block_is_the_constructors(text: str) -> None:
    same(prechecked.text_block(text), TextBlock(text=text))


@pytest.mark.parametrize("citations", [None, [], [Citation(url="https://a.example", payload={"type": "x"})]])
def test_cited_text_block_is_the_constructors(citations: list[Citation] | None) -> None:
    same(prechecked.cited_text_block("t", citations), TextBlock(text="t", citations=citations))


def test_canonical_blocks_are_instances_of_the_block_classes_themselves() -> None:
    class Shouting(TextBlock):
        pass

    assert prechecked.canonical_blocks([TextBlock(text="a"), ToolUseBlock(id="tu_1", name="f", input={})])
    assert prechecked.canonical_blocks([])
    assert not prechecked.canonical_blocks([Shouting(text="A")])
    assert not prechecked.canonical_blocks([{"type": "text", "text": "a"}])


@pytest.mark.parametrize("mode", list(RoutingMode))
def test_routing_record_is_the_constructors(mode: RoutingMode) -> None:
    built = prechecked.routing_record(mode, "anthropic:m", "why")
    same(built, RoutingDecisionRecord(mode=mode, chosen_model="anthropic:m", reason="why"))
    assert built.alternatives_considered is not prechecked.routing_record(mode, "a:b", "c").alternatives_considered


@pytest.mark.parametrize(("signature", "origin"), [(None, None), ("sig", BlockOrigin(provider="anthropic",
                                                                                     api="messages", model="m"))])
def test_thinking_block_is_the_constructors(signature: str | None, origin: BlockOrigin | None) -> None:
    same(prechecked.thinking_block("hm", signature, origin),
         ThinkingBlock(text="hm", signature=signature, origin=origin))


def test_tool_use_block_is_the_constructors() -> None:
    same(prechecked.tool_use_block("tu_1", "get", {"a": [1, {"b": None}]}),
         ToolUseBlock(id="tu_1", name="get", input={"a": [1, {"b": None}]}))


@pytest.mark.parametrize("counts", [(0, 0, 0, 0), (12, 7, 3, 2), (-1, MAX_TOKEN_COUNT, 0, 5)])
def test_usage_is_the_constructors(counts: tuple[int, int, int, int]) -> None:
    names = ("input_tokens", "output_tokens", "cached_input_tokens", "cache_creation_input_tokens")
    same(prechecked.usage(*counts), Usage(**dict(zip(names, counts, strict=True))))
    same(prechecked.usage(*counts, reasoning_tokens=0), Usage(**dict(zip(names, counts, strict=True)),
                                                              reasoning_tokens=0))
    same(prechecked.usage(*counts, 9), Usage(**dict(zip(names, counts, strict=True)), reasoning_tokens=9))


@pytest.mark.parametrize("value", [True, 2.0, "3", None, MAX_TOKEN_COUNT + 1])
def test_only_exact_ints_in_range_count_as_token_counts(value: object) -> None:
    assert not prechecked.token_count(value)


@pytest.mark.parametrize("cost", [None, (Decimal("0.0012"), "2026-01-01")])
def test_price_usage_is_attribute_assignment(cost: tuple[Decimal | None, str | None] | None) -> None:
    built, reference = prechecked.usage(3, 4, 0, 0), Usage(input_tokens=3, output_tokens=4, cached_input_tokens=0,
                                                             cache_creation_input_tokens=0)
    prechecked.price_usage(built, 17, cost)
    reference.latency_ms = 17
    if cost is not None:
        reference.cost_usd, reference.pricing_version = cost
    same(built, reference)


def test_the_metadata_defaults_are_the_models() -> None:
    assert list(prechecked._METADATA_DEFAULTS) == list(MessageMetadata.model_fields)
    for name, field in MessageMetadata.model_fields.items():
        assert prechecked._METADATA_DEFAULTS[name] == field.get_default(call_default_factory=True), name


ROUTING = RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model="anthropic:m", reason="r")
METADATA_CALLS: list[dict[str, Any]] = [
    {},
    {"provider_raw": None},
    {"provider_raw": {"anthropic": {"cache_control": {"type": "ephemeral"}}}},
    {"parent_tool_use_id": "tu_1", "provider_raw": None},
    {"tool_input_violations": None, "model": "anthropic:m", "provider": "anthropic", "routing": ROUTING,
     "usage": Usage(input_tokens=1), "status": MessageStatus.PARTIAL, "stop_reason": "tool_use",
     "provider_raw": {"id": "msg_1"}},
]


@pytest.mark.parametrize("fields", METADATA_CALLS)
def test_metadata_is_the_constructors(fields: dict[str, Any]) -> None:
    same(prechecked.metadata(**fields), MessageMetadata(**fields))


@pytest.mark.parametrize("usage", [Usage(), Usage(input_tokens=3, output_tokens=4, cost_usd=Decimal("0.1"))])
@pytest.mark.parametrize("status", list(MessageStatus))
@pytest.mark.parametrize(("stop_reason", "provider_raw", "violations"), [
    (None, None, None), ("tool_use", {"id": "msg_1", "skipped_block_types": ["x"]}, {"tu_1": ["bad"]}),
])
def test_answer_metadata_is_the_constructors(usage: Usage, status: MessageStatus, stop_reason: str | None,
                                             provider_raw: dict[str, Any] | None,
                                             violations: dict[str, list[str]] | None) -> None:
    built = prechecked.answer_metadata("anthropic:m", "anthropic", ROUTING, usage, status, stop_reason, provider_raw,
                                       violations)
    same(built, MessageMetadata(model="anthropic:m", provider="anthropic", routing=ROUTING, usage=usage, status=status,
                                stop_reason=stop_reason, provider_raw=provider_raw, tool_input_violations=violations))
    assert built.routing is ROUTING and built.usage is usage and built.provider_raw is provider_raw  # kept, not copied


def test_default_metadata_is_the_constructors() -> None:
    built = prechecked.default_metadata()
    same(built, MessageMetadata())
    same(built, prechecked.metadata())
    assert built.__dict__ is not prechecked._METADATA_DEFAULTS  # its own dict: setting a field changes only it
    built.stop_reason = "end_turn"
    assert prechecked.default_metadata().stop_reason is None


def test_metadata_refuses_undeclared_fields() -> None:
    with pytest.raises(TypeError, match="shoe_size"):
        prechecked.metadata(shoe_size=3)


MESSAGES: list[tuple[Role, list[Any], dict[str, Any]]] = [
    (Role.USER, [TextBlock(text="hi"), ImageBlock(source=ImageSource(kind="url", data="u"), media_type="image/png")],
     {}),
    (Role.SYSTEM, [TextBlock(text="terse")], {"provider_raw": None}),
    (Role.TOOL, [ToolResultBlock(tool_use_id="tu_1", content=[TextBlock(text="ok")])], {"parent_tool_use_id": "tu_1"}),
    (Role.ASSISTANT, [TextBlock(text="a"), ToolUseBlock(id="tu_2", name="f", input={})],
     {"model": "anthropic:m", "provider": "anthropic", "routing": ROUTING, "usage": Usage()}),
    (Role.ASSISTANT, [], {"status": MessageStatus.PARTIAL}),
]


@pytest.mark.parametrize(("role", "content", "fields"), MESSAGES)
@pytest.mark.parametrize("message_id", [None, "msg_given"])
def test_message_is_the_constructors(role: Role, content: list[Any], fields: dict[str, Any],
                                     message_id: str | None) -> None:
    built = prechecked.message(role, "ses_1", list(content), prechecked.metadata(**fields), message_id)
    extra = {} if message_id is None else {"id": message_id}
    reference = Message(role=role, session_id="ses_1", content=list(content), metadata=MessageMetadata(**fields),
                        **extra)
    assert built.created_at.tzinfo is UTC
    if message_id is None:
        assert built.id != reference.id
        reference = reference.model_copy(update={"id": built.id})
        reference.__pydantic_fields_set__.discard("id")
    reference.__dict__["created_at"] = built.created_at
    same(built, reference)


ANSWER_FIELDS = {"model": "anthropic:m", "provider": "anthropic", "routing": ROUTING, "usage": Usage()}


@pytest.mark.parametrize("status", list(MessageStatus))
def test_answer_is_the_constructors(status: MessageStatus) -> None:
    content = [TextBlock(text="a"), ToolUseBlock(id="tu_2", name="f", input={})]
    assert prechecked.answer_blocks(content)
    fields = {**ANSWER_FIELDS, "status": status}
    built = prechecked.answer("ses_1", content, prechecked.metadata(**fields), "msg_1")
    reference = Message(id="msg_1", role=Role.ASSISTANT, session_id="ses_1", content=list(content),
                        metadata=MessageMetadata(**fields))
    assert built.created_at.tzinfo is UTC and built.content is content
    reference.__dict__["created_at"] = built.created_at
    same(built, reference)


def test_answer_blocks_are_those_the_invariants_allow_an_assistant_with_their_names_and_ids() -> None:
    from metis_core.messages.invariants import ALLOWED_BLOCKS

    assert {cls.model_fields["type"].default for cls in prechecked._ANSWER_CLASSES} == ALLOWED_BLOCKS["assistant"]

    class Shouting(TextBlock):
        pass

    refused = [[ToolResultBlock(tool_use_id="tu_1", content=[])], [Shouting(text="A")], [{"type": "text"}],
               [ToolUseBlock(id="", name="f", input={})], [ToolUseBlock(id="tu_1", name="", input={})]]
    for content in refused:  # each of them is what the constructor's §5 check refuses, or not a block at all
        assert not prechecked.answer_blocks([TextBlock(text="ok"), *content])
    assert not prechecked.answer_blocks([])  # a complete answer without content breaks §5.1
    assert prechecked.answer_blocks([ThinkingBlock(text="hm")])


@pytest.mark.parametrize("role", [Role.USER, Role.SYSTEM])
@pytest.mark.parametrize("session_id", ["", "ses_1"])
def test_text_message_is_the_constructors(role: Role, session_id: str) -> None:
    built = prechecked.text_message(role, "hello", session_id)
    reference = Message(role=role, session_id=session_id, content=[TextBlock(text="hello")])
    assert built.created_at.tzinfo is UTC and built.id != reference.id
    reference.__dict__.update(id=built.id, created_at=built.created_at)
    same(built, reference)


@pytest.mark.parametrize(("role", "content", "fields"), [
    (Role.USER, [], {}),
    (Role.USER, [ToolUseBlock(id="tu_1", name="f", input={})], {}),
    (Role.ASSISTANT, [TextBlock(text="a")], {}),
    (Role.TOOL, [ToolResultBlock(tool_use_id="tu_1")], {"parent_tool_use_id": "tu_9"}),
])
def test_a_complete_message_breaking_the_invariants_is_refused_as_by_the_constructor(
    role: Role, content: list[Any], fields: dict[str, Any]
) -> None:
    with pytest.raises(MessageInvariantError) as built:
        prechecked.message(role, "", list(content), prechecked.metadata(**fields), "msg_1")
    with pytest.raises(MessageInvariantError) as reference:
        Message(id="msg_1", role=role, content=list(content), metadata=MessageMetadata(**fields))
    assert str(built.value) == str(reference.value)


def test_the_validating_stand_ins_cover_every_builder() -> None:
    from prechecked_reference import VALIDATING

    builders = {name for name, value in vars(prechecked).items() if not name.startswith("_")
                and callable(value) and getattr(value, "__module__", "") == prechecked.__name__}
    assert builders == set(vars(VALIDATING))


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize("content", [
    [], [TextBlock(text="hi")], [TextBlock(text="")], [TextBlock(text="a"), TextBlock(text="b")],
    [ImageBlock(source=ImageSource(kind="url", data="u"), media_type="image/png")],
    [ToolUseBlock(id="tu_1", name="f", input={})], [ToolUseBlock(id="", name="f", input={})],
    [ToolResultBlock(tool_use_id="tu_1")], [ThinkingBlock(text="t")],
])
@pytest.mark.parametrize("fields", [{}, {"parent_tool_use_id": "tu_1"}, {"model": "anthropic:m", "provider":
                                    "anthropic", "routing": ROUTING, "usage": Usage()}])
def test_the_one_text_turn_fast_path_skips_only_checks_that_find_nothing(
    role: Role, content: list[Any], fields: dict[str, Any]
) -> None:
    # `message` skips the §5 check for a user or system message of one text block: over every role
    # and these contents, it refuses exactly what the general check (message_violations) faults.
    from metis_core.messages.invariants import message_violations
    from metis_core.messages.prechecked import _one_text_turn

    reference = Message.model_construct(role=role, content=list(content), metadata=MessageMetadata(**fields))
    faults = message_violations(reference)
    if _one_text_turn(role, list(content)):
        assert faults == []
    try:
        prechecked.message(role, "", list(content), prechecked.metadata(**fields), "msg_1")
    except MessageInvariantError:
        assert faults
    else:
        assert not faults
