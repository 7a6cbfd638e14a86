"""completed_payload's one-pass block counts match the counts it made with `tool_uses()` and a sum."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from metis_core.agent.call_events import completed_payload
from metis_core.messages import (
    Message,
    MessageMetadata,
    RedactedThinkingBlock,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)

BLOCKS: list[list[Any]] = [
    [TextBlock(text="hi")],
    [],
    [ThinkingBlock(text="t", signature="s"), TextBlock(text="a"), ToolUseBlock(id="tu_1", name="f", input={})],
    [RedactedThinkingBlock(data="x"), ThinkingBlock(text="u"), ToolUseBlock(id="tu_1", name="f", input={}),
     ToolUseBlock(id="tu_2", name="g", input={"a": 1}), TextBlock(text="b")],
]


@pytest.mark.parametrize("content", BLOCKS)
@pytest.mark.parametrize("stop", ["end_turn", "tool_use", "refusal", None])
def test_counts_and_fields(content: list[Any], stop: str | None) -> None:
    meta = MessageMetadata(model="claude-x", provider="anthropic", stop_reason=stop,
                           usage=Usage(input_tokens=5, output_tokens=7, cost_usd=Decimal("0.25")))
    message = Message.model_construct(role=Role.ASSISTANT, content=content, metadata=meta)
    payload = completed_payload(message)
    assert payload["produced_tool_calls"] == len(message.tool_uses())
    assert payload["produced_thinking_blocks"] == sum(
        1 for b in message.content if b.type in ("thinking", "redacted_thinking"))
    assert list(payload) == [
        "model", "provider", "input_tokens", "output_tokens", "cached_input_tokens", "cache_creation_input_tokens",
        "cost_usd", "pricing_version", "latency_ms", "stop_reason", "produced_tool_calls",
        "produced_thinking_blocks"]
    assert payload["stop_reason"] == (stop if stop in ("end_turn", "tool_use", "refusal") else "end_turn")
    assert payload["cost_usd"] == 0.25
