"""Bad input and broken connections: each gets its shape's error body, never a traceback.

Malformed JSON, wrong types, an unknown model, an oversized body, an upstream that refuses the
gateway's own key (whose text must not reach the client), and a client that disconnects in the
middle of a stream (the upstream connection is closed, the turn is recorded as cancelled).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import anthropic
import httpx
import openai
import pytest
from cli.replay_server import OPENAI, ReplayServer, Reply
from fixture_files import read_bytes

from metis_core.gateway.quotas import budget_window
from metis_core.gateway.service import GatewaySettings
from metis_core.messages import MessageStatus

from .gateway_harness import UPSTREAM_KEYS, GatewayHarness, gateway_before
from .stalling_upstream import StallingUpstream

HAIKU = "anthropic:claude-haiku-4-5"


def post(gateway: GatewayHarness, path: str, token: str, content: bytes) -> httpx.Response:
    return httpx.post(gateway.base_url + path, content=content,
                      headers={"authorization": f"Bearer {token}", "content-type": "application/json"})


@pytest.mark.parametrize(("path", "error_type"), [("/v1/messages", "invalid_request_error"),
                                                  ("/v1/chat/completions", "invalid_request_error")])
def test_malformed_json_is_a_400_in_the_inbound_shape(gateway: GatewayHarness, path: str, error_type: str) -> None:
    _, token = gateway.issue()
    answer = post(gateway, path, token, b'{"model": "x", "messages": [')
    assert answer.status_code == 400
    body = answer.json()
    assert (body["error"]["type"]) == error_type
    assert "not valid JSON" in body["error"]["message"] and "Traceback" not in answer.text
    assert post(gateway, path, token, b"[1, 2]").status_code == 400


def test_wrong_types_are_a_400_naming_the_problem(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(model=HAIKU, max_tokens=5, messages="hello")  # type: ignore[arg-type]
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(model=HAIKU, max_tokens=5, messages=[{"role": "robot", "content": "x"}])  # type: ignore[list-item]
    answer = post(gateway, "/v1/chat/completions", token, b'{"model": 42, "messages": []}')
    assert answer.status_code == 400 and "`model`" in answer.json()["error"]["message"]
    for bad in (b'{"model": "openai:gpt-4o", "messages": [{"role": "user", "content": [{"type": "text"}]}]}',
                b'{"model": "openai:gpt-4o", "messages": "hi"}', b'{"model": "openai:gpt-4o", "messages": []}',
                b'{"model": "openai:gpt-4o", "messages": [{"role": "tool"}]}'):
        answer = post(gateway, "/v1/chat/completions", token, bad)
        assert answer.status_code == 400, (bad, answer.text)
        assert answer.json()["error"]["type"] == "invalid_request_error"
    assert gateway.upstream.requests == []


def test_an_unknown_model_is_a_404_with_a_hint(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    client = openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0)
    with pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.code == "model_not_found" and "/v1/models" in caught.value.message
    assert "config.yaml" not in caught.value.message and "models: in" not in caught.value.message
    assert gateway.upstream.requests == []


def test_a_model_of_a_provider_the_gateway_has_no_key_for_is_a_404_naming_the_provider(
        gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    for path, shape_error in (("/v1/chat/completions", "invalid_request_error"), ("/v1/messages", "not_found_error")):
        response = post(gateway, path, token, json.dumps({
            "model": "gemini:gemini-2.5-flash", "max_tokens": 10,
            "messages": [{"role": "user", "content": "hi"}]}).encode())
        assert response.status_code == 404, response.text  # not a 500 "the gateway failed to answer"
        error = response.json()["error"]
        assert error["type"] == shape_error and "gemini" in error["message"]
        assert "GEMINI_API_KEY" not in error["message"] and "operator" in error["message"]


def test_the_model_list_names_only_what_the_gateway_can_serve(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    listed = {m.id for m in openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token).models.list().data}
    assert "anthropic:claude-haiku-4-5" in listed and "haiku" in listed  # keyed: its models and their aliases
    assert not any(name.startswith("gemini:") for name in listed) and "flash" not in listed  # no key for gemini


def test_a_bare_model_name_resolves_through_the_shapes_provider(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(OPENAI, Reply.recording("openai_chat", "response__text.json"))
    client = openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0)
    answer = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert answer.model == "gpt-4o" and gateway.upstream.bodies(OPENAI)[0]["model"] == "gpt-4o"


@pytest.fixture
def small_gateway(tmp_path: Path, upstream: ReplayServer) -> Iterator[GatewayHarness]:
    harness = GatewayHarness(tmp_path / "home", upstream,
                             GatewaySettings(workspace=tmp_path, max_body_bytes=2048)).start()
    yield harness
    harness.stop()


def test_an_oversized_body_is_a_413(small_gateway: GatewayHarness) -> None:
    _, token = small_gateway.issue()
    client = anthropic.Anthropic(base_url=small_gateway.base_url, api_key=token, max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as caught:
        client.messages.create(model=HAIKU, max_tokens=5, messages=[{"role": "user", "content": "x" * 5000}])
    assert caught.value.status_code == 413
    assert caught.value.body["error"]["type"] == "request_too_large"  # type: ignore[index]
    assert small_gateway.upstream.requests == []


def test_an_upstream_refusing_the_gateways_key_never_shows_the_key(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(OPENAI, Reply(401, b'{"error": {"message": "Incorrect API key provided: '
                                          + UPSTREAM_KEYS["openai"].encode() + b'", "type": "invalid_request_error",'
                                          b' "code": "invalid_api_key"}}', "application/json"))
    client = openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0)
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model="openai:gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 502
    assert UPSTREAM_KEYS["openai"] not in caught.value.response.text
    gateway.drain()
    for event in gateway.events.events:
        assert UPSTREAM_KEYS["openai"] not in str(event.payload)
    [failed] = gateway.of_type("llm.call_failed")
    assert failed.payload["error_class"] == "auth"


def test_a_client_disconnect_mid_stream_cancels_the_upstream_and_is_recorded(tmp_path: Path) -> None:
    recording = read_bytes("anthropic", "stream__text_basic.sse")
    head = recording[: recording.index(b'"text":"!"')]
    head = head[: head.rindex(b"event: content_block_delta")]
    stalling = StallingUpstream(head)
    harness = gateway_before(tmp_path / "home", stalling)
    try:
        _, token = harness.issue()
        seen = b""
        with httpx.stream("POST", harness.base_url + "/v1/messages", headers={"x-api-key": token},
                          json={"model": HAIKU, "max_tokens": 50, "stream": True,
                                "messages": [{"role": "user", "content": "hi"}]}) as response:
            assert response.status_code == 200
            for chunk in response.iter_raw():
                seen += chunk
                if b" there" in seen:
                    break
        assert stalling.closed_by_peer.wait(10), "the upstream request was not cancelled"
        deadline = time.monotonic() + 10  # the record follows the upstream's close on the gateway's loop
        while not harness.of_type("turn.cancelled") and time.monotonic() < deadline:
            time.sleep(0.02)
        cancelled = harness.of_type("turn.cancelled")
        assert [e.payload["reason"] for e in cancelled] == ["client_disconnect"]
        assert harness.of_type("llm.call_failed") == []
        [cut] = harness.of_type("llm.call_completed")  # what it used, priced at the model's own price
        assert cut.payload["pricing_version"] == "estimated" and cut.payload["cost_usd"] > 0
        session_id = cancelled[0].session_id
        stored = harness.runtime.store.load_messages(session_id)
        assert stored[-1].metadata.status is MessageStatus.CANCELLED
        assert stored[-1].text() == "Hello there"
        usage = stored[-1].metadata.usage
        assert usage is not None and usage.cost_usd == Decimal(str(cut.payload["cost_usd"]))
    finally:
        harness.stop()


def test_a_client_disconnect_before_a_non_streaming_answer_cancels_the_upstream_and_charges_its_input(
        tmp_path: Path) -> None:
    stalling = StallingUpstream(None)  # reads the request, never answers
    harness = gateway_before(tmp_path / "home", stalling)
    try:
        key_id, token = harness.issue(budget_usd=Decimal("5"), budget_period="day", tpm=100_000)
        harness.post_and_leave("/v1/messages", f"x-api-key: {token}",
                               {"model": HAIKU, "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]},
                               stalling)
        cancelled = harness.cancelled_turn()
        assert cancelled.payload["reason"] == "client_disconnect" and cancelled.payload["partial_llm_calls"] == 0
        # the request was sent: its input is charged to the budget at the estimate ("hi": 7 tokens) and the
        # dearest input rate (cache writes, $1.25/M); the 50 output tokens reserved for it are released.
        # The record prices the cut call the same: an empty cancelled answer and its llm.call_completed.
        assert harness.of_type("llm.call_failed") == [] and harness.of_type("turn.completed") == []
        [cut] = harness.of_type("llm.call_completed")
        assert cut.payload["pricing_version"] == "estimated" and cut.payload["output_tokens"] == 0
        stored = harness.runtime.store.load_messages(cancelled.session_id)
        assert [(m.role.value, m.status.value) for m in stored] == [("user", "complete"), ("assistant", "cancelled")]
        session = harness.runtime.store.get_session(cancelled.session_id)
        assert session.total_cost_usd == Decimal("0.00000875") and session.total_output_tokens == 0
        assert Decimal(str(cut.payload["cost_usd"])) == session.total_cost_usd
        day, _ = budget_window("day", datetime.now(UTC))
        window = int(day.timestamp())
        assert harness.service.key_store.spent("gateway_key", key_id, window) == Decimal("0.00000875")
        assert harness.service.key_store.reserved("gateway_key", key_id, window, 2**62) == 0
    finally:
        harness.stop()
