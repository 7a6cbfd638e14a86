"""client.stream / astream_output with output=: lenient partial values as they arrive, then one strict final.

Served over httpx.MockTransport in network-sized pieces: the recorded Anthropic structured-output
stream (`[12345,67890]`, native json_schema), the recorded Anthropic tool_use stream as the forced tool
of a model without native structured output, and a retry after a streamed violation.
"""

from __future__ import annotations

from typing import Any

import pytest
from fixture_files import read_bytes
from mock_http import serve, sse_response
from structured_wire import WIRES, anthropic_stream

from metis_core.errors import OutputValidationError
from metis_core.messages.message import user_message
from metis_core.structured import OutputPolicy, output_spec
from metis_core.structured.stream import PartialOutput

NUMBERS = {"title": "numbers", "type": "array", "items": {"type": "integer"}}
PROMPT = [user_message("numbers please")]


def test_partial_arrays_grow_then_the_final_value_is_validated_strictly() -> None:
    client, server = serve(sse_response(anthropic_stream(), chunk_size=29))
    updates = list(client.stream(PROMPT, "anthropic:claude-sonnet-4-5", output=NUMBERS))
    assert [u.value for u in updates if not u.final] == [[12345], [12345, 67890]]
    final = updates[-1]
    assert final.final and final.value == [12345, 67890] and final.result is not None
    assert final.result.mode == "json_schema" and len(server.requests) == 1


def test_a_forced_tools_input_streams_as_partial_objects() -> None:
    weather = output_spec({"type": "object", "properties": {"location": {"type": "string"}},
                           "required": ["location"]}, name="get_weather")
    client, _server = serve(sse_response(read_bytes("anthropic", "stream__tool_use_input_json_delta.sse")))
    updates = list(client.stream(PROMPT, "anthropic:claude-3-5-haiku-latest", output=weather))
    partials = [u.value for u in updates if not u.final]
    assert partials[0] == {"location": "P"} and partials[-1] == {"location": "Paris"}
    assert updates[-1].final and updates[-1].value == {"location": "Paris"}
    assert updates[-1].result is not None and updates[-1].result.mode == "tool"


def test_a_streamed_violation_is_retried_and_partials_restart_with_the_attempt() -> None:
    client, server = serve(sse_response(anthropic_stream('["a", "b"]')), sse_response(anthropic_stream()))
    updates = list(client.stream(PROMPT, "anthropic:claude-sonnet-4-5", output=NUMBERS))
    assert {u.attempt for u in updates} == {1, 2}
    assert updates[-1].final and updates[-1].attempt == 2 and updates[-1].value == [12345, 67890]
    assert len(server.requests) == 2


def test_a_stream_that_never_validates_raises_after_its_budget() -> None:
    client, server = serve(sse_response(anthropic_stream('["a"]')), sse_response(anthropic_stream('["b"]')))
    with pytest.raises(OutputValidationError):
        list(client.stream(PROMPT, "anthropic:claude-sonnet-4-5", output=NUMBERS,
                           output_policy=OutputPolicy(max_retries=1)))
    assert len(server.requests) == 2


async def test_async_streaming_and_acomplete_take_output_too() -> None:
    client, server = serve(sse_response(anthropic_stream()))
    updates: list[PartialOutput] = [u async for u in client.astream_output(
        PROMPT, "anthropic:claude-sonnet-4-5", output=NUMBERS)]
    assert updates[-1].final and updates[-1].value == [12345, 67890] and len(server.requests) == 1
    wire = next(w for w in WIRES if w.model == "openai:gpt-4o")
    client, _server = serve(wire.answer('{"numbers": [1, 2]}'), provider="openai")
    result: Any = await client.acomplete(PROMPT, "openai:gpt-4o", output={
        "type": "object", "properties": {"numbers": NUMBERS}, "required": ["numbers"]})
    assert result.value == {"numbers": [1, 2]}
