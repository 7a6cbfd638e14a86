"""A Claude answer paused mid-turn (`pause_turn`) is continued by the gateway: the client gets one answer.

The upstream serves pydantic-ai's recorded web-search turn that pauses and its recorded continuation
(stream__hosted_pause_turn_*.sse; a non-streamed call gets the body each stream adds up to, with
the stream's final usage). The official `openai` SDK (Chat Completions and Responses, streamed and
not) and `anthropic` SDK must read one whole answer; every upstream call is recorded and charged;
an answer that keeps pausing is cut short at MAX_CONTINUATIONS with a named stop; a client that
leaves mid-continuation cancels the call in flight and leaves the finished ones charged.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from adapters.hosted.wire_oracle import anthropic_message, normalized_anthropic_content
from cli.replay_server import ANTHROPIC, OPENAI, ReplayServer, Reply
from fixture_files import read_bytes, read_json
from pydantic import BaseModel
from structured_wire import WIRES

from metis_core.adapters.continuation import MAX_CONTINUATIONS
from metis_core.messages import MessageStatus
from metis_core.transport.framing import decode_all

from .gateway_harness import GatewayHarness, gateway_before
from .stalling_upstream import StallingUpstream

MODEL = "anthropic:claude-sonnet-4-5"
PAUSED_SSE = read_bytes("anthropic", "stream__hosted_pause_turn_web_search.sse")
CONTINUED_SSE = read_bytes("anthropic", "stream__hosted_pause_turn_continued.sse")
PROMPT = read_json("anthropic", "request__hosted_pause_turn_continue_stream.json")["messages"][0]["content"][0]["text"]
CLAUDE = next(w for w in WIRES if w.model == MODEL)  # structured answers on a recorded Claude body
WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search"}  # Anthropic's server tool


def body_of(stream: bytes) -> dict[str, Any]:
    """The Messages body a recorded stream adds up to, with the usage its last message_delta reported."""
    body = anthropic_message(stream)
    for chunk in decode_all(stream, "sse"):
        payload = json.loads(chunk.data)
        if payload.get("type") == "message_delta" and payload.get("usage"):
            body["usage"] = payload["usage"]
    return body


PAUSED, CONTINUED = body_of(PAUSED_SSE), body_of(CONTINUED_SSE)


def text_of(*bodies: dict[str, Any]) -> str:
    return "".join(b["text"] for body in bodies for b in body["content"] if b["type"] == "text")


def as_json(body: dict[str, Any]) -> Reply:
    return Reply(200, json.dumps(body).encode(), "application/json")


def as_sse(stream: bytes) -> Reply:
    return Reply(200, stream, "text/event-stream")


def openai_client(gateway: GatewayHarness, token: str, **options: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0, **options)


def check_two_calls_recorded_and_charged(gateway: GatewayHarness, key_id: str, shape: str) -> None:
    calls = gateway.of_type("llm.call_completed")
    assert [c.payload["input_tokens"] for c in calls] == [PAUSED["usage"]["input_tokens"],
                                                          CONTINUED["usage"]["input_tokens"]]
    assert all(c.payload["gateway_key_id"] == key_id and c.payload["inbound_shape"] == shape for c in calls)
    assert len(gateway.of_type("llm.call_started")) == 2 and gateway.of_type("llm.call_failed") == []
    [turn] = gateway.of_type("turn.completed")
    assert turn.payload["llm_call_count"] == 2 and turn.payload["stop_reason"] == "end_turn"
    assert turn.payload["total_output_tokens"] == PAUSED["usage"]["output_tokens"] + CONTINUED["usage"]["output_tokens"]
    costs = [Decimal(str(c.payload["cost_usd"])) for c in calls]
    assert all(cost > 0 for cost in costs) and gateway.spent_today(key_id) == pytest.approx(sum(costs))
    stored = gateway.runtime.store.load_messages(turn.session_id)
    assert [m.role.value for m in stored] == ["user", "assistant", "assistant"]  # each upstream answer, as it came
    answers = stored[1:]  # `metis cost --by key` reads each one's identity and price
    assert [getattr(m.metadata, "gateway_key_id", None) for m in answers] == [key_id, key_id]
    assert sum(m.metadata.usage.cost_usd for m in answers if m.metadata.usage) == gateway.spent_today(key_id)


def check_resumed_with_the_paused_answer(upstream: ReplayServer) -> None:
    first, second = upstream.bodies(ANTHROPIC)
    assert second["messages"][:-1] == first["messages"] and second["messages"][-1]["role"] == "assistant"
    resent = normalized_anthropic_content(second["messages"][-1]["content"])
    assert resent == normalized_anthropic_content(PAUSED["content"])  # the paused answer, sent back unchanged
    assert resent[-1]["type"] == "server_tool_use"  # the search the continuation answers first


def test_a_chat_completion_of_a_paused_turn_is_one_whole_answer(gateway: GatewayHarness) -> None:
    key_id, token = gateway.issue(budget_usd=Decimal("100"), budget_period="day")
    gateway.upstream.script(ANTHROPIC, as_json(PAUSED), as_json(CONTINUED))
    answer = openai_client(gateway, token).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": PROMPT}], web_search_options={})
    assert all(b["tools"] == [WEB_SEARCH] for b in gateway.upstream.bodies(ANTHROPIC))  # OpenAI's ask, Claude's tool
    [choice] = answer.choices
    assert choice.finish_reason == "stop" and choice.message.content == text_of(PAUSED, CONTINUED)
    assert answer.usage is not None
    assert answer.usage.completion_tokens == PAUSED["usage"]["output_tokens"] + CONTINUED["usage"]["output_tokens"]
    assert answer.usage.prompt_tokens == PAUSED["usage"]["input_tokens"] + CONTINUED["usage"]["input_tokens"]
    check_resumed_with_the_paused_answer(gateway.upstream)
    check_two_calls_recorded_and_charged(gateway, key_id, "openai")


def test_an_openai_model_gets_the_web_search_ask_as_the_client_wrote_it(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(OPENAI, Reply.recording("openai_chat", "response__text.json"))
    options: Any = {"search_context_size": "low"}
    openai_client(gateway, token).chat.completions.create(
        model="openai:gpt-4o", messages=[{"role": "user", "content": "hi"}], web_search_options=options)
    [sent] = gateway.upstream.bodies(OPENAI)
    assert sent["web_search_options"] == options and "tools" not in sent


def test_a_streamed_chat_completion_continues_in_the_same_stream(gateway: GatewayHarness) -> None:
    key_id, token = gateway.issue(budget_usd=Decimal("100"), budget_period="day")
    gateway.upstream.script(ANTHROPIC, as_sse(PAUSED_SSE), as_sse(CONTINUED_SSE))
    chunks = list(openai_client(gateway, token).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": PROMPT}], stream=True,
        stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert text == text_of(PAUSED, CONTINUED) and finishes == ["stop"]  # one answer, one end
    usage = chunks[-1].usage
    assert usage is not None and not chunks[-1].choices
    assert usage.completion_tokens == PAUSED["usage"]["output_tokens"] + CONTINUED["usage"]["output_tokens"]
    assert [bool(b.get("stream")) for b in gateway.upstream.bodies(ANTHROPIC)] == [True, True]
    check_resumed_with_the_paused_answer(gateway.upstream)
    check_two_calls_recorded_and_charged(gateway, key_id, "openai")


def test_a_streamed_responses_call_with_web_search_is_one_response(gateway: GatewayHarness) -> None:
    key_id, token = gateway.issue(budget_usd=Decimal("100"), budget_period="day")
    gateway.upstream.script(ANTHROPIC, as_sse(PAUSED_SSE), as_sse(CONTINUED_SSE))
    with openai_client(gateway, token).responses.stream(model=MODEL, input=PROMPT,
                                                        tools=[{"type": "web_search"}]) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert final.status == "completed" and final.output_text == text_of(PAUSED, CONTINUED)
    assert kinds.count("response.completed") == 1 and kinds.count("response.created") == 1
    assert all(b["tools"] == [WEB_SEARCH] for b in gateway.upstream.bodies(ANTHROPIC))
    check_resumed_with_the_paused_answer(gateway.upstream)
    check_two_calls_recorded_and_charged(gateway, key_id, "openai")


def test_an_anthropic_client_gets_the_continued_answer_too(gateway: GatewayHarness) -> None:
    key_id, token = gateway.issue(budget_usd=Decimal("100"), budget_period="day")
    gateway.upstream.script(ANTHROPIC, as_json(PAUSED), as_json(CONTINUED))
    tools: Any = [WEB_SEARCH]
    answer = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0).messages.create(
        model=MODEL, max_tokens=4096, messages=[{"role": "user", "content": PROMPT}], tools=tools)
    assert answer.stop_reason == "end_turn"
    assert "".join(b.text for b in answer.content if b.type == "text") == text_of(PAUSED, CONTINUED)
    assert answer.to_dict()["content"] == [*PAUSED["content"], *CONTINUED["content"]]  # Claude's blocks, as sent
    check_resumed_with_the_paused_answer(gateway.upstream)
    check_two_calls_recorded_and_charged(gateway, key_id, "anthropic")


def test_a_streamed_anthropic_answer_continues_in_the_same_stream(gateway: GatewayHarness) -> None:
    key_id, token = gateway.issue(budget_usd=Decimal("100"), budget_period="day")
    gateway.upstream.script(ANTHROPIC, as_sse(PAUSED_SSE), as_sse(CONTINUED_SSE))
    tools: Any = [WEB_SEARCH]
    with anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0).messages.stream(
            model=MODEL, max_tokens=4096, messages=[{"role": "user", "content": PROMPT}], tools=tools) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert kinds.count("message_start") == 1 and kinds.count("message_stop") == 1
    assert final.stop_reason == "end_turn"
    assert "".join(b.text for b in final.content if b.type == "text") == text_of(PAUSED, CONTINUED)
    [thinking] = [b for b in final.content if b.type == "thinking"]  # the paused answer's, signed, whole
    [recorded] = [b for b in PAUSED["content"] if b["type"] == "thinking"]
    assert thinking.signature == recorded["signature"] and thinking.thinking == recorded["thinking"]
    assert final.to_dict()["content"] == [*PAUSED["content"], *CONTINUED["content"]]  # as the plain answer's
    check_resumed_with_the_paused_answer(gateway.upstream)
    check_two_calls_recorded_and_charged(gateway, key_id, "anthropic")


class Person(BaseModel):
    age: int
    available: bool


def test_a_structured_ask_continues_a_paused_attempt_before_judging_it(gateway: GatewayHarness) -> None:
    key_id, token = gateway.issue(budget_usd=Decimal("100"), budget_period="day")
    good = json.loads(CLAUDE.answer('{"age": 22, "available": false}').content)  # a recorded body, its text set
    gateway.upstream.script(ANTHROPIC, as_json(PAUSED), as_json(good))
    answer = openai_client(gateway, token).chat.completions.parse(
        model=MODEL, messages=[{"role": "user", "content": PROMPT}], response_format=Person)
    assert answer.choices[0].message.parsed == Person(age=22, available=False)
    assert answer.usage is not None
    assert answer.usage.prompt_tokens == PAUSED["usage"]["input_tokens"] + good["usage"]["input_tokens"]
    check_resumed_with_the_paused_answer(gateway.upstream)
    assert all("output_config" in b for b in gateway.upstream.bodies(ANTHROPIC))
    assert gateway.of_type("llm.output_retried") == []  # a pause is continued, not corrected
    calls = gateway.of_type("llm.call_completed")
    assert len(calls) == 2
    assert gateway.spent_today(key_id) == pytest.approx(sum(Decimal(str(c.payload["cost_usd"])) for c in calls))


def cap_reply(shape: str, gateway: GatewayHarness, token: str) -> str:
    """The stop each shape writes for an answer still paused at the cap."""
    if shape == "chat":
        choice = openai_client(gateway, token).chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": PROMPT}]).choices[0]
        assert choice.message.content == text_of(*[PAUSED] * (MAX_CONTINUATIONS + 1))
        return str(choice.finish_reason)
    if shape == "responses":
        response = openai_client(gateway, token).responses.create(model=MODEL, input=PROMPT)
        assert response.incomplete_details is not None
        return f"{response.status}/{response.incomplete_details.reason}"
    message = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0).messages.create(
        model=MODEL, max_tokens=4096, messages=[{"role": "user", "content": PROMPT}])
    return str(message.stop_reason)


@pytest.mark.parametrize(("shape", "stop"), [("chat", "length"), ("responses", "incomplete/max_output_tokens"),
                                             ("anthropic", "pause_turn")])
def test_an_answer_that_keeps_pausing_is_cut_short_at_the_cap(gateway: GatewayHarness, shape: str, stop: str) -> None:
    key_id, token = gateway.issue(budget_usd=Decimal("1000"), budget_period="day")
    gateway.upstream.script(ANTHROPIC, *[as_json(PAUSED)] * (MAX_CONTINUATIONS + 2))
    assert cap_reply(shape, gateway, token) == stop
    sent = gateway.upstream.bodies(ANTHROPIC)
    assert len(sent) == MAX_CONTINUATIONS + 1  # the first call and 8 continuations, then no more
    resent = [len(b["messages"][-1]["content"]) if len(b["messages"]) > 1 else 0 for b in sent]
    assert resent == [n * len(PAUSED["content"]) for n in range(MAX_CONTINUATIONS + 1)]  # paused answers, one turn
    assert len(gateway.upstream.queues[ANTHROPIC]) == 1  # the reply never asked for
    calls = gateway.of_type("llm.call_completed")
    assert len(calls) == MAX_CONTINUATIONS + 1
    [turn] = gateway.of_type("turn.completed")
    assert turn.payload["stop_reason"] == "error" and turn.payload["llm_call_count"] == MAX_CONTINUATIONS + 1
    assert "paused its hosted tools 9 times in a row" in turn.payload["signals_extra"]["error"]
    assert gateway.spent_today(key_id) == pytest.approx(sum(Decimal(str(c.payload["cost_usd"])) for c in calls))


def check_left_mid_continuation(harness: GatewayHarness, key_id: str) -> Any:
    cancelled = harness.cancelled_turn()
    assert cancelled.payload["reason"] == "client_disconnect"
    # the paused answer (received, recorded, charged), then the continuation cut in flight: priced on the
    # record as the key was charged for it
    completed, cut = harness.of_type("llm.call_completed")
    assert harness.of_type("llm.call_failed") == [] and cut.payload["pricing_version"] == "estimated"
    assert harness.spent_today(key_id) == Decimal(str(completed.payload["cost_usd"])) + Decimal(
        str(cut.payload["cost_usd"]))
    assert completed.payload["gateway_key_id"] == key_id
    assert harness.of_type("turn.completed") == []
    paid = Decimal(str(completed.payload["cost_usd"]))
    # the continuation in flight was sent: its input is charged at the estimate (docs/gateway.md "Budgets and
    # reservations"), never more than its reservation
    assert paid < harness.spent_today(key_id) < paid * 2
    return cancelled


def test_a_client_leaving_mid_continuation_cancels_it_and_keeps_the_paused_call_charged(tmp_path: Path) -> None:
    stalling = StallingUpstream(None, answers=(("application/json", json.dumps(PAUSED).encode()),))
    harness = gateway_before(tmp_path / "home", stalling)
    try:
        key_id, token = harness.issue(budget_usd=Decimal("100"), budget_period="day")
        client = openai_client(harness, token, timeout=httpx.Timeout(30, read=3.0))  # it stops waiting, and leaves
        with pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": PROMPT}])
        assert stalling.request_seen.is_set(), "the continuation was never sent"
        assert stalling.closed_by_peer.wait(10), "the continuation's upstream request was not cancelled"
        first, second = (json.loads(r) for r in stalling.requests)
        assert len(second["messages"]) == len(first["messages"]) + 1
        cancelled = check_left_mid_continuation(harness, key_id)
        assert cancelled.payload["partial_llm_calls"] == 0
        stored = harness.runtime.store.load_messages(cancelled.session_id)
        # the paused answer is on the record, and the cut continuation's empty answer carrying its input
        assert [m.role.value for m in stored] == ["user", "assistant", "assistant"]
    finally:
        harness.stop()


def test_a_client_leaving_a_streamed_continuation_cancels_it_and_keeps_what_streamed(tmp_path: Path) -> None:
    marker = b"event: content_block_delta"
    head = CONTINUED_SSE[: CONTINUED_SSE.index(b'"type":"text_delta"')]
    head = head[: head.rindex(marker)]  # the continuation up to its first text, then it stalls
    stalling = StallingUpstream(head + CONTINUED_SSE[len(head):].split(b"\n\n", 1)[0] + b"\n\n",
                                answers=(("text/event-stream", PAUSED_SSE),))
    harness = gateway_before(tmp_path / "home", stalling)
    try:
        key_id, token = harness.issue(budget_usd=Decimal("100"), budget_period="day")
        seen = ""
        with openai_client(harness, token).chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": PROMPT}], stream=True) as stream:
            for chunk in stream:
                seen += (chunk.choices[0].delta.content or "") if chunk.choices else ""
                if stalling.request_seen.is_set() and len(seen) > len(text_of(PAUSED)):
                    break  # some of the continuation has arrived: the client leaves
        assert seen.startswith(text_of(PAUSED))
        assert stalling.closed_by_peer.wait(10), "the continuation's upstream request was not cancelled"
        cancelled = check_left_mid_continuation(harness, key_id)
        assert cancelled.payload["partial_llm_calls"] == 1
        stored = harness.runtime.store.load_messages(cancelled.session_id)
        assert [m.role.value for m in stored] == ["user", "assistant", "assistant"]
        assert stored[-1].metadata.status is MessageStatus.CANCELLED
        assert stored[-1].text() and seen.endswith(stored[-1].text())  # what streamed of the continuation
    finally:
        harness.stop()


HELDOUT = Path(__file__).resolve().parents[1] / "data" / "heldout" / "anthropic"
VCR = "test_pause_turn_web_search_vcr"
"""The same test's non-streamed recording (tests/data/heldout): a paused whole answer that opens with
a signed thinking block, its continuation, and the request pydantic-ai resumed it with."""


def test_a_paused_whole_answer_with_signed_thinking_is_resumed_as_recorded(gateway: GatewayHarness) -> None:
    _, token = gateway.issue(budget_usd=Decimal("100"), budget_period="day")
    bodies = [json.loads((HELDOUT / f"response__{VCR}__{i}.json").read_text()) for i in (0, 1)]
    recorded = json.loads((HELDOUT / f"request__{VCR}__1.json").read_text())
    gateway.upstream.script(ANTHROPIC, as_json(bodies[0]), as_json(bodies[1]))
    tools: Any = [WEB_SEARCH]
    answer = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0).messages.create(
        model=MODEL, max_tokens=recorded["max_tokens"], messages=recorded["messages"][:1], tools=tools,
        thinking=recorded["thinking"])
    assert answer.stop_reason == "end_turn" and answer.to_dict()["content"] == [*bodies[0]["content"],
                                                                               *bodies[1]["content"]]
    first, second = gateway.upstream.bodies(ANTHROPIC)
    assert second["thinking"] == recorded["thinking"] and second["messages"][0] == first["messages"][0]
    resent = normalized_anthropic_content(second["messages"][1]["content"])
    assert resent == normalized_anthropic_content(recorded["messages"][1]["content"])  # signature and all
    [turn] = gateway.of_type("turn.completed")
    assert turn.payload["llm_call_count"] == 2 and len(gateway.of_type("llm.call_completed")) == 2


REFUSAL_SSE = read_bytes("anthropic", "stream__refusal_stop_details.sse")


@pytest.mark.parametrize("streamed", [False, True])
def test_a_refusals_stop_details_reach_an_anthropic_client(gateway: GatewayHarness, streamed: bool) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(ANTHROPIC, as_sse(REFUSAL_SSE) if streamed else as_json(body_of(REFUSAL_SSE)))
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)
    ask: Any = {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    if streamed:
        with client.messages.stream(**ask) as stream:
            answer = stream.get_final_message()
    else:
        answer = client.messages.create(**ask)
    details = (answer.model_extra or {}).get("stop_details") or getattr(answer, "stop_details", None)
    details = details.model_dump() if hasattr(details, "model_dump") else details
    assert answer.stop_reason == "refusal"
    assert details == {"type": "refusal", "category": "cyber", "explanation": "This request was refused due to policy."}
