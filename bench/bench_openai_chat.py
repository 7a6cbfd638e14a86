"""Measure the OpenAI chat adapter's hot paths: to_wire and SSE stream translation.

Run: .venv/bin/python bench/bench_openai_chat.py. (1) to_wire of a 40-message tool conversation,
median microseconds, next to a hand-written dict mapping of the same history (the contract's
yardstick: at most ~2x). (2) A 2,000-event chat SSE body (1,797 text deltas, one tool call whose
arguments arrive in 200 fragments, the finish chunk and the usage chunk, then [DONE]) framed in
16 KiB reads and translated; the result is verified and reported as events/s. Prints and returns
a dict of the figures.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import orjson

from metis_core.adapters.base import AdapterOptions, RequestContext
from metis_core.adapters.openai_chat.adapter import OpenAIChatAdapter
from metis_core.messages import (
    Message,
    MessageComplete,
    MessageMetadata,
    MessageStatus,
    Role,
    RoutingDecisionRecord,
    RoutingMode,
    TextBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    system_message,
    tool_result_message,
    user_message,
)
from metis_core.transport.framing import SSEDecoder

MODEL = "openai:gpt-4o"
EVENTS = 2_000
FRAGMENTS = 200
READ_SIZE = 16 * 1024
STREAM_RUNS = 15
WIRE_RUNS = 2_000


# --- to_wire ------------------------------------------------------------------------------------


def assistant(*blocks: Any) -> Message:
    metadata = MessageMetadata(
        model=MODEL,
        provider="openai",
        routing=RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model=MODEL, reason="bench"),
        usage=Usage(),
    )
    return Message(role=Role.ASSISTANT, content=list(blocks), metadata=metadata)


def conversation() -> list[Message]:
    """40 messages: system, user, then 19 rounds of (assistant text + tool call, tool result)."""
    history = [system_message("You are a careful coding agent."), user_message("Refactor the parser module.")]
    for turn in range(19):
        call = ToolUseBlock(
            id=f"tu_01J{turn:023d}", name="read_file", input={"path": f"src/mod{turn}.py", "start": turn}
        )
        history.append(assistant(TextBlock(text=f"Reading file {turn} to see what it does."), call))
        history.append(tool_result_message(call.id, f"def f{turn}():\n    return {turn}\n" * 5))
    assert len(history) == 40
    return history


def hand_written(messages: list[Message], model: str) -> dict[str, Any]:
    """The yardstick: the same body built by a direct loop, no repair, no id map, no drop checks."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role is Role.TOOL:
            block = m.content[0]
            assert isinstance(block, ToolResultBlock)
            out.append({"role": "tool", "tool_call_id": "call_" + block.tool_use_id[3:], "content": block.text()})
            continue
        texts = [b.text for b in m.content if isinstance(b, TextBlock)]
        wire: dict[str, Any] = {"role": m.role.value, "content": texts[0] if texts else None}
        calls = [b for b in m.content if isinstance(b, ToolUseBlock)]
        if calls:
            wire["tool_calls"] = [
                {
                    "id": "call_" + b.id[3:],
                    "type": "function",
                    "function": {"name": b.name, "arguments": orjson.dumps(b.input).decode()},
                }
                for b in calls
            ]
        out.append(wire)
    return {"model": model, "messages": out}


def median_us(fn: Any, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def bench_to_wire(adapter: OpenAIChatAdapter) -> dict[str, float]:
    history = conversation()
    tool = ToolDefinition(
        name="read_file",
        description="Read a file",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    )
    options = AdapterOptions(model=MODEL)
    body = adapter.to_wire(history, [tool], options).body
    assert {k: v for k, v in body.items() if k != "tools"} == hand_written(history, "gpt-4o")  # fair comparison
    ours = median_us(lambda: adapter.to_wire(history, [tool], options), WIRE_RUNS)
    baseline = median_us(lambda: hand_written(history, "gpt-4o"), WIRE_RUNS)
    return {
        "to_wire_40_messages_median_us": round(ours, 1),
        "hand_written_40_messages_median_us": round(baseline, 1),
        "to_wire_vs_hand_written": round(ours / baseline, 2),
    }


# --- stream -------------------------------------------------------------------------------------


def sse_body() -> tuple[bytes, str, dict[str, Any]]:
    head = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-2024-08-06"}
    text_events = EVENTS - FRAGMENTS - 3  # minus tool start, finish chunk and usage chunk
    deltas = [f"tok{i} " for i in range(text_events)]
    arguments = {"path": "src/main.py", "content": "".join(f"line {i}\n" for i in range(150))}
    raw = orjson.dumps(arguments).decode()
    cuts = [len(raw) * i // FRAGMENTS for i in range(FRAGMENTS + 1)]
    fragments = [raw[cuts[i] : cuts[i + 1]] for i in range(FRAGMENTS)]
    assert len(fragments) == FRAGMENTS

    def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> bytes:
        choices = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        return b"data: " + orjson.dumps({**head, "choices": choices, "usage": usage}) + b"\n\n"

    parts = [chunk({"role": "assistant", "content": deltas[0]})]
    parts += [chunk({"content": d}) for d in deltas[1:]]
    start = {"index": 0, "id": "call_bench", "type": "function", "function": {"name": "write_file", "arguments": ""}}
    parts.append(chunk({"tool_calls": [start]}))
    parts += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}) for f in fragments]
    parts.append(chunk({}, "tool_calls"))
    usage = {"prompt_tokens": 1500, "completion_tokens": 2400, "prompt_tokens_details": {"cached_tokens": 1024}}
    parts.append(b"data: " + orjson.dumps({**head, "choices": [], "usage": usage}) + b"\n\n")
    parts.append(b"data: [DONE]\n\n")
    assert len(parts) == EVENTS + 1
    return b"".join(parts), "".join(deltas), arguments


def translate_once(adapter: OpenAIChatAdapter, body: bytes) -> tuple[int, Message]:
    decoder = SSEDecoder()
    translator = adapter.stream_translator(RequestContext(model=MODEL, session_id="bench"))
    events = 0
    last: Any = None
    for start in range(0, len(body), READ_SIZE):
        for chunk in decoder.feed(body[start : start + READ_SIZE]):
            out = translator.feed(chunk)
            events += len(out)
            if out:
                last = out[-1]
    for chunk in decoder.finish():
        out = translator.feed(chunk)
        events += len(out)
        last = out[-1] if out else last
    tail = translator.finish()
    events += len(tail)
    last = tail[-1] if tail else last
    assert isinstance(last, MessageComplete)
    message: Message = last.message
    return events, message


def bench_stream(adapter: OpenAIChatAdapter) -> dict[str, float]:
    body, expected_text, arguments = sse_body()
    events, message = translate_once(adapter, body)  # warm-up and verification
    assert message.status is MessageStatus.COMPLETE and message.text() == expected_text
    assert [(u.name, u.input) for u in message.tool_uses()] == [("write_file", arguments)]
    usage = message.metadata.usage
    assert usage is not None and (usage.input_tokens, usage.cached_input_tokens) == (476, 1024)
    assert message.metadata.stop_reason == "tool_use"
    times = []
    for _ in range(STREAM_RUNS):
        started = time.perf_counter()
        translate_once(adapter, body)
        times.append(time.perf_counter() - started)
    median = statistics.median(times)
    return {
        "stream_sse_events": EVENTS,
        "stream_canonical_events": events,
        "stream_median_ms": round(median * 1000, 2),
        "stream_sse_events_per_s": round(EVENTS / median),
        "stream_canonical_events_per_s": round(events / median),
    }


def run() -> dict[str, float]:
    adapter = OpenAIChatAdapter()
    results = {**bench_to_wire(adapter), **bench_stream(adapter)}
    print(results)
    return results


if __name__ == "__main__":
    run()
