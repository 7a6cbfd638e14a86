"""A request the cassette does not hold fails with CassetteMissError naming the closest recording.

Also: the key ignores what changes run to run (message ULIDs, timestamps, tool-call ids), entries
of one key are served in recording order (a 429 then its retry), configured fields are scrubbed,
and a malformed cassette names its bad line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from session_samples import assistant, tool_result
from support_servers import Reply

from metis_core.adapters.base import AdapterOptions
from metis_core.cassettes import canonical_request, read_cassette, request_key
from metis_core.errors import CassetteFormatError, CassetteMissError, MetisError
from metis_core.messages import Message, Role, TextBlock, ToolDefinition, ToolUseBlock
from metis_core.transport.retry import RetryPolicy

from .cassette_harness import WEATHER, conversation, recording_client, replay_client

MODEL = "anthropic:claude-sonnet-4-5"
TEXT = Reply.fixture("anthropic", "stream__text_basic.sse")


def recorded(tmp_path: Path) -> Path:
    path = tmp_path / "calls.jsonl"
    live, _ = recording_client(path, ("anthropic", TEXT))
    list(live.stream(conversation("What's the weather in Paris?"), MODEL, tools=[WEATHER]))
    return path


def miss(path: Path, messages: list[Message], model: str = MODEL,
         tools: list[ToolDefinition] | None = None) -> CassetteMissError:
    with pytest.raises(CassetteMissError) as caught:
        list(replay_client(path).stream(messages, model, tools=[WEATHER] if tools is None else tools))
    assert isinstance(caught.value, MetisError)
    return caught.value


def test_a_new_message_is_named_as_the_difference(tmp_path: Path) -> None:
    error = miss(recorded(tmp_path), conversation("What's the weather in Paris?", "And in Rome?"))
    assert error.closest_index == 0
    assert error.differences == ["new message #1: user: 'And in Rome?'"]
    assert "closest recorded request is call #0" in str(error) and "--metis-record" in str(error)


def test_a_changed_message_is_named_with_both_versions(tmp_path: Path) -> None:
    error = miss(recorded(tmp_path), conversation("What's the weather in Oslo?"))
    assert error.differences == [
        "changed message #0: recorded user: \"What's the weather in Paris?\"; "
        "requested user: \"What's the weather in Oslo?\""
    ]


def test_a_changed_tool_schema_is_named(tmp_path: Path) -> None:
    schema = {**WEATHER.input_schema, "properties": {"location": {"type": "string"}, "units": {"type": "string"}}}
    changed = WEATHER.model_copy(update={"input_schema": schema})
    error = miss(recorded(tmp_path), conversation("What's the weather in Paris?"), tools=[changed])
    assert error.differences == ["changed tool schema of 'get_weather'"]


def test_another_model_is_named(tmp_path: Path) -> None:
    error = miss(recorded(tmp_path), conversation("What's the weather in Paris?"), model="anthropic:claude-haiku-4-5")
    assert error.differences == [
        "other model: recorded 'anthropic:claude-sonnet-4-5', requested 'anthropic:claude-haiku-4-5'"]


def test_a_changed_option_is_named(tmp_path: Path) -> None:
    path = recorded(tmp_path)
    with pytest.raises(CassetteMissError) as caught:
        list(replay_client(path).stream(conversation("What's the weather in Paris?"), MODEL, tools=[WEATHER],
                                        options=AdapterOptions(model=MODEL, temperature=0.2)))
    assert caught.value.differences == ["changed option temperature: recorded None, requested 0.2"]


def test_an_empty_cassette_says_it_holds_no_calls(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    recording_client(path)[0].close()
    error = miss(path, conversation("hi"))
    assert error.closest_index is None and "holds no calls" in str(error)


def _history(call_id: str) -> list[Message]:
    return [
        Message(role=Role.USER, content=[TextBlock(text="weather?")]),
        assistant("s", [ToolUseBlock(id=call_id, name="get_weather", input={"location": "Paris"})]),
        tool_result("s", call_id, "sunny"),
    ]


def test_the_key_ignores_message_ids_timestamps_and_tool_call_ids() -> None:
    first = canonical_request(MODEL, _history("tu_01AAAAAAAAAAAAAAAAAAAAAAAA"), [WEATHER], {"session_id": "s1"})
    second = canonical_request(MODEL, _history("toolu_other"), [WEATHER], {"session_id": "s2"})
    assert request_key(first) == request_key(second)
    assert first["messages"][1]["content"][0]["id"] == "call_1"
    assert request_key(first) != request_key(canonical_request(MODEL, _history("x"), [], None))


def test_entries_of_one_key_replay_in_recording_order_so_a_retry_gets_its_recorded_answer(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    limited = Reply.fixture("anthropic", "error__429_rate_limit_error.json", 429, **{"retry-after": "0"})
    live, script = recording_client(path, ("anthropic", limited))
    script.script("anthropic", [Reply.fixture("anthropic", "response__text.json")])
    live.retry = RetryPolicy(max_retries=1, base_delay=0.0)
    answer = live.complete(conversation("hi"), MODEL)
    assert [e.response.status for e in read_cassette(path)] == [429, 200]

    replayed = replay_client(path)
    replayed.retry = RetryPolicy(max_retries=1, base_delay=0.0)
    assert replayed.complete(conversation("hi"), MODEL).text() == answer.text()


def test_configured_fields_are_scrubbed_from_the_wire_request(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    live, script = recording_client(path, ("anthropic", TEXT), scrub_fields=["user_id"])
    options = AdapterOptions(model=MODEL, extra={"metadata": {"user_id": "alice@example.com"}})
    list(live.stream(conversation("hi"), MODEL, options=options))
    assert "alice@example.com" in str(script.requests[0][2])
    [entry] = read_cassette(path)
    assert b"alice@example.com" not in entry.request_body
    assert b'"user_id":"<scrubbed>"' in entry.request_body
    assert "alice@example.com" not in path.read_text(encoding="utf-8")
    replayed = list(replay_client(path, scrub_fields=["user_id"]).stream(conversation("hi"), MODEL, options=options))
    assert replayed[-1].type == "message_complete"


def test_a_malformed_line_is_named(tmp_path: Path) -> None:
    path = recorded(tmp_path)
    path.write_bytes(path.read_bytes() + b"{not json\n")
    with pytest.raises(CassetteFormatError, match=r"calls.jsonl:3 is not a cassette entry"):
        replay_client(path)


def test_a_missing_cassette_says_how_to_record_one(tmp_path: Path) -> None:
    with pytest.raises(CassetteFormatError, match="record one first"):
        replay_client(tmp_path / "nothing.jsonl")


def test_record_and_replay_together_are_refused(tmp_path: Path) -> None:
    from metis_core.adapters.client import ModelClient

    with pytest.raises(ValueError, match="not record and replay"):
        ModelClient(record=tmp_path / "a.jsonl", replay=tmp_path / "b.jsonl")


def test_a_replayed_retry_does_not_wait_out_the_recorded_retry_after(tmp_path: Path) -> None:
    import time

    path = tmp_path / "calls.jsonl"
    limited = Reply.fixture("anthropic", "error__429_rate_limit_error.json", 429, **{"retry-after": "0"})
    live, script = recording_client(path, ("anthropic", limited))
    script.script("anthropic", [Reply.fixture("anthropic", "response__text.json")])
    live.retry = RetryPolicy(max_retries=1, base_delay=0.0, jitter=0.0)
    live.complete(conversation("hi"), MODEL)
    text = path.read_text(encoding="utf-8").replace('"retry-after":"0"', '"retry-after":"30"')
    path.write_text(text, encoding="utf-8")

    replayed = replay_client(path, retry=RetryPolicy(max_retries=1))
    started = time.perf_counter()
    assert replayed.complete(conversation("hi"), MODEL).text()
    assert time.perf_counter() - started < 5, "the recorded 30 s retry-after was not waited out again"
