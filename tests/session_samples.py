"""Sample sessions for the store tests: every content block type, tool calls, priced usage."""

from __future__ import annotations

from decimal import Decimal

from metis_core.ids import new_tool_use_id
from metis_core.messages import (
    BlockOrigin,
    ImageBlock,
    ImageSource,
    Message,
    MessageMetadata,
    RedactedThinkingBlock,
    Role,
    RoutingDecisionRecord,
    RoutingMode,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    system_message,
    user_message,
)

MODEL = "anthropic:claude-sonnet-4-6"


def assistant(
    session_id: str,
    blocks: list,
    *,
    cost: str | None = "0.0123",
    provider: str = "anthropic",
    tokens: tuple[int, int] = (100, 20),
    **meta: object,
) -> Message:
    model = MODEL if provider == "anthropic" else f"{provider}:gpt-5"
    return Message(
        role=Role.ASSISTANT,
        session_id=session_id,
        content=blocks,
        metadata=MessageMetadata(
            model=model,
            provider=provider,
            routing=RoutingDecisionRecord(
                mode=RoutingMode.RULE,
                chosen_model=model,
                reason="rule x",
                rule_name="x",
                confidence=0.5,
                alternatives_considered=["a:b"],
            ),
            usage=Usage(
                input_tokens=tokens[0],
                output_tokens=tokens[1],
                cached_input_tokens=7,
                reasoning_tokens=3,
                cost_usd=None if cost is None else Decimal(cost),
                pricing_version="2026-05" if cost else None,
                latency_ms=42,
            ),
            stop_reason="tool_use" if any(isinstance(b, ToolUseBlock) for b in blocks) else "end_turn",
            **meta,
        ),
    )


def tool_result(
    session_id: str, tool_use_id: str, text: str, *, is_error: bool = False, with_image: bool = False
) -> Message:
    content: list = [TextBlock(text=text)]
    if with_image:
        content.append(ImageBlock(source=ImageSource(kind="base64", data="iVBORw0KGgo="), media_type="image/png"))
    return Message(
        role=Role.TOOL,
        session_id=session_id,
        content=[ToolResultBlock(tool_use_id=tool_use_id, content=content, is_error=is_error)],
        metadata=MessageMetadata(parent_tool_use_id=tool_use_id),
    )


def full_conversation(session_id: str) -> tuple[list[Message], list[str]]:
    """System, user with images, assistant with thinking/redacted/text/2 tool uses, an ok and an
    error tool result, and an unpriced final answer. Returns (messages, tool_use_ids)."""
    origin = BlockOrigin(provider="anthropic", api="messages", model="claude-sonnet-4-6")
    tu_ok, tu_err = new_tool_use_id(), new_tool_use_id()
    messages = [
        system_message("You are terse.", session_id=session_id),
        Message(
            role=Role.USER,
            session_id=session_id,
            content=[
                TextBlock(text="What is in this picture? Ünïcödé ✓"),
                ImageBlock(source=ImageSource(kind="base64", data="iVBORw0KGgoAAAANSUhEUg=="), media_type="image/png"),
                ImageBlock(
                    source=ImageSource(kind="url", data="https://example.invalid/a.jpg"), media_type="image/jpeg"
                ),
            ],
        ),
        assistant(
            session_id,
            [
                ThinkingBlock(text="Let me look.", signature="sig-abc", origin=origin),
                RedactedThinkingBlock(data="opaque==", origin=origin),
                TextBlock(text="Checking two files."),
                ToolUseBlock(id=tu_ok, name="read_file", input={"path": "a.txt", "nested": {"n": [1, 2.5, None]}}),
                ToolUseBlock(id=tu_err, name="read_file", input={"path": "missing.txt"}),
            ],
            provider_raw={"anthropic": {"id": "msg_1"}},
            custom_future_field={"x": 1},
        ),
        tool_result(session_id, tu_ok, "contents of a", with_image=True),
        tool_result(session_id, tu_err, "no such file", is_error=True),
        assistant(session_id, [TextBlock(text="Done: a has contents.")], cost=None, tokens=(50, 10)),
    ]
    return messages, [tu_ok, tu_err]


def simple_exchange(session_id: str, count: int) -> list[Message]:
    """`count` user/assistant pairs of text."""
    out: list[Message] = []
    for i in range(count):
        out.append(user_message(f"question {i}", session_id=session_id))
        out.append(assistant(session_id, [TextBlock(text=f"answer {i}")]))
    return out
