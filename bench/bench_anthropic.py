"""Measure the Anthropic adapter's hot paths: to_wire and SSE stream translation.

Run: .venv/bin/python bench/bench_anthropic.py. (1) to_wire of the suite's 40-message tool
conversation, median microseconds, next to the hand-written dict mapping of the same history
(bench/handwritten.py; the contract's yardstick is at most ~2x). (2) The suite's 2,000-event
Anthropic SSE stream (text deltas, a write_file call in 200 input_json_delta fragments, usage)
framed in 16 KiB reads and translated; the result is verified, then reported as events/s.
"""

from __future__ import annotations

import copy
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: make `bench` importable

from bench.handwritten import anthropic_body
from bench.peers.metis import canonical_conversation, canonical_tools
from bench.scenarios import ANTHROPIC_MODEL, MAX_TOKENS, STREAM_EVENTS, stream_script
from bench.wire_streams import anthropic_stream
from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.anthropic.adapter import AnthropicAdapter
from metis_core.adapters.base import AdapterOptions, RequestContext
from metis_core.messages import Message, MessageComplete, MessageStatus
from metis_core.transport.framing import SSEDecoder

MODEL = f"anthropic:{ANTHROPIC_MODEL}"
READ_SIZE = 16 * 1024
WIRE_RUNS = 2_000
STREAM_RUNS = 15


def median_us(fn: Any, runs: int) -> float:
    for _ in range(min(200, runs)):
        fn()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def same_request(ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
    """Equal after the spellings the API treats alike: one-text-block content as a string, a string
    system prompt as one text block, tool_result text as a string, `is_error: false` as absent."""

    def norm(body: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(body)
        if isinstance(out.get("system"), str):
            out["system"] = [{"type": "text", "text": out["system"]}]
        for turn in out["messages"]:
            if isinstance(turn["content"], str):
                turn["content"] = [{"type": "text", "text": turn["content"]}]
            for block in turn["content"]:
                if block["type"] == "tool_result":
                    if isinstance(block.get("content"), list):
                        block["content"] = "".join(p["text"] for p in block["content"])
                    if not block.get("is_error"):
                        block.pop("is_error", None)
        return out

    return norm(ours) == norm(theirs)


def bench_to_wire(adapter: AnthropicAdapter) -> dict[str, float]:
    history = canonical_conversation()
    tools = canonical_tools()
    options = AdapterOptions(model=MODEL, max_tokens=MAX_TOKENS)
    ids = ToolIdMap()
    body = adapter.to_wire(history, tools, options, ids).body
    assert len(history) == 40 and same_request(body, anthropic_body(history))  # a fair comparison
    ours = median_us(lambda: adapter.to_wire(history, tools, options, ids), WIRE_RUNS)
    baseline = median_us(lambda: anthropic_body(history), WIRE_RUNS)
    return {
        "to_wire_40_messages_median_us": round(ours, 1),
        "hand_written_40_messages_median_us": round(baseline, 1),
        "to_wire_vs_hand_written": round(ours / baseline, 2),
    }


def translate_once(adapter: AnthropicAdapter, body: bytes) -> tuple[int, Message]:
    decoder = SSEDecoder()
    translator = adapter.stream_translator(RequestContext(model=MODEL, session_id="bench"))
    events = 0
    last: Any = None
    for start in range(0, len(body), READ_SIZE):
        for chunk in decoder.feed(body[start : start + READ_SIZE]):
            out = translator.feed(chunk)
            if out:
                events += len(out)
                last = out[-1]
    for chunk in [*decoder.finish()]:
        out = translator.feed(chunk)
        events += len(out)
        last = out[-1] if out else last
    tail = translator.finish()
    events += len(tail)
    last = tail[-1] if tail else last
    assert isinstance(last, MessageComplete), "the stream must end with message_complete"
    message: Message = last.message
    return events, message


def bench_stream(adapter: AnthropicAdapter) -> dict[str, float]:
    script = stream_script()
    frames = anthropic_stream(script)
    body = b"".join(frames)
    assert len(frames) == STREAM_EVENTS
    events, message = translate_once(adapter, body)  # warm-up and verification
    answer = script.answer
    assert message.status is MessageStatus.COMPLETE and message.metadata.stop_reason == "tool_use"
    assert message.text() == answer.text
    assert [(u.name, u.input) for u in message.tool_uses()] == [(answer.tool_name, answer.tool_args)]
    usage = message.metadata.usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens) == (answer.input_tokens, answer.output_tokens)
    times = []
    for _ in range(STREAM_RUNS):
        started = time.perf_counter()
        translate_once(adapter, body)
        times.append(time.perf_counter() - started)
    median = statistics.median(times)
    return {
        "stream_sse_events": STREAM_EVENTS,
        "stream_canonical_events": events,
        "stream_median_ms": round(median * 1000, 2),
        "stream_sse_events_per_s": round(STREAM_EVENTS / median),
        "stream_canonical_events_per_s": round(events / median),
    }


def run() -> dict[str, float]:
    adapter = AnthropicAdapter()
    results = {**bench_to_wire(adapter), **bench_stream(adapter)}
    print(results)
    return results


if __name__ == "__main__":
    run()
