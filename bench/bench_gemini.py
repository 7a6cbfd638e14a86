"""Measure the Gemini adapter's hot paths: SSE stream translation and to_wire.

Run: .venv/bin/python bench/bench_gemini.py. (1) A 2,000-event `streamGenerateContent?alt=sse` body
framed as Gemini frames it (CRLF, no `event:` lines; 1,998 text chunks each carrying cumulative
usageMetadata as real traffic does, one functionCall chunk with a thoughtSignature, a last chunk
with an empty text part, finishReason and usage) is framed in 16 KiB reads and translated; the result
is verified (text, call, signature, usage) and reported as events/s. (2) to_wire of a 40-message tool
conversation, median microseconds, next to a hand-written dict mapping of the same history (the
contract's yardstick: at most ~2x). Prints and returns a dict of the figures.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import orjson

from metis_core.adapters.base import AdapterOptions, RequestContext
from metis_core.adapters.gemini.adapter import GeminiAdapter
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

EVENTS = 2_000
READ_SIZE = 16 * 1024
STREAM_RUNS = 15
WIRE_RUNS = 2_000
MODEL = "gemini:gemini-2.5-pro"
SIGNATURE = "CvECAdHtim8rZe/H2au6SXNRNGgF6hI0iigoXtLVJ2wmFACQAXFx5c7UZgr/BcJmZrTiA4VfPTTpya3fI8oC8o9w"


def sse_body() -> tuple[bytes, str]:
    deltas = [f"tok{i} " for i in range(EVENTS - 2)]
    tail = {"modelVersion": "gemini-2.5-pro", "responseId": "bench-response-1"}
    events: list[dict[str, Any]] = [
        {"candidates": [{"content": {"parts": [{"text": d}], "role": "model"}, "index": 0}],
         "usageMetadata": {"promptTokenCount": 120, "candidatesTokenCount": i + 1, "totalTokenCount": 121 + i},
         **tail}
        for i, d in enumerate(deltas)
    ]
    call = {"functionCall": {"name": "read_file", "args": {"path": "src/main.py", "start": 1}},
            "thoughtSignature": SIGNATURE}
    events.append({"candidates": [{"content": {"parts": [call], "role": "model"}, "index": 0}], **tail})
    events.append({
        "candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 120, "cachedContentTokenCount": 100, "candidatesTokenCount": EVENTS,
                          "thoughtsTokenCount": 300, "totalTokenCount": 120 + EVENTS + 300},
        **tail,
    })
    return b"".join(b"data: " + orjson.dumps(e) + b"\r\n\r\n" for e in events), "".join(deltas)


def translate_once(adapter: GeminiAdapter, body: bytes) -> tuple[int, Message]:
    decoder = SSEDecoder()
    translator = adapter.stream_translator(RequestContext(model=MODEL, session_id="bench"))
    events = 0
    for start in range(0, len(body), READ_SIZE):
        for chunk in decoder.feed(body[start : start + READ_SIZE]):
            events += len(translator.feed(chunk))
    for chunk in decoder.finish():
        events += len(translator.feed(chunk))
    tail = translator.finish()
    events += len(tail)
    last = tail[-1]
    assert isinstance(last, MessageComplete)
    message: Message = last.message
    return events, message


def bench_stream(adapter: GeminiAdapter) -> dict[str, float]:
    body, expected_text = sse_body()
    events, message = translate_once(adapter, body)  # warm-up and verification
    assert message.status is MessageStatus.COMPLETE and message.text() == expected_text
    [use] = message.tool_uses()
    assert (use.name, use.input) == ("read_file", {"path": "src/main.py", "start": 1})
    assert (message.metadata.provider_raw or {})["thought_signatures"]["tool_use"] == {use.id: SIGNATURE}
    usage = message.metadata.usage
    assert usage is not None
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens, usage.reasoning_tokens) == (
        20, 100, EVENTS + 300, 300)
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
        "stream_canonical_events_per_s": round(events / median),
        "stream_sse_events_per_s": round(EVENTS / median),
    }


def assistant(*blocks: Any) -> Message:
    metadata = MessageMetadata(
        model=MODEL, provider="gemini",
        routing=RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model=MODEL, reason="bench"), usage=Usage(),
    )
    return Message(role=Role.ASSISTANT, content=list(blocks), metadata=metadata)


def conversation() -> list[Message]:
    """40 messages: system, user, then 19 rounds of (assistant text + tool call, tool result)."""
    history = [system_message("You are a careful coding agent."), user_message("Refactor the parser module.")]
    for turn in range(19):
        call = ToolUseBlock(id=f"tu_01J{turn:023d}", name="read_file",
                            input={"path": f"src/mod{turn}.py", "start": turn})
        history.append(assistant(TextBlock(text=f"Reading file {turn} to see what it does."), call))
        history.append(tool_result_message(call.id, f"def f{turn}():\n    return {turn}\n" * 5))
    assert len(history) == 40
    return history


def hand_written(messages: list[Message]) -> dict[str, Any]:
    """The yardstick: the same body built by a direct loop, no repair, no drop or signature checks."""
    names: dict[str, str] = {}
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    for m in messages:
        if m.role is Role.SYSTEM:
            system.extend({"text": b.text} for b in m.content if isinstance(b, TextBlock))
        elif m.role is Role.TOOL:
            block = m.content[0]
            assert isinstance(block, ToolResultBlock)
            contents.append({"parts": [{"functionResponse": {"name": names[block.tool_use_id],
                                                             "response": {"output": block.text()}}}],
                             "role": "user"})
        else:
            parts: list[dict[str, Any]] = []
            for b in m.content:
                if isinstance(b, TextBlock):
                    parts.append({"text": b.text})
                elif isinstance(b, ToolUseBlock):
                    names[b.id] = b.name
                    parts.append({"functionCall": {"args": b.input, "name": b.name}})
            contents.append({"parts": parts, "role": "model" if m.role is Role.ASSISTANT else "user"})
    return {"contents": contents, "generationConfig": {}, "systemInstruction": {"parts": system, "role": "user"}}


def median_us(fn: Any, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def bench_to_wire(adapter: GeminiAdapter) -> dict[str, float]:
    history = conversation()
    tool = ToolDefinition(name="read_file", description="Read a file", input_schema={
        "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
    options = AdapterOptions(model=MODEL)
    body = adapter.to_wire(history, [tool], options).body
    assert {k: v for k, v in body.items() if k != "tools"} == hand_written(history)  # same output, fair comparison
    ours = median_us(lambda: adapter.to_wire(history, [tool], options), WIRE_RUNS)
    baseline = median_us(lambda: hand_written(history), WIRE_RUNS)
    return {
        "to_wire_40_messages_median_us": round(ours, 1),
        "hand_written_40_messages_median_us": round(baseline, 1),
        "to_wire_vs_hand_written": round(ours / baseline, 2),
    }


def run() -> dict[str, float]:
    adapter = GeminiAdapter()
    results = {**bench_stream(adapter), **bench_to_wire(adapter)}
    print(results)
    return results


if __name__ == "__main__":
    run()
