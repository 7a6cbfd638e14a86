"""Measure the OpenAI Responses adapter's hot paths: SSE stream translation and to_wire.

Run: .venv/bin/python bench/bench_openai_responses.py. (1) A 2,000-event Responses stream (created,
in_progress, 1,789 output_text deltas, a function call whose arguments arrive in 200 deltas, then
response.completed carrying usage and the full output) is framed in 16 KiB reads and translated;
the result is verified (text, call input, usage, stop reason) and reported as events/s. (2) to_wire
of a 40-message tool conversation with replayed reasoning, median microseconds, next to a
hand-written dict mapping of the same history (the contract's yardstick: at most ~2x), whose
output must equal ours. Prints and returns a dict of the figures.
"""

from __future__ import annotations

import itertools
import statistics
import time
from typing import Any

import orjson

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions, RequestContext
from metis_core.adapters.openai_responses.adapter import OpenAIResponsesAdapter
from metis_core.messages import (
    BlockOrigin,
    Message,
    MessageComplete,
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
    system_message,
    tool_result_message,
    user_message,
)
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.transport.framing import SSEDecoder

EVENTS = 2_000
ARGUMENT_DELTAS = 200
FIXED_EVENTS = 11
TEXT_DELTAS = EVENTS - ARGUMENT_DELTAS - FIXED_EVENTS
READ_SIZE = 16 * 1024
STREAM_RUNS = 15
WIRE_RUNS = 2_000
MODEL = "openai_responses:gpt-5"
ORIGIN = BlockOrigin(provider="openai_responses", api="responses", model="gpt-5")


def sse_body() -> tuple[bytes, str, dict[str, Any]]:
    deltas = [f"tok{i} " for i in range(TEXT_DELTAS)]
    text = "".join(deltas)
    call_input = {"path": "src/main.py", "content": "".join(f"line {i}\\n" for i in range(300))}
    arguments = orjson.dumps(call_input).decode()
    cuts = [len(arguments) * i // ARGUMENT_DELTAS for i in range(ARGUMENT_DELTAS + 1)]
    fragments = [arguments[a:b] for a, b in itertools.pairwise(cuts)]
    assert len(fragments) == ARGUMENT_DELTAS
    message = {
        "id": "msg_1",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "annotations": [], "text": text}],
    }
    call = {
        "id": "fc_1",
        "type": "function_call",
        "status": "completed",
        "call_id": "call_bench",
        "name": "write_file",
        "arguments": arguments,
    }
    usage = {
        "input_tokens": 1500,
        "input_tokens_details": {"cached_tokens": 1200},
        "output_tokens": 2100,
        "output_tokens_details": {"reasoning_tokens": 64},
        "total_tokens": 3600,
    }
    shell = {
        "id": "resp_bench",
        "object": "response",
        "status": "in_progress",
        "model": "gpt-5-2025-08-07",
        "output": [],
    }
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": shell},
        {"type": "response.in_progress", "response": shell},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**message, "content": [], "status": "in_progress"},
        },
        {
            "type": "response.content_part.added",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "output_text", "annotations": [], "text": ""},
        },
        *(
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": d,
            }
            for d in deltas
        ),
        {"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0, "content_index": 0, "text": text},
        {
            "type": "response.content_part.done",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "part": message["content"][0],
        },  # type: ignore[index]
        {"type": "response.output_item.done", "output_index": 0, "item": message},
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": {**call, "arguments": "", "status": "in_progress"},
        },
        *(
            {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": f}
            for f in fragments
        ),
        {"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 1, "arguments": arguments},
        {"type": "response.output_item.done", "output_index": 1, "item": call},
        {
            "type": "response.completed",
            "response": {**shell, "status": "completed", "output": [message, call], "usage": usage},
        },
    ]
    assert len(events) == EVENTS
    body = b"".join(
        b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps({**e, "sequence_number": n}) + b"\n\n"
        for n, e in enumerate(events)
    )
    return body, text, call_input


def bench_stream(adapter: OpenAIResponsesAdapter) -> dict[str, float]:
    body, expected_text, expected_input = sse_body()
    events, _message = translate_stream_verified(adapter, body, expected_text, expected_input)
    times = []
    for _ in range(STREAM_RUNS):
        started = time.perf_counter()
        translate_stream(adapter, body)
        times.append(time.perf_counter() - started)
    median = statistics.median(times)
    return {
        "stream_sse_events": EVENTS,
        "stream_canonical_events": events,
        "stream_median_ms": round(median * 1000, 2),
        "stream_sse_events_per_s": round(EVENTS / median),
        "stream_canonical_events_per_s": round(events / median),
    }


def translate_stream(adapter: OpenAIResponsesAdapter, body: bytes) -> tuple[int, Message]:
    """Feed all chunks; the terminal event completes the message (finish() then adds nothing)."""
    decoder = SSEDecoder()
    translator = adapter.stream_translator(RequestContext(model=MODEL, session_id="bench"))
    events = 0
    final: Message | None = None
    for start in range(0, len(body), READ_SIZE):
        for chunk in decoder.feed(body[start : start + READ_SIZE]):
            produced = translator.feed(chunk)
            events += len(produced)
            for event in produced:
                if isinstance(event, MessageComplete):
                    final = event.message
    for chunk in decoder.finish():
        events += len(translator.feed(chunk))
    events += len(translator.finish())
    if final is None:
        raise AssertionError("the stream produced no message_complete")
    return events, final


def translate_stream_verified(
    adapter: OpenAIResponsesAdapter, body: bytes, expected_text: str, expected_input: dict[str, Any]
) -> tuple[int, Message]:
    events, message = translate_stream(adapter, body)
    assert message.status is MessageStatus.COMPLETE and message.text() == expected_text
    [use] = message.tool_uses()
    assert (use.name, use.input) == ("write_file", expected_input)
    usage = message.metadata.usage
    assert usage is not None
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens, usage.reasoning_tokens) == (
        300,
        1200,
        2100,
        64,
    )
    assert message.metadata.stop_reason == "tool_use"
    return events, message


# --- to_wire -------------------------------------------------------------------------------------


def assistant(*blocks: Any) -> Message:
    metadata = MessageMetadata(
        model=MODEL,
        provider="openai_responses",
        usage=Usage(),
        routing=RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model=MODEL, reason="bench"),
    )
    return Message(role=Role.ASSISTANT, content=list(blocks), metadata=metadata)


def conversation() -> list[Message]:
    """40 messages: system, user, then 19 rounds of (reasoning + text + tool call, tool result)."""
    history = [system_message("You are a careful coding agent."), user_message("Refactor the parser module.")]
    for turn in range(19):
        call = ToolUseBlock(
            id=f"tu_01J{turn:023d}", name="read_file", input={"path": f"src/mod{turn}.py", "start": turn}
        )
        thinking = ThinkingBlock(
            text=f"**Reading module {turn}**", signature=f"gAAAAB{turn:04d}" + "x" * 400, origin=ORIGIN
        )
        history.append(assistant(thinking, TextBlock(text=f"Reading file {turn} to see what it does."), call))
        history.append(tool_result_message(call.id, f"def f{turn}():\n    return {turn}\n" * 5))
    assert len(history) == 40
    return history


def hand_written(messages: list[Message]) -> dict[str, Any]:
    """The yardstick: the same body built by a direct loop, no repair, no drop or origin checks."""
    instructions: list[str] = []
    items: list[dict[str, Any]] = []
    for m in messages:
        if m.role is Role.SYSTEM:
            instructions.append(m.text())
        elif m.role is Role.USER:
            items.append({"role": "user", "content": m.text()})
        elif m.role is Role.TOOL:
            block = m.content[0]
            assert isinstance(block, ToolResultBlock)
            items.append(
                {"type": "function_call_output", "call_id": "call_" + block.tool_use_id[3:], "output": block.text()}
            )
        else:
            for b in m.content:
                if isinstance(b, ThinkingBlock):
                    items.append(
                        {
                            "type": "reasoning",
                            "summary": [{"type": "summary_text", "text": b.text}],
                            "encrypted_content": b.signature,
                        }
                    )
                elif isinstance(b, TextBlock):
                    items.append({"role": "assistant", "content": b.text})
                elif isinstance(b, ToolUseBlock):
                    items.append(
                        {
                            "type": "function_call",
                            "call_id": "call_" + b.id[3:],
                            "name": b.name,
                            "arguments": orjson.dumps(b.input).decode(),
                        }
                    )
    return {
        "model": "gpt-5",
        "instructions": "\n\n".join(instructions),
        "input": items,
        "include": ["reasoning.encrypted_content"],
    }


class _Gpt5Registry:
    """Fixed capabilities so the figure measures the adapter, not the model registry."""

    def knows(self, model: str) -> bool:
        return True

    def capabilities(self, model: str) -> AdapterCapabilities:
        return AdapterCapabilities(supports_thinking=True, supports_images=True)


def _median_us(action: Any, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def bench_to_wire() -> dict[str, float]:
    adapter = OpenAIResponsesAdapter(_Gpt5Registry())  # type: ignore[arg-type]
    history = conversation()
    options = AdapterOptions(model=MODEL, session_id="bench")
    ids = ToolIdMap()
    request = adapter.to_wire(history, [], options, ids)
    assert request.body == hand_written(history), "to_wire and the yardstick disagree"
    assert request.dropped == []
    ours = _median_us(lambda: adapter.to_wire(history, [], options, ids), WIRE_RUNS)
    yardstick = _median_us(lambda: hand_written(history), WIRE_RUNS)
    return {
        "to_wire_messages": len(history),
        "to_wire_median_us": round(ours, 1),
        "hand_written_median_us": round(yardstick, 1),
        "to_wire_vs_hand_written": round(ours / yardstick, 2),
    }


def main() -> dict[str, float]:
    adapter = OpenAIResponsesAdapter(_Gpt5Registry())  # type: ignore[arg-type]
    figures = {**bench_stream(adapter), **bench_to_wire()}
    for name, value in figures.items():
        print(f"{name:32} {value}")
    return figures


if __name__ == "__main__":
    main()
