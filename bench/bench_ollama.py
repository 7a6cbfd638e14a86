"""Measure the Ollama adapter's hot paths: NDJSON stream translation and to_wire.

Run: .venv/bin/python bench/bench_ollama.py. (1) A 2,000-line NDJSON body (1,998 content deltas,
one tool-call line, the final done line) is framed in 16 KiB reads and translated; the result is
verified (text, tool call, usage) and reported as events/s and lines/s. (2) to_wire of a
40-message tool conversation, median microseconds, next to a hand-written dict mapping of the same
history (the contract's yardstick: at most ~2x). Prints and returns a dict of the figures.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import orjson

from metis_core.adapters.base import AdapterOptions, RequestContext
from metis_core.adapters.ollama.adapter import OllamaAdapter
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
from metis_core.transport.framing import NDJSONDecoder

LINES = 2_000
READ_SIZE = 16 * 1024
STREAM_RUNS = 15
WIRE_RUNS = 2_000


def ndjson_body() -> tuple[bytes, str]:
    deltas = [f"tok{i} " for i in range(LINES - 2)]
    rows: list[dict[str, Any]] = [
        {
            "model": "qwen3:8b",
            "created_at": "2025-10-26T17:15:24.097767Z",
            "message": {"role": "assistant", "content": d},
            "done": False,
        }
        for d in deltas
    ]
    call = {"function": {"name": "read_file", "arguments": {"path": "src/main.py", "start": 1}}}
    rows.append(
        {"model": "qwen3:8b", "message": {"role": "assistant", "content": "", "tool_calls": [call]}, "done": False}
    )
    rows.append(
        {
            "model": "qwen3:8b",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "total_duration": 4883583458,
            "prompt_eval_count": 26,
            "eval_count": LINES,
        }
    )
    return b"".join(orjson.dumps(r) + b"\n" for r in rows), "".join(deltas)


def translate_once(adapter: OllamaAdapter, body: bytes) -> tuple[int, Message]:
    decoder = NDJSONDecoder()
    translator = adapter.stream_translator(RequestContext(model="ollama:qwen3:8b", session_id="bench"))
    events = 0
    last: Any = None
    for start in range(0, len(body), READ_SIZE):
        for chunk in decoder.feed(body[start : start + READ_SIZE]):
            out = translator.feed(chunk)
            events += len(out)
            if out:
                last = out[-1]
    for chunk in decoder.finish():
        events += len(translator.feed(chunk))
    tail = translator.finish()
    events += len(tail)
    last = tail[-1] if tail else last
    assert isinstance(last, MessageComplete)
    message: Message = last.message
    return events, message


def bench_stream(adapter: OllamaAdapter) -> dict[str, float]:
    body, expected_text = ndjson_body()
    events, message = translate_once(adapter, body)  # warm-up and verification
    assert message.status is MessageStatus.COMPLETE and message.text() == expected_text
    assert [(u.name, u.input) for u in message.tool_uses()] == [("read_file", {"path": "src/main.py", "start": 1})]
    assert message.metadata.usage is not None and message.metadata.usage.output_tokens == LINES
    assert message.metadata.stop_reason == "tool_use"
    times = []
    for _ in range(STREAM_RUNS):
        started = time.perf_counter()
        translate_once(adapter, body)
        times.append(time.perf_counter() - started)
    median = statistics.median(times)
    return {
        "stream_lines": LINES,
        "stream_events": events,
        "stream_median_ms": round(median * 1000, 2),
        "stream_events_per_s": round(events / median),
        "stream_lines_per_s": round(LINES / median),
    }


def assistant(*blocks: Any) -> Message:
    metadata = MessageMetadata(
        model="ollama:qwen3:8b",
        provider="ollama",
        routing=RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model="ollama:qwen3:8b", reason="bench"),
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
    """The yardstick: the same body built by a direct loop, no repair, no drop checks."""
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role is Role.TOOL:
            block = m.content[0]
            assert isinstance(block, ToolResultBlock)
            out.append({"role": "tool", "content": block.text(), "tool_name": names[block.tool_use_id]})
            continue
        texts = [b.text for b in m.content if isinstance(b, TextBlock)]
        wire: dict[str, Any] = {"role": m.role.value, "content": "\n".join(texts)}
        calls = [b for b in m.content if isinstance(b, ToolUseBlock)]
        if calls:
            for b in calls:
                names[b.id] = b.name
            wire["tool_calls"] = [
                {"function": {"index": i, "name": b.name, "arguments": b.input}} for i, b in enumerate(calls)
            ]
        out.append(wire)
    return {"model": model, "messages": out, "stream": False}


def median_us(fn: Any, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def bench_to_wire(adapter: OllamaAdapter) -> dict[str, float]:
    history = conversation()
    tool = ToolDefinition(
        name="read_file",
        description="Read a file",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    )
    options = AdapterOptions(model="ollama:qwen3:8b")
    body = adapter.to_wire(history, [tool], options).body
    expected = hand_written(history, "qwen3:8b")
    assert {k: v for k, v in body.items() if k != "tools"} == expected  # same output, fair comparison
    ours = median_us(lambda: adapter.to_wire(history, [tool], options), WIRE_RUNS)
    baseline = median_us(lambda: hand_written(history, "qwen3:8b"), WIRE_RUNS)
    return {
        "to_wire_40_messages_median_us": round(ours, 1),
        "hand_written_40_messages_median_us": round(baseline, 1),
        "to_wire_vs_hand_written": round(ours / baseline, 2),
    }


def run() -> dict[str, float]:
    adapter = OllamaAdapter()
    results = {**bench_stream(adapter), **bench_to_wire(adapter)}
    print(results)
    return results


if __name__ == "__main__":
    run()
