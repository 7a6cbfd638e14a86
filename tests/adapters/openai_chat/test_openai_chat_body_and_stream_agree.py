"""A Chat Completions body and the stream of the same answer give the same Message.

The body is read directly (response.py), a stream chunk by chunk (stream.py): two wire formats, one
canonical answer. Every recorded non-streaming answer is read both ways (its message sent as the
stream of one delta) and the Messages compared; the recorded body and stream of each kind of answer
(separate recordings, so their text differs) give Messages of the same shape; broken variants of a
body must fail alike (the same named error and message) or give the same PARTIAL answer.
"""

from __future__ import annotations

import copy
import itertools
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import fixtures_root

from metis_core.adapters import _common
from metis_core.adapters.base import RequestContext
from metis_core.adapters.openai_chat.adapter import OpenAIChatAdapter
from metis_core.adapters.openai_chat.response import read_chat_response
from metis_core.adapters.openai_chat.stream import ChatStreamTranslator
from metis_core.adapters.parse_guard import PARSE_FAILURES, feed_checked, finish_checked, parse_response_checked
from metis_core.messages import Message, MessageComplete, ToolDefinition
from metis_core.transport.framing import SSEDecoder, WireChunk
from metis_core.transport.wire import WireResponse

_HELDOUT = Path(__file__).resolve().parents[2] / "data" / "heldout" / "openai_chat"
BODIES = sorted(
    [p for p in (fixtures_root() / "wire" / "openai_chat").iterdir()
     if p.suffix == ".json" and (p.name.startswith("response__") or p.name.startswith("docs_example__response"))]
    + [p for p in _HELDOUT.iterdir() if p.name.startswith("response__") and p.suffix == ".json"]
)
TOOLS = [ToolDefinition(name="get_weather", description="weather",
                        input_schema={"type": "object", "properties": {"city": {"type": "string"}}})]


_issued = [itertools.count()]


@pytest.fixture(autouse=True)
def _counted_tool_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """Canonical tool ids issued in order from a counter (restarted for each reading), so readings compare."""
    monkeypatch.setattr(_common.tool_ids, "new_tool_use_id", lambda: f"tu_{next(_issued[0]):026d}")


def _context() -> RequestContext:
    _issued[0] = itertools.count()
    return RequestContext(model="openai:gpt-4o", session_id="s", tools=TOOLS, message_id="m")


def _comparable(message: Message) -> dict[str, Any]:
    dumped = message.model_dump(mode="json", exclude={"created_at"})
    dumped["metadata"]["usage"].pop("latency_ms")
    return dumped


def _as_stream(body: dict[str, Any]) -> list[WireChunk]:
    """The body's answer as the stream of it: every choice's message as one delta, its finish_reason, usage."""
    head = {k: v for k, v in body.items() if k in ("id", "model")}
    choices = body["choices"]
    chunks = [{**head, "choices": [{"index": c.get("index", 0), "delta": c["message"]} for c in choices]},
              {**head, "choices": [{"index": c.get("index", 0), "delta": {}, "finish_reason": c.get("finish_reason")}
                                   for c in choices]}]
    if "usage" in body:
        chunks.append({**head, "choices": [], "usage": body["usage"]})
    return [*(WireChunk(data=orjson.dumps(c).decode()) for c in chunks), WireChunk(data="[DONE]")]


def _streamed(body: dict[str, Any]) -> Message:
    context = _context()
    translator = ChatStreamTranslator(context)
    events = [e for chunk in _as_stream(body) for e in feed_checked(translator, chunk, "openai")]
    events += finish_checked(translator, "openai")
    completes = [e for e in events if isinstance(e, MessageComplete)]
    assert len(completes) == 1
    return completes[0].message


def _read(body: bytes) -> Message | tuple[type[BaseException], str]:
    """The direct reading through the parse boundary, or the error it raised (class and message)."""
    try:
        return parse_response_checked(OpenAIChatAdapter(), WireResponse(200, body), _context())
    except Exception as error:
        return type(error), str(error)


def _through_translator(body: bytes) -> Message | tuple[type[BaseException], str]:
    """The body applied to the stream translator as one delta (how every Chat body was read before)."""
    from metis_core.adapters.openai_chat.response import parse_chat_response

    context = _context()
    try:
        try:
            return parse_chat_response(WireResponse(200, body), ChatStreamTranslator(context))
        except PARSE_FAILURES as error:  # named as parse_response_checked names it
            raise WireResponse(200, body).malformed("openai", f"response body has an unexpected shape "
                                                    f"({type(error).__name__}: {str(error)[:160]})") from None
    except Exception as error:
        return type(error), str(error)


@pytest.mark.parametrize("path", BODIES, ids=lambda p: p.name)
def test_every_recorded_body_and_its_stream_give_the_same_message(path: Path) -> None:
    raw = path.read_bytes()
    direct = read_chat_response(WireResponse(200, raw), _context())
    assert _comparable(direct) == _comparable(_streamed(orjson.loads(raw)))


RECORDED_PAIRS = [
    ("response__text.json", "stream__text_with_usage_chunk.sse"),
    ("response__finish_reason_length.json", "stream__finish_reason_length.sse"),
    ("response__n3_multiple_choices.json", "stream__n3_multiple_choices.sse"),
    ("response__refusal.json", "stream__refusal_deltas.sse"),
    ("response__parallel_tool_calls.json", "stream__parallel_tool_calls_with_usage.sse"),
    ("response__cached_tokens_prompt_cache_read.json", "stream__cached_tokens_usage_chunk.sse"),
]


def _shape(message: Message) -> tuple[object, ...]:
    metadata = message.metadata
    return (metadata.status, metadata.stop_reason, [block.type for block in message.content],
            sorted(metadata.provider_raw or {}))


@pytest.mark.parametrize(("body_name", "stream_name"), RECORDED_PAIRS)
def test_the_recorded_body_and_stream_of_one_kind_of_answer_give_messages_of_one_shape(
    body_name: str, stream_name: str
) -> None:
    folder = fixtures_root() / "wire" / "openai_chat"
    direct = read_chat_response(WireResponse(200, (folder / body_name).read_bytes()), _context())
    translator, decoder = ChatStreamTranslator(_context()), SSEDecoder()
    chunks = [*decoder.feed((folder / stream_name).read_bytes()), *decoder.finish()]
    events = [e for chunk in chunks for e in translator.feed(chunk)] + translator.finish()
    streamed = next(e.message for e in events if isinstance(e, MessageComplete))
    assert _shape(direct) == _shape(streamed)


def _broken_variants(body: dict[str, Any]) -> list[dict[str, Any]]:
    """One fault at a time in the places a reader reads: wrong types, missing keys, unusable arguments."""
    message_faults: list[tuple[str, Any]] = [
        ("content", 7), ("content", {"a": 1}), ("content", [{"text": 5}]), ("content", [{"type": "text", "text": "x"}]),
        ("refusal", 3), ("refusal", ["no"]), ("refusal", "I refuse"), ("annotations", {"type": "url_citation"}),
        ("annotations", [{"type": "url_citation", "url_citation": {"url": 5}}]), ("tool_calls", {"a": 1}),
        ("tool_calls", [3]), ("tool_calls", [{"function": "f"}]),
        ("tool_calls", [{"id": 9, "function": {"name": "f"}}]),
        ("tool_calls", [{"id": "c", "function": {"name": 4, "arguments": "{}"}}]),
        ("tool_calls", [{"id": "c", "function": {"name": "f", "arguments": 5}}]),
        ("tool_calls", [{"id": "c", "function": {"name": "f", "arguments": "{broken"}}]),
        ("tool_calls", [{"id": "c", "function": {"name": "f", "arguments": "[1]"}}]),
        ("tool_calls", [{"id": "c", "function": {"name": "f", "arguments": '{"n": 18446744073709551615}'}}]),
        ("tool_calls", [{"id": "c", "function": {"name": "", "arguments": "{}"}}]),
        ("tool_calls", [{"id": "c", "type": "custom", "custom": {"name": "g", "input": 5}}]),
        ("tool_calls", [{"id": "c", "type": "custom", "custom": {"name": "g", "input": "x"}},
                        {"index": 0, "id": "d", "function": {"name": "f", "arguments": " {\"a\": 1}"}}]),
        ("tool_calls", [{"index": [0], "id": "c", "function": {"name": "f"}}]),
    ]
    variants = []
    for key, value in message_faults:
        broken = copy.deepcopy(body)
        broken["choices"][0]["message"][key] = value
        variants.append(broken)
    for choice_fault in ({"finish_reason": ["stop"]}, {"finish_reason": 5}, {"message": "text"}, {"index": 1}):
        broken = copy.deepcopy(body)
        broken["choices"][0].update(choice_fault)
        variants.append(broken)
    for body_fault in ({"usage": {"prompt_tokens": "many"}}, {"usage": {"prompt_tokens_details": 3}},
                       {"choices": []}, {"error": {"message": "overloaded", "type": "server_error"}}):
        variants.append({**copy.deepcopy(body), **body_fault})
    return variants


@pytest.mark.parametrize("name", ["response__text.json", "response__tool_call_single.json",
                                  "response__n3_multiple_choices.json"])
def test_broken_bodies_fail_or_degrade_as_the_translator_reading_does(name: str) -> None:
    body = orjson.loads((fixtures_root() / "wire" / "openai_chat" / name).read_bytes())
    for variant in _broken_variants(body):
        raw = orjson.dumps(variant)
        direct, translated = _read(raw), _through_translator(raw)
        if isinstance(direct, Message) and isinstance(translated, Message):
            assert _comparable(direct) == _comparable(translated), variant
        else:
            assert direct == translated, variant
