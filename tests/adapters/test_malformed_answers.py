"""Named regressions for malformed answers: each fails as a bare KeyError/TypeError
without the parse boundary; with it, a MalformedResponseError naming the event, or a stream ending
PARTIAL with the text so far and exactly one message_complete."""

from __future__ import annotations

import httpx
import pytest
from fixture_files import read_bytes
from mock_http import ChunkedBody, serve, split

from metis_core.adapters.anthropic.errors import classify_error, error_class_name
from metis_core.errors import ErrorClass, MalformedResponseError, MetisError, ProviderError
from metis_core.messages import MessageComplete, MessageStatus, StreamError, TextDelta, user_message
from metis_core.transport.wire import WireResponse

MODEL = "anthropic:claude-sonnet-4-5"


def _stream(body: bytes) -> list[object]:
    client, _ = serve(httpx.Response(200, stream=ChunkedBody(split(body))))
    return list(client.stream([user_message("hi")], MODEL))


def test_a_delta_without_index_mid_stream_ends_partial_with_the_text_so_far() -> None:
    body = read_bytes("anthropic", "stream__text_basic.sse")
    broken = body.replace(b'"index":0,"delta":{"type":"text_delta","text":" there"}', b'"delta":{"type":"text_delta"}')
    events = _stream(broken)
    completes = [e for e in events if isinstance(e, MessageComplete)]
    assert len(completes) == 1 and events[-1] is completes[0]
    message = completes[0].message
    assert message.metadata.status is MessageStatus.PARTIAL and message.text() == "Hello"
    errors = [e for e in events if isinstance(e, StreamError)]
    assert len(errors) == 1 and errors[0].error_class == "other"
    assert "stream event 'content_block_delta'" in errors[0].message and "KeyError" in errors[0].message
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hello"]


async def test_a_malformed_event_keeps_the_deltas_its_network_piece_gave_before_it() -> None:
    # the whole body arrives as one piece: "Hello" is read from it before the broken event, and is still told
    body = read_bytes("anthropic", "stream__text_basic.sse")
    broken = body.replace(b'"index":0,"delta":{"type":"text_delta","text":" there"}', b'"delta":{"type":"text_delta"}')
    client, _ = serve(httpx.Response(200, stream=ChunkedBody([broken])))
    aclient, _ = serve(httpx.Response(200, stream=ChunkedBody([broken])))
    told = [list(client.stream([user_message("hi")], MODEL)),
            [event async for event in aclient.astream([user_message("hi")], MODEL)]]
    for events in told:
        assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hello"]
        assert [type(e) for e in events[-2:]] == [StreamError, MessageComplete]
        assert isinstance(events[-1], MessageComplete) and events[-1].message.text() == "Hello"


def test_a_malformed_first_event_is_raised_as_malformed_response() -> None:
    body = read_bytes("anthropic", "stream__text_basic.sse").replace(b'"index":0,', b'"index":[0],', 1)
    with pytest.raises(MalformedResponseError, match="content_block_start"):
        _stream(body)


@pytest.mark.parametrize("usage", [b'"output_tokens":18446744073709551616', b'"output_tokens":[[1]]'])
def test_token_counts_past_any_real_call_are_a_named_error(usage: bytes) -> None:
    body = read_bytes("anthropic", "response__text.json").replace(b'"output_tokens": 25', usage)
    client, _ = serve(httpx.Response(200, content=body))
    with pytest.raises(MalformedResponseError, match="unexpected shape"):
        client.complete([user_message("hi")], MODEL)


def test_a_2_to_the_64_usage_in_a_stream_keeps_the_text() -> None:
    body = read_bytes("anthropic", "stream__text_basic.sse").replace(
        b'"usage":{"output_tokens":6}', b'"usage":{"output_tokens":18446744073709551616}'
    )
    events = _stream(body)
    final = events[-1]
    assert isinstance(final, MessageComplete) and final.message.text() == "Hello there!"
    assert final.message.metadata.status is MessageStatus.PARTIAL


def test_5000_deep_nesting_is_a_named_error_not_a_recursion_crash() -> None:
    deep = b"[" * 5000 + b"]" * 5000
    body = read_bytes("anthropic", "response__text.json").replace(b'"stop_sequence": null', b'"stop_sequence": ' + deep)
    client, _ = serve(httpx.Response(200, content=body))
    with pytest.raises(MalformedResponseError):
        client.complete([user_message("hi")], MODEL)
    tool_args = b'{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":' + b"[" * 1000 + b"]" * 1000 + b"}}"
    nested = body.replace(b'"content": [', b'"content": [' + tool_args + b",", 1).replace(deep, b"null")
    client, _ = serve(httpx.Response(200, content=nested))
    try:
        message = client.complete([user_message("hi")], MODEL)
    except MetisError:
        return
    assert message.metadata.status is not MessageStatus.COMPLETE and not message.tool_uses()


@pytest.mark.parametrize("body", [
    b'{"type":"error","error":"overloaded"}',
    b'{"type":"error","error":{"type":["rate_limit_error"],"message":{"text":"x"}}}',
    b'{"type":"error","error":{"type":"invalid_request_error","message":null},"request_id":17}',
    b'{"error":{"type":{"nested":true}}}',
    b"[1,2,3]",
    b'"just a string"',
    b"",
    b"\xff\xfe\x00",
])
@pytest.mark.parametrize("status", [400, 401, 429, 500, 529])
def test_the_anthropic_error_classifier_never_crashes(body: bytes, status: int) -> None:
    error = classify_error(WireResponse(status=status, body=body))
    assert isinstance(error, ProviderError) and error.status == status


@pytest.mark.parametrize("error", ["overloaded", ["x"], 7, None, {"type": ["x"]}, {"message": {"a": 1}}])
def test_an_odd_error_object_in_a_stream_is_classified(error: object) -> None:
    error_class, message = error_class_name(error)
    assert isinstance(error_class, ErrorClass) and isinstance(message, str)
