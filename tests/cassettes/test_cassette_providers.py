"""A cassette recorded from each provider's real wire traffic replays byte for byte, offline.

Record through httpx.MockTransport serving the shared recordings, replay with an HTTP client that
fails on any request: the real adapter and stream parsing run on the recorded bytes, the raw
chunks fed to the decoder are the same, and the canonical events and messages are equal.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mock_http import split
from support_servers import Reply

from metis_core.cassettes import find_secrets, read_cassette
from metis_core.errors import AuthenticationError, InvalidRequestError, RateLimitError

from .cassette_harness import (
    KEYS,
    WEATHER,
    Case,
    Spy,
    comparable,
    conversation,
    ndjson,
    recording_client,
    replay_client,
)

STREAMS = [
    Case("anthropic", "anthropic:claude-sonnet-4-5", Reply.fixture("anthropic", "stream__text_basic.sse")),
    Case("anthropic", "anthropic:claude-sonnet-4-5",
         Reply.fixture("anthropic", "stream__tool_use_input_json_delta.sse")),
    Case("openai", "openai:gpt-4.1", Reply.fixture("openai_chat", "stream__text_with_usage_chunk.sse")),
    Case("openai", "openai:gpt-4.1", Reply.fixture("openai_chat", "stream__parallel_tool_calls_with_usage.sse")),
    Case("openai_responses", "openai_responses:gpt-4.1", Reply.fixture("openai_responses", "stream__text.sse")),
    Case("openai_responses", "openai_responses:gpt-4.1",
         Reply.fixture("openai_responses", "stream__function_call_arguments_delta.sse")),
    Case("gemini", "gemini:gemini-2.5-flash", Reply.fixture("gemini", "stream__text.sse")),
    Case("gemini", "gemini:gemini-2.5-flash", Reply.fixture("gemini", "stream__function_call_thought_signature.sse")),
    Case("ollama", "ollama:llama3.2",
         ndjson("ollama", "docs_example__chat_stream_chunk.json", "docs_example__chat_stream_final_chunk.json")),
    Case("ollama", "ollama:llama3.2", ndjson("ollama", "docs_example__chat_stream_tool_call_chunk.json",
                                             "docs_example__chat_stream_tools_final_chunk.json")),
]
RESPONSES = [
    Case("anthropic", "anthropic:claude-sonnet-4-5", Reply.fixture("anthropic", "response__tool_use.json"), False),
    Case("openai", "openai:gpt-4.1", Reply.fixture("openai_chat", "response__text.json"), False),
    Case("openai_responses", "openai_responses:gpt-4.1",
         Reply.fixture("openai_responses", "response__function_call.json"), False),
    Case("gemini", "gemini:gemini-2.5-flash", Reply.fixture("gemini", "response__parallel_function_calls.json"), False),
    Case("ollama", "ollama:llama3.2", Reply.fixture("ollama", "response__chat_tool_calls.json"), False),
]
ERRORS = [
    ("anthropic", "anthropic:claude-sonnet-4-5", Reply.fixture("anthropic", "error__429_rate_limit_error.json", 429,
                                                               **{"retry-after": "7"}), RateLimitError),
    ("openai", "openai:gpt-4.1", Reply.fixture("openai_chat", "error__429_rate_limit_exceeded.json", 429),
     RateLimitError),
    ("openai_responses", "openai_responses:gpt-4.1",
     Reply.fixture("openai_responses", "error__400_decimal_below_min_value.json", 400), InvalidRequestError),
    ("gemini", "gemini:gemini-2.5-flash", Reply.fixture("gemini", "error__429_resource_exhausted_quota.json", 429),
     RateLimitError),
    ("ollama", "ollama:llama3.2", Reply.fixture("ollama", "error__body.json", 400), InvalidRequestError),
]
MESSAGES = conversation("What's the weather in Paris?")


@pytest.mark.parametrize("case", STREAMS, ids=lambda c: c.id)
def test_a_recorded_stream_replays_the_same_raw_chunks_through_the_real_parser(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "calls.jsonl"
    spy = Spy(monkeypatch)
    live, _ = recording_client(path, (case.provider, case.reply))
    live_events = list(live.stream(MESSAGES, case.model, tools=[WEATHER]))
    live.close()
    live_bytes = spy.take()

    [entry] = read_cassette(path)
    assert entry.stream and entry.response.chunks is not None
    assert [data for _, data in entry.response.chunks] == split(case.reply.body, 512)
    assert entry.response.stream_body == case.reply.body
    assert all(t >= 0 for t, _ in entry.response.chunks)

    replayed = replay_client(path)
    replay_events = list(replayed.stream(MESSAGES, case.model, tools=[WEATHER]))
    assert spy.take() == live_bytes == split(case.reply.body, 512)
    assert comparable(replay_events) == comparable(live_events)
    assert replay_events[-1].type == "message_complete"


@pytest.mark.parametrize("case", STREAMS[1::2], ids=lambda c: c.id)
async def test_an_async_replay_of_a_tool_call_stream_gives_the_same_tool_call(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "calls.jsonl"
    spy = Spy(monkeypatch)
    live, _ = recording_client(path, (case.provider, case.reply))
    live_events = [e async for e in live.astream(MESSAGES, case.model, tools=[WEATHER])]
    await live.aclose()
    live_bytes = spy.take()

    replayed = replay_client(path)
    replay_events = [e async for e in replayed.astream(MESSAGES, case.model, tools=[WEATHER])]
    assert spy.take() == live_bytes
    final = replay_events[-1].message  # type: ignore[union-attr]
    assert final.tool_uses(), "the recorded tool call comes back from the replay"
    assert comparable(replay_events) == comparable(live_events)


@pytest.mark.parametrize("case", RESPONSES, ids=lambda c: c.id)
def test_a_recorded_response_replays_its_exact_body(case: Case, tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    live, _ = recording_client(path, (case.provider, case.reply))
    live_message = live.complete(MESSAGES, case.model, tools=[WEATHER])

    [entry] = read_cassette(path)
    assert not entry.stream and entry.response.body == case.reply.body
    replay_message = replay_client(path).complete(MESSAGES, case.model, tools=[WEATHER])
    assert comparable(replay_message) == comparable(live_message)


@pytest.mark.parametrize(("provider", "model", "reply", "error"), ERRORS, ids=[e[1] for e in ERRORS])
async def test_a_recorded_error_is_raised_again_as_the_same_named_error(
    provider: str, model: str, reply: Reply, error: type[Exception], tmp_path: Path
) -> None:
    path = tmp_path / "calls.jsonl"
    live, _ = recording_client(path, (provider, reply))
    with pytest.raises(error) as recorded:
        await live.acomplete(MESSAGES, model)
    with pytest.raises(error) as replayed:
        await replay_client(path).acomplete(MESSAGES, model)
    assert str(replayed.value) == str(recorded.value)
    assert getattr(replayed.value, "status", None) == getattr(recorded.value, "status", None)
    assert getattr(replayed.value, "retry_after", None) == getattr(recorded.value, "retry_after", None)


def test_no_key_appears_in_any_cassette_of_any_provider(tmp_path: Path) -> None:
    for index, case in enumerate([*STREAMS, *RESPONSES]):
        path = tmp_path / f"c{index}.jsonl"
        live, script = recording_client(path, (case.provider, case.reply))
        if case.stream:
            list(live.stream(MESSAGES, case.model, tools=[WEATHER]))
        else:
            live.complete(MESSAGES, case.model, tools=[WEATHER])
        sent_headers = script.requests[0][3]
        text = path.read_text(encoding="utf-8")
        if case.provider != "ollama":
            assert KEYS[case.provider] in str(sent_headers) + str(script.requests[0]), "the key was sent"
        assert find_secrets(text, KEYS.values()) == [], path
        assert "<scrubbed>" in text or case.provider == "ollama"


def test_an_openrouter_stream_with_comments_replays_identically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reply = Reply.fixture("openrouter", "stream__reasoning_details_deltas.sse")
    path = tmp_path / "calls.jsonl"
    spy = Spy(monkeypatch)
    live, _ = recording_client(path, ("openrouter", reply))
    model = "openrouter:anthropic/claude-sonnet-4.5"
    live_events = list(live.stream(MESSAGES, model))
    live_bytes = spy.take()
    replay_events = list(replay_client(path).stream(MESSAGES, model))
    assert spy.take() == live_bytes and b"".join(live_bytes) == reply.body
    assert comparable(replay_events) == comparable(live_events)


def test_a_stream_cut_off_mid_body_is_replayed_cut_off_at_the_same_byte(tmp_path: Path) -> None:
    import httpx
    from mock_http import ChunkedBody, serve

    body = Reply.fixture("anthropic", "stream__text_basic.sse").body
    cut = split(body, 37)[:-3]
    path = tmp_path / "calls.jsonl"
    response = httpx.Response(200, headers={"content-type": "text/event-stream"},
                              stream=ChunkedBody(cut, fail=httpx.ReadError("connection reset")))
    live, _ = serve(response, record=path)
    live_events = list(live.stream(MESSAGES, "anthropic:claude-sonnet-4-5"))
    [entry] = read_cassette(path)
    assert entry.response.chunks is not None and [d for _, d in entry.response.chunks] == cut
    assert entry.response.error is not None and "connection dropped" in entry.response.error

    replay_events = list(replay_client(path).stream(MESSAGES, "anthropic:claude-sonnet-4-5"))
    assert [e.type for e in replay_events] == [e.type for e in live_events]
    assert live_events[-1].message.status == replay_events[-1].message.status  # type: ignore[union-attr]
    assert any(e.type == "error" for e in replay_events)


def test_a_key_echoed_back_in_an_error_body_is_scrubbed_from_the_cassette(tmp_path: Path) -> None:
    body = (b'{"error": {"message": "Incorrect API key provided: ' + KEYS["openai"].encode()
            + b'.", "type": "invalid_request_error", "code": "invalid_api_key"}}')
    path = tmp_path / "calls.jsonl"
    live, _ = recording_client(path, ("openai", Reply(401, body, {"content-type": "application/json"})))
    with pytest.raises(AuthenticationError):
        live.complete(MESSAGES, "openai:gpt-4.1")
    text = path.read_text(encoding="utf-8")
    assert KEYS["openai"] not in text and find_secrets(text, KEYS.values()) == []
    with pytest.raises(AuthenticationError) as replayed:
        replay_client(path).complete(MESSAGES, "openai:gpt-4.1")
    assert KEYS["openai"] not in str(replayed.value)


def test_a_key_the_network_split_across_stream_chunks_is_scrubbed_and_the_rest_keeps_its_timing(
    tmp_path: Path,
) -> None:
    import httpx
    from mock_http import ChunkedBody, serve

    key = KEYS["anthropic"]
    body = Reply.fixture("anthropic", "stream__text_basic.sse").body
    marker = body.index(b'"text":"') + len(b'"text":"')
    leaked = body[:marker] + b"your key " + key.encode() + b" " + body[marker:]  # a proxy echoing the key
    cut = leaked.index(key.encode()) + len(key) // 2
    pieces = [*split(leaked[:cut], 37), *split(leaked[cut:], 37)]  # one boundary falls inside the key
    path = tmp_path / "calls.jsonl"
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=ChunkedBody(pieces))
    live, _ = serve(response, record=path)
    list(live.stream(MESSAGES, "anthropic:claude-sonnet-4-5"))
    text = path.read_text(encoding="utf-8")
    assert key not in text and key[: len(key) // 2] not in text and find_secrets(text, KEYS.values()) == []
    [entry] = read_cassette(path)
    assert entry.response.chunks is not None
    recorded = [d for _, d in entry.response.chunks]
    assert b"".join(recorded) == leaked.replace(key.encode(), b"<scrubbed>")
    start = leaked.index(key.encode())
    offsets = [sum(len(p) for p in pieces[:i]) for i in range(len(pieces))]
    spanned = [i for i, at in enumerate(offsets) if at < start + len(key) and at + len(pieces[i]) > start]
    untouched = [pieces[i] for i in range(len(pieces)) if i not in spanned]
    assert len(recorded) == len(untouched) + 1  # only the chunks the key spanned were joined, into one
    assert [d for d in recorded if d in untouched] == untouched


def test_whole_stream_scrubbing_merges_only_the_stretch_a_secret_spans() -> None:
    from metis_core.cassettes import Scrubber

    scrubber = Scrubber(known=["supersecretvalue"])
    chunks = [(0.0, b"a "), (1.0, b"super"), (2.0, b"secret"), (3.0, b"value b"), (4.0, b" c")]
    assert scrubber.chunks(chunks) == [(0.0, b"a "), (1.0, b"<scrubbed> b"), (4.0, b" c")]
    clean = [(0.0, b"nothing"), (1.0, b" to hide")]
    assert scrubber.chunks(clean) == clean
    whole = [(0.0, b"x supersecretvalue y")]
    assert scrubber.chunks(whole) == [(0.0, b"x <scrubbed> y")]
