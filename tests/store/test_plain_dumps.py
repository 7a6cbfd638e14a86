"""The plain dumps of a message's content and metadata (`plain_content_dump`, `plain_metadata_dump`)
are the models' own JSON-mode dumps, key for key, in order, byte for byte once encoded; anything they
do not know how to build exactly they refuse (None), and the serializer dumps it."""

from __future__ import annotations

import math
import random
from decimal import Decimal
from typing import Any

import orjson
import pytest
from pydantic import TypeAdapter

from metis_core.messages import ContentBlock, MessageMetadata, MessageStatus, TextBlock, ToolUseBlock
from metis_core.messages.blocks import ImageBlock, ImageSource, ThinkingBlock
from metis_core.messages.hosted_blocks import Citation
from metis_core.messages.metadata import RoutingDecisionRecord, RoutingMode, Usage
from metis_core.store.message_rows import plain_content_dump, plain_metadata_dump

CONTENT = TypeAdapter(list[ContentBlock]).serializer
METADATA = MessageMetadata.__pydantic_serializer__


def plain_value(draw: random.Random, depth: int = 0) -> Any:
    kinds = ["str", "int", "float", "bool", "none"] + (["dict", "list"] if depth < 3 else [])
    kind = draw.choice(kinds)
    if kind == "str":
        return draw.choice(["", "a", "ünï ✓ \U0001f600", "\u2028\x00\"\\", "x" * 40])
    if kind == "int":
        return draw.choice([0, -1, 2**53, 2**62, 7])
    if kind == "float":
        return draw.choice([0.1, -0.0, 1e300, 1e-7, 3.0, 2.5e-308])
    if kind == "bool":
        return draw.choice([True, False])
    if kind == "none":
        return None
    if kind == "dict":
        return {f"k{i}": plain_value(draw, depth + 1) for i in range(draw.randint(0, 3))}
    return [plain_value(draw, depth + 1) for _ in range(draw.randint(0, 3))]


def metadata(draw: random.Random) -> MessageMetadata:
    values: dict[str, Any] = {
        "model": draw.choice([None, "anthropic:claude-haiku-4-5"]), "provider": draw.choice([None, "anthropic"]),
        "routing": draw.choice([None, RoutingDecisionRecord(
            mode=draw.choice(list(RoutingMode)), chosen_model="m", reason="asked", rule_name=draw.choice([None, "r"]),
            confidence=draw.choice([None, 0.5, 1e-9]), alternatives_considered=draw.choice([[], ["a", "b"]]))]),
        "usage": draw.choice([None, Usage(
            input_tokens=draw.randint(0, 10**6), output_tokens=3, cached_input_tokens=draw.choice([0, 5]),
            cost_usd=draw.choice([None, Decimal("0.000123"), Decimal("1E-9"), Decimal("0"), Decimal("12.5000")]),
            pricing_version=draw.choice([None, "2026-01"]), latency_ms=draw.randint(0, 999))]),
        "parent_tool_use_id": draw.choice([None, "tu_1"]), "status": draw.choice(list(MessageStatus)),
        "stop_reason": draw.choice([None, "end_turn", "tool_use"]),
        "provider_raw": draw.choice([None, {"id": "msg_1", "n": plain_value(draw)}]),
        "user_id": draw.choice([None, "usr_1"]), "team_id": draw.choice([None, "team_1"]),
        "tool_input_violations": draw.choice([None, {}, {"tu_1": ["bad", "worse"]}]),
        "critical_blocks": draw.choice([None, [], [0, 2]]),
    }  # fmt: skip
    for index in range(draw.randint(0, 3)):
        values[f"extra_{index}"] = plain_value(draw)
    return MessageMetadata(**values)


def same(fast: Any, general: Any) -> bool:
    return orjson.dumps(fast) == orjson.dumps(general) and repr(fast) == repr(general)


@pytest.mark.parametrize("seed", range(300))
def test_plain_metadata_dump_is_the_serializers(seed: int) -> None:
    meta = metadata(random.Random(seed))
    fast = plain_metadata_dump(meta)
    assert fast is not None
    assert same(fast, METADATA.to_python(meta, mode="json"))


@pytest.mark.parametrize("seed", range(100))
def test_plain_content_dump_is_the_serializers(seed: int) -> None:
    draw = random.Random(seed)
    blocks: list[Any] = []
    for index in range(draw.randint(0, 4)):
        if draw.random() < 0.5:
            blocks.append(TextBlock(text=draw.choice(["", "hi", "ünï \U0001f600", "\u2028"])))
        else:
            blocks.append(ToolUseBlock(id=f"tu_{index}", name="calc",
                                       input={f"k{i}": plain_value(draw) for i in range(draw.randint(0, 4))}))
    fast = plain_content_dump(blocks)
    assert fast is not None
    assert same(fast, CONTENT.to_python(blocks, mode="json"))


class _OwnMetadata(MessageMetadata):
    pass


class _OwnUsage(Usage):
    pass


NOT_PLAIN_METADATA = [
    _OwnMetadata(),
    MessageMetadata(provider_raw={"when": (1, 2)}),  # a tuple: the serializer makes it a list
    MessageMetadata(provider_raw={"cost": Decimal("1.5")}),
    MessageMetadata.model_validate({"since": Decimal("2")}),  # an extra field of another kind
    MessageMetadata(usage=_OwnUsage(input_tokens=1)),
    MessageMetadata.model_construct(usage=Usage.model_construct(input_tokens=True)),  # a bool where an int goes
    MessageMetadata.model_construct(routing=RoutingDecisionRecord.model_construct(
        mode=RoutingMode.DEFAULT, chosen_model="m", reason="r", confidence=1, alternatives_considered=[])),
    MessageMetadata.model_construct(status="complete"),  # type: ignore[arg-type]  # a str, not the enum
    MessageMetadata(provider_raw={"x": math.inf}),  # the serializer makes inf and nan None
    MessageMetadata.model_validate({"nan": math.nan}),
    MessageMetadata(routing=RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model="m", reason="r",
                                                  confidence=math.nan)),
]


@pytest.mark.parametrize("index", range(len(NOT_PLAIN_METADATA)))
def test_metadata_the_plain_dump_cannot_build_exactly_goes_to_the_serializer(index: int) -> None:
    assert plain_metadata_dump(NOT_PLAIN_METADATA[index]) is None


@pytest.mark.parametrize("blocks", [
    [TextBlock(text="cited", citations=[Citation(url="https://example.invalid")])],
    [ImageBlock(source=ImageSource(kind="url", data="http://x"), media_type="image/png")],
    [TextBlock(text="a"), ThinkingBlock(text="t", signature="s")],
    [ToolUseBlock(id="tu_1", name="n", input={"t": (1, 2)})],
    [ToolUseBlock.model_construct(id="tu_1", name="n", input={1: "int key"})],  # type: ignore[dict-item]
    [ToolUseBlock(id="tu_1", name="n", input={"x": [1.0, -math.inf]})],
])
def test_content_the_plain_dump_cannot_build_exactly_goes_to_the_serializer(blocks: list[Any]) -> None:
    assert plain_content_dump(blocks) is None
