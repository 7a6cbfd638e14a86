"""Structured output through the gateway: the official SDKs' structured asks honoured on another provider.

An OpenAI client's `response_format` (Chat, `chat.completions.parse`) and `text.format` (Responses,
`responses.parse`), and an Anthropic client's `output_config.format` (`messages.parse`) or forced
single tool, each answered by the other provider's wire (recorded bodies with the answer text set),
through the same StructuredRun: recovery, corrective retry, refusal, exhaustion, every attempt on
the record and charged to the key.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import anthropic
import openai
import pytest
from cli.replay_server import ANTHROPIC, OPENAI, Reply
from pydantic import BaseModel
from structured_wire import WIRES, Wire
from typer.testing import CliRunner

from metis_core.cli.app import app

from .gateway_harness import GatewayHarness

CLAUDE = next(w for w in WIRES if w.model == "anthropic:claude-sonnet-4-5")  # output_config.format
CLAUDE_TOOL = next(w for w in WIRES if w.mode == "tool")  # a forced tool
GPT = next(w for w in WIRES if w.key == "openai_chat")
GOOD = '{"age": 22, "available": false}'


class Person(BaseModel):
    age: int
    available: bool


def reply(wire: Wire, text: str) -> Reply:
    return Reply(200, wire.answer(text).content, "application/json")


def openai_client(gateway: GatewayHarness, token: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0)


def anthropic_client(gateway: GatewayHarness, token: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)


def parse_chat(gateway: GatewayHarness, token: str, model: str = CLAUDE.model, **more: Any) -> Any:
    return openai_client(gateway, token).chat.completions.parse(
        model=model, messages=[{"role": "user", "content": "Ollama is 22 and busy."}], response_format=Person, **more)


def test_an_openai_response_format_is_answered_by_claude_output_config(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(ANTHROPIC, reply(CLAUDE, GOOD))
    answer = parse_chat(gateway, token)
    message = answer.choices[0].message
    assert message.parsed == Person(age=22, available=False) and message.refusal is None
    assert json.loads(message.content) == {"age": 22, "available": False}
    assert answer.choices[0].finish_reason == "stop" and answer.usage.prompt_tokens == 705
    [seen] = gateway.upstream.bodies(ANTHROPIC)
    assert seen["output_config"]["format"]["schema"]["required"] == ["age", "available"]
    assert "response_format" not in seen
    [completed] = gateway.of_type("llm.call_completed")
    assert completed.payload["inbound_shape"] == "openai" and completed.payload["model"] == CLAUDE.model


def test_an_openai_response_format_is_answered_by_a_forced_tool_on_an_older_claude(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    body = json.loads(CLAUDE_TOOL.tool_answer("Person", {"age": 22, "available": False}).content)
    gateway.upstream.script(ANTHROPIC, Reply(200, json.dumps(body).encode(), "application/json"))
    message = parse_chat(gateway, token, CLAUDE_TOOL.model).choices[0].message
    assert message.parsed == Person(age=22, available=False) and not message.tool_calls
    [seen] = gateway.upstream.bodies(ANTHROPIC)
    assert seen["tool_choice"] == {"type": "tool", "name": "Person"}


def test_an_anthropic_output_format_is_answered_by_openai_response_format(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(OPENAI, reply(GPT, GOOD))
    answer = anthropic_client(gateway, token).messages.parse(
        model=GPT.model, max_tokens=200, messages=[{"role": "user", "content": "Ollama is 22 and busy."}],
        output_format=Person)
    assert answer.parsed_output == Person(age=22, available=False)
    assert answer.stop_reason == "end_turn" and answer.content[0].type == "text"
    [seen] = gateway.upstream.bodies(OPENAI)
    assert seen["response_format"]["type"] == "json_schema"
    assert seen["response_format"]["json_schema"]["schema"]["required"] == ["age", "available"]


def test_an_anthropic_forced_single_tool_is_answered_as_tool_use_by_openai(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(OPENAI, reply(GPT, GOOD))
    tool: Any = {"name": "record_person", "description": "Record a person.", "input_schema": {
        "type": "object", "properties": {"age": {"type": "integer"}, "available": {"type": "boolean"}},
        "required": ["age", "available"]}}
    answer = anthropic_client(gateway, token).messages.create(
        model=GPT.model, max_tokens=200, messages=[{"role": "user", "content": "Ollama is 22 and busy."}],
        tools=[tool], tool_choice={"type": "tool", "name": "record_person"})
    [block] = answer.content
    assert block.type == "tool_use" and block.name == "record_person"
    assert block.input == {"age": 22, "available": False} and block.id.startswith("toolu_")
    assert answer.stop_reason == "tool_use"
    [seen] = gateway.upstream.bodies(OPENAI)
    assert seen["response_format"]["json_schema"]["name"] == "record_person" and "tools" not in seen


def test_a_fenced_answer_is_recovered_and_recorded(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(ANTHROPIC, reply(CLAUDE, f"Sure! Here it is:\n```json\n{GOOD}\n```\nAnything else?"))
    assert parse_chat(gateway, token).choices[0].message.parsed == Person(age=22, available=False)
    assert len(gateway.upstream.requests) == 1  # a recovery is not a retry
    [recovered] = gateway.of_type("llm.output_recovered")
    [completed] = gateway.of_type("llm.call_completed")
    assert recovered.payload["path"] == "markdown-fence" and recovered.payload["byte_offset"] > 0
    assert recovered.parent_event_id == completed.id


def test_a_violation_is_retried_with_a_correction_and_every_attempt_is_charged(gateway: GatewayHarness) -> None:
    one_call = Decimal("0.002490")  # 705 input tokens at $3/M and 25 output at $15/M (sonnet 4.5)
    # each attempt first holds its worst case (~12 input and 100 output tokens: $0.001536) in the budget
    key_id, token = gateway.issue(budget_usd=one_call * Decimal("2.5"), budget_period="day")
    gateway.upstream.script(ANTHROPIC, reply(CLAUDE, '{"age": "twenty-two", "available": false}'), reply(CLAUDE, GOOD))
    answer = parse_chat(gateway, token, max_tokens=100)
    assert answer.choices[0].message.parsed == Person(age=22, available=False)
    assert answer.usage.prompt_tokens == 2 * 705 and answer.usage.completion_tokens == 2 * 25
    first, second = gateway.upstream.bodies(ANTHROPIC)
    correction = second["messages"][-1]["content"][-1]["text"]  # Anthropic merges it into the user turn
    assert "$.age" in correction and "twenty-two" not in correction and first["messages"] != second["messages"]
    [retried] = gateway.of_type("llm.output_retried")
    assert retried.payload["reason"] == "schema-violation" and retried.payload["attempt"] == 2
    calls = gateway.of_type("llm.call_completed")
    assert len(calls) == 2 and retried.parent_event_id == calls[0].id
    [turn] = gateway.of_type("turn.completed")
    assert turn.payload["llm_call_count"] == 2 and turn.payload["total_input_tokens"] == 2 * 705
    window = int(datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0).timestamp())
    assert gateway.service.key_store.spent("gateway_key", key_id, window) == one_call * 2
    with pytest.raises(openai.RateLimitError):  # both attempts counted: the next one's worst case does not fit
        parse_chat(gateway, token, max_tokens=100)


def test_a_refusal_comes_back_in_openai_refusal_field_and_is_not_retried(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(ANTHROPIC, Reply(200, CLAUDE.refusal().content, "application/json"))
    answer = parse_chat(gateway, token)
    message = answer.choices[0].message
    assert message.refusal == "This request was refused due to policy."
    assert message.parsed is None and message.content is None and answer.choices[0].finish_reason == "stop"
    assert len(gateway.upstream.requests) == 1
    [refused] = gateway.of_type("llm.output_refused")
    assert refused.payload["safety_category"] == "cyber"


def test_a_refusal_comes_back_as_an_anthropic_refusal_stop(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(OPENAI, Reply(200, GPT.refusal().content, "application/json"))
    answer = anthropic_client(gateway, token).messages.create(
        model=GPT.model, max_tokens=200, messages=[{"role": "user", "content": "hi"}],
        output_config={"format": {"type": "json_schema", "schema": Person.model_json_schema()}})
    assert answer.stop_reason == "refusal"
    assert answer.content[0].type == "text" and answer.content[0].text
    assert len(gateway.upstream.requests) == 1


def test_exhaustion_is_the_openai_shape_error(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(ANTHROPIC, *[reply(CLAUDE, '{"age": "old"}') for _ in range(3)])
    with pytest.raises(openai.APIStatusError) as caught:
        parse_chat(gateway, token)
    assert caught.value.status_code == 502
    error = caught.value.body
    assert isinstance(error, dict) and "after 3 attempt(s)" in error["message"] and "old" not in error["message"]
    assert len(gateway.upstream.requests) == 3
    [exhausted] = gateway.of_type("llm.output_exhausted")
    assert exhausted.payload["total_attempts"] == 3 and exhausted.payload["final_reason"] == "schema-violation"
    assert len(gateway.of_type("llm.call_completed")) == 3


def test_an_exhausted_ask_keeps_every_priced_attempt_in_the_store_as_in_the_trace(
    gateway: GatewayHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    key_id, token = gateway.issue(budget_usd=Decimal(1), budget_period="day")
    gateway.upstream.script(ANTHROPIC, *[reply(CLAUDE, '{"age": "old"}') for _ in range(3)])
    with pytest.raises(openai.APIStatusError):
        parse_chat(gateway, token)
    calls = gateway.of_type("llm.call_completed")
    traced = sum((Decimal(str(c.payload["cost_usd"])) for c in calls), Decimal(0))
    assert len(calls) == 3 and traced > 0
    [turn] = gateway.of_type("turn.completed")
    assert Decimal(str(turn.payload["total_cost_usd"])) == traced and turn.payload["stop_reason"] == "error"
    [kept] = [m for m in gateway.runtime.store.load_messages(turn.session_id) if m.role.value == "assistant"]
    assert kept.metadata.status.value == "error" and (kept.metadata.model_extra or {})["gateway_key_id"] == key_id
    monkeypatch.setenv("METIS_HOME", str(gateway.runtime.home))
    result = CliRunner().invoke(app, ["cost", "--session", turn.session_id, "--json"])
    assert result.exit_code == 0, result.output
    total = json.loads(result.output)["total"]
    assert total["calls"] == 3 and Decimal(total["cost_usd"]) == traced
    assert gateway.spent_today(key_id) == traced


def test_exhaustion_is_the_anthropic_shape_error(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(OPENAI, *[reply(GPT, "no JSON here") for _ in range(3)])
    with pytest.raises(anthropic.APIStatusError) as caught:
        anthropic_client(gateway, token).messages.parse(
            model=GPT.model, max_tokens=200, messages=[{"role": "user", "content": "hi"}], output_format=Person)
    assert caught.value.status_code == 502
    assert caught.value.body["error"]["type"] == "api_error"  # type: ignore[index]


def test_responses_text_format_is_answered_by_claude(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(ANTHROPIC, reply(CLAUDE, GOOD))
    answer = openai_client(gateway, token).responses.parse(model=CLAUDE.model, input="Ollama is 22 and busy.",
                                                           text_format=Person)
    assert answer.output_parsed == Person(age=22, available=False)
    assert "output_config" in gateway.upstream.bodies(ANTHROPIC)[0]


def test_a_streamed_ask_streams_the_validated_json_once(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(ANTHROPIC, reply(CLAUDE, '{"age": "x", "available": false}'), reply(CLAUDE, GOOD))
    with openai_client(gateway, token).chat.completions.stream(
            model=CLAUDE.model, messages=[{"role": "user", "content": "hi"}], response_format=Person) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.parsed == Person(age=22, available=False)
    assert [bool(b.get("stream")) for b in gateway.upstream.bodies(ANTHROPIC)] == [False, False]
    assert len(gateway.of_type("llm.output_retried")) == 1


def test_a_streamed_anthropic_ask_is_one_text_block(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(OPENAI, reply(GPT, GOOD))
    with anthropic_client(gateway, token).messages.stream(
            model=GPT.model, max_tokens=200, messages=[{"role": "user", "content": "hi"}],
            output_format=Person) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert json.loads(text) == {"age": 22, "available": False}
    assert final.parsed_output == Person(age=22, available=False)


def test_a_streamed_refusal_is_the_openai_refusal_delta(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(ANTHROPIC, Reply(200, CLAUDE.refusal().content, "application/json"))
    with openai_client(gateway, token).chat.completions.stream(
            model=CLAUDE.model, messages=[{"role": "user", "content": "hi"}], response_format=Person) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.refusal == "This request was refused due to policy."
    assert final.choices[0].message.parsed is None


def test_a_responses_refusal_is_a_refusal_content_part(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(ANTHROPIC, Reply(200, CLAUDE.refusal().content, "application/json"))
    answer = openai_client(gateway, token).responses.parse(model=CLAUDE.model, input="hi", text_format=Person)
    item: Any = answer.output[0]
    [part] = item.content
    assert part.type == "refusal" and part.refusal == "This request was refused due to policy."
    assert answer.output_parsed is None


def test_a_streamed_forced_tool_is_one_whole_tool_use_block(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(OPENAI, reply(GPT, GOOD))
    tool: Any = {"name": "record_person", "description": "Record a person.",
            "input_schema": Person.model_json_schema()}
    with anthropic_client(gateway, token).messages.stream(
            model=GPT.model, max_tokens=200, messages=[{"role": "user", "content": "hi"}],
            tools=[tool], tool_choice={"type": "tool", "name": "record_person"}) as stream:
        final = stream.get_final_message()
    [block] = final.content
    assert block.type == "tool_use" and block.input == {"age": 22, "available": False}
    assert final.stop_reason == "tool_use"


def test_an_output_schema_that_is_not_json_schema_is_a_400_before_any_upstream_call(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    with pytest.raises(openai.BadRequestError) as caught:
        openai_client(gateway, token).chat.completions.create(
            model=CLAUDE.model, messages=[{"role": "user", "content": "hi"}],
            response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "nonsense"}}})
    assert "not valid JSON Schema" in str(caught.value) and gateway.upstream.requests == []


def test_a_forced_tool_among_several_is_an_ordinary_tool_call(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    body = json.loads(CLAUDE_TOOL.tool_answer("a", {"x": 1}).content)
    gateway.upstream.script(ANTHROPIC, Reply(200, json.dumps(body).encode(), "application/json"))
    tools: Any = [{"name": n, "description": n, "input_schema": {"type": "object"}} for n in ("a", "b")]
    answer = anthropic_client(gateway, token).messages.create(
        model=CLAUDE_TOOL.model, max_tokens=50, messages=[{"role": "user", "content": "hi"}],
        tools=tools, tool_choice={"type": "tool", "name": "a"})
    assert answer.content[0].type == "tool_use" and answer.content[0].input == {"x": 1}
    [seen] = gateway.upstream.bodies(ANTHROPIC)
    assert [t["name"] for t in seen["tools"]] == ["a", "b"] and gateway.of_type("llm.output_recovered") == []


def test_a_call_of_the_clients_own_tool_is_answered_as_a_tool_call(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    body = json.loads(CLAUDE.answer("").content)
    body["content"] = [{"type": "tool_use", "id": "toolu_01A", "name": "lookup", "input": {"name": "Ollama"}}]
    body["stop_reason"] = "tool_use"
    gateway.upstream.script(ANTHROPIC, Reply(200, json.dumps(body).encode(), "application/json"))
    tool: Any = {"type": "function", "function": {"name": "lookup", "parameters": {
        "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}
    answer = openai_client(gateway, token).chat.completions.create(
        model=CLAUDE.model, messages=[{"role": "user", "content": "How old is Ollama?"}], tools=[tool],
        response_format={"type": "json_schema", "json_schema": {"name": "Person",
                                                                "schema": Person.model_json_schema()}})
    call: Any
    [call] = answer.choices[0].message.tool_calls or []
    assert call.function.name == "lookup" and json.loads(call.function.arguments) == {"name": "Ollama"}
    assert answer.choices[0].finish_reason == "tool_calls" and len(gateway.upstream.requests) == 1
    [seen] = gateway.upstream.bodies(ANTHROPIC)
    assert "output_config" in seen and seen["tools"][0]["name"] == "lookup"


def test_a_structured_call_falls_back_along_the_chain_with_each_members_own_plan(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(ANTHROPIC, Reply.recording("anthropic", "error__529_overloaded_error.json", 529))
    gateway.upstream.script(OPENAI, reply(GPT, GOOD))
    message = parse_chat(gateway, token, f"{CLAUDE.model},{GPT.model}").choices[0].message
    assert message.parsed == Person(age=22, available=False)
    [to_claude] = gateway.upstream.bodies(ANTHROPIC)
    [to_gpt] = gateway.upstream.bodies(OPENAI)
    assert "output_config" in to_claude and to_gpt["response_format"]["type"] == "json_schema"  # each its own plan
    gateway.drain()
    [failed] = gateway.of_type("llm.call_failed")
    [completed] = gateway.of_type("llm.call_completed")
    assert failed.payload["model"] == CLAUDE.model and completed.payload["model"] == GPT.model


def test_a_corrective_retry_stays_with_the_member_that_answered(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(ANTHROPIC, reply(CLAUDE, '{"age": "twenty-two"}'), reply(CLAUDE, GOOD))
    message = parse_chat(gateway, token, f"{CLAUDE.model},{GPT.model}").choices[0].message
    assert message.parsed == Person(age=22, available=False)
    assert len(gateway.upstream.bodies(ANTHROPIC)) == 2 and gateway.upstream.bodies(OPENAI) == []
    gateway.drain()
    assert [e.payload["model"] for e in gateway.of_type("llm.call_completed")] == [CLAUDE.model] * 2
