"""Non-streaming Ollama bodies -> canonical Messages: every response sample, usage, stop reasons, bad bodies."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import orjson
import pytest
from fixture_files import read_bytes, wire_files

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import RequestContext
from metis_core.adapters.ollama.adapter import OllamaAdapter
from metis_core.errors import InvalidRequestError, MalformedResponseError, ServerError
from metis_core.messages import Message, MessageStatus, ThinkingBlock, ToolUseBlock
from metis_core.models.pricing import default_price_table
from metis_core.transport.wire import WireResponse

# name -> (model, text, tool calls, input tokens, output tokens, stop reason)
EXPECTED = {
    "response__chat_after_tool_result.json": (
        "llama3.2", "The current temperature in Toronto is 11°C.", [], 94, 11, "end_turn",
    ),
    "response__chat_image.json": (
        "llava",
        " The image features a cute, little pig with an angry facial expression. It's wearing a heart on its "
        "shirt and is waving in the air. This scene appears to be part of a drawing or sketching project.",
        [], 26, 83, "end_turn",
    ),
    "response__chat_structured_output.json": (
        "llama3.1", '{"age": 22, "available": false}', [], 34, 12, "end_turn",
    ),
    "response__chat_text.json": ("llama3.2", "Hello! How are you today?", [], 26, 298, "end_turn"),
    "response__chat_tool_calls.json": (
        "llama3.2", "", [("get_weather", {"city": "Tokyo"})], 169, 18, "tool_use",
    ),
    "response__chat_tool_calls_two_args.json": (
        "llama3.2", "", [("get_current_weather", {"format": "celsius", "location": "Paris, FR"})], 122, 33, "tool_use",
    ),
}  # fmt: skip


def parse(body: bytes, model: str = "llama3.2", status: int = 200, **context: Any) -> Message:
    ctx = RequestContext(model=f"ollama:{model}", session_id="sess_r", **context)
    return OllamaAdapter().from_wire_response(WireResponse(status, body), ctx)


def test_every_response_sample_has_an_expectation() -> None:
    assert sorted(p.name for p in wire_files("ollama", "response")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_response_sample_parses_to_the_recorded_content(name: str) -> None:
    model, text, calls, input_tokens, output_tokens, stop = EXPECTED[name]
    message = parse(read_bytes("ollama", name), model)
    assert message.status is MessageStatus.COMPLETE
    assert message.text() == text
    uses = message.tool_uses()
    assert [(u.name, u.input) for u in uses] == calls
    assert all(u.id.startswith("tu_") for u in uses)
    meta = message.metadata
    assert (meta.model, meta.provider, meta.stop_reason) == (f"ollama:{model}", "ollama", stop)
    assert (meta.usage.input_tokens, meta.usage.output_tokens) == (input_tokens, output_tokens)
    assert meta.usage.cached_input_tokens == 0 and meta.usage.cache_creation_input_tokens == 0
    recorded = orjson.loads(read_bytes("ollama", name))
    assert meta.provider_raw["durations_ns"]["total_duration"] == recorded["total_duration"]
    assert meta.provider_raw["created_at"] == recorded["created_at"]
    assert meta.provider_raw.get("done_reason") == recorded.get("done_reason")


def test_tool_calls_without_ids_get_fresh_canonical_ids_each_time() -> None:
    body = read_bytes("ollama", "response__chat_tool_calls.json")
    ids = ToolIdMap()
    first = parse(body, tool_ids=ids).tool_uses()[0].id
    second = parse(body, tool_ids=ids).tool_uses()[0].id
    assert first != second and len(ids) == 0  # no provider id, nothing to remember


def test_a_provider_id_when_a_server_sends_one_is_recorded_but_never_merges_two_calls() -> None:
    call = {"id": "call_x1", "function": {"name": "f", "arguments": {}}}
    body = orjson.dumps({"message": {"role": "assistant", "content": "", "tool_calls": [call]}, "done": True})
    ids = ToolIdMap()
    first = parse(body, tool_ids=ids).tool_uses()[0].id
    assert ids.lookup_canonical("ollama", "call_x1") == first
    assert parse(body, tool_ids=ids).tool_uses()[0].id != first  # a reused id is still a new call


def test_local_models_are_priced_at_zero_by_the_price_table() -> None:
    message = parse(read_bytes("ollama", "response__chat_text.json"), prices=default_price_table())
    usage = message.metadata.usage
    assert usage.cost_usd == Decimal("0") and usage.pricing_version is not None


def test_thinking_becomes_an_unsigned_thinking_block_bound_to_its_origin() -> None:
    body = orjson.dumps(
        {
            "model": "qwen3:8b",
            "message": {"role": "assistant", "content": "There are 3.", "thinking": "s-t-r-a-w-b-e-r-r-y"},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 18,
            "eval_count": 120,
        }
    )
    message = parse(body, "qwen3:8b")
    thinking, text = message.content
    assert isinstance(thinking, ThinkingBlock) and thinking.signature is None
    assert thinking.text == "s-t-r-a-w-b-e-r-r-y" and text.text == "There are 3."
    assert thinking.origin is not None and thinking.origin.matches("ollama", "ollama_chat", "qwen3:8b")


def test_done_reason_length_is_max_tokens() -> None:
    body = b'{"message":{"role":"assistant","content":"Once upon"},"done":true,"done_reason":"length","eval_count":2}'
    assert parse(body).metadata.stop_reason == "max_tokens"


def test_done_false_in_a_final_body_gives_a_partial_message() -> None:
    message = parse(b'{"message":{"role":"assistant","content":"Hal"},"done":false}')
    assert message.status is MessageStatus.PARTIAL and message.text() == "Hal"


def test_an_ndjson_body_from_a_server_that_ignored_stream_false_is_folded() -> None:
    body = b'{"message":{"content":"Hel"},"done":false}\n{"message":{"content":"lo"},"done":true,"eval_count":2}\n'
    message = parse(body)
    assert message.text() == "Hello" and message.status is MessageStatus.COMPLETE


def test_an_error_body_with_status_200_is_raised_as_its_class() -> None:
    with pytest.raises(ServerError, match="the model failed to generate a response"):
        parse(read_bytes("ollama", "error__body.json"))
    with pytest.raises(InvalidRequestError):
        parse(b'{"error":"model \\"nope\\" not found, try pulling it first"}')


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"<html>502 Bad Gateway</html>", "not JSON"),
        (b"[1, 2]", "expected a JSON object"),
        (b'{"model":"llama3.2","done":true}', "no `message` object"),
        (b"", "not JSON"),
    ],
)
def test_malformed_bodies_raise_naming_the_problem(body: bytes, problem: str) -> None:
    with pytest.raises(MalformedResponseError, match=problem) as caught:
        parse(body)
    assert caught.value.provider == "ollama"


def test_malformed_tool_call_gives_partial_not_complete() -> None:
    body = b'{"message":{"role":"assistant","content":"x","tool_calls":[{"function":{"arguments":{}}}]},"done":true}'
    message = parse(body)
    assert message.status is MessageStatus.PARTIAL and message.text() == "x"
    assert not any(isinstance(b, ToolUseBlock) for b in message.content)
