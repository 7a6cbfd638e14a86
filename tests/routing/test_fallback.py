"""Fallback chains over recorded traffic: failures move to the next member, and only where it makes sense."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from support_servers import Reply, ScriptedTransport

from metis_core.adapters.base import AdapterOptions
from metis_core.errors import AllModelsFailedError, InvalidRequestError
from metis_core.messages import MessageStatus, user_message
from metis_core.routing.fallback import FallbackChain
from metis_core.routing.health import HealthPolicy, HealthTracker
from metis_core.routing.policy_file import MemberSettings

CHAIN = ["anthropic:claude-sonnet-4-6", "openai:gpt-4o", "gemini:gemini-2.5-flash"]


class Observer:
    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []

    def attempt_started(self, model: str, attempt: int) -> None:
        self.log.append(("started", model))

    def attempt_failed(self, model: str, error: BaseException) -> str | None:
        self.log.append(("failed", f"{model}:{type(error).__name__}"))
        return f"ev_failed_{len(self.log)}"


@pytest.fixture
def script() -> ScriptedTransport:
    return ScriptedTransport()


def test_retryable_failures_move_down_the_chain_and_the_answer_names_its_model(script: ScriptedTransport) -> None:
    script.script("anthropic", [Reply.fixture("anthropic", "error__529_overloaded_error.json", 529)])
    script.script("openai", [Reply.fixture("openai_chat", "error__429_rate_limit_exceeded.json", 429)])
    script.script("gemini", [Reply.fixture("gemini", "response__text.json")])
    events: list[Any] = []
    health = HealthTracker(HealthPolicy(failure_threshold=1), on_event=lambda t, p, parent: events.append((t, parent)))
    observer = Observer()
    message = FallbackChain(script.model_client(), CHAIN, health=health).complete(
        [user_message("hi")], observer=observer)
    assert message.metadata.model == "gemini:gemini-2.5-flash"
    assert message.metadata.status is MessageStatus.COMPLETE and message.text()
    assert [entry[0] for entry in observer.log] == ["started", "failed", "started", "failed", "started"]
    assert observer.log[1] == ("failed", "anthropic:claude-sonnet-4-6:ServerError")
    assert observer.log[3] == ("failed", "openai:gpt-4o:RateLimitError")
    assert ("routing.provider_unavailable", "ev_failed_2") in events  # parented to the llm failure
    assert not health.is_available("anthropic:claude-sonnet-4-6")


def test_benched_member_is_skipped_without_a_request(script: ScriptedTransport) -> None:
    health = HealthTracker(HealthPolicy(failure_threshold=1))
    script.script("anthropic", [Reply.fixture("anthropic", "error__529_overloaded_error.json", 529)])
    script.script("openai", [Reply.fixture("openai_chat", "response__text.json"),
                             Reply.fixture("openai_chat", "response__text.json")])
    chain = FallbackChain(script.model_client(), CHAIN[:2], health=health)
    chain.complete([user_message("one")])
    chain.complete([user_message("two")])
    assert script.hosts() == ["anthropic.test", "openai.test", "openai.test"]


def test_invalid_request_is_raised_not_retried_elsewhere(script: ScriptedTransport) -> None:
    script.script("anthropic", [Reply.fixture("anthropic", "error__400_invalid_request_error_bad_shape.json", 400)])
    with pytest.raises(InvalidRequestError):
        FallbackChain(script.model_client(), CHAIN).complete([user_message("hi")])
    assert script.hosts() == ["anthropic.test"]


def test_auth_failure_falls_through_to_another_provider(script: ScriptedTransport) -> None:
    script.script("anthropic", [Reply.fixture("anthropic", "error__401_authentication_error.json", 401)])
    script.script("openai", [Reply.fixture("openai_chat", "response__text.json")])
    message = FallbackChain(script.model_client(), CHAIN).complete([user_message("hi")])
    assert message.metadata.provider == "openai"
    routing = message.metadata.routing
    assert routing is not None and "fallback after anthropic:claude-sonnet-4-6" in routing.reason


def test_every_member_failing_raises_with_each_error(script: ScriptedTransport) -> None:
    script.script("anthropic", [Reply.fixture("anthropic", "error__529_overloaded_error.json", 529)])
    script.script("openai", [Reply.fixture("openai_chat", "error__429_rate_limit_exceeded.json", 429)])
    with pytest.raises(AllModelsFailedError) as caught:
        FallbackChain(script.model_client(), CHAIN[:2]).complete([user_message("hi")])
    assert caught.value.chain == CHAIN[:2] and len(caught.value.errors) == 2


def test_each_member_gets_its_own_settings(script: ScriptedTransport) -> None:
    script.script("anthropic", [Reply.fixture("anthropic", "error__529_overloaded_error.json", 529)])
    script.script("openai", [Reply.fixture("openai_chat", "response__text.json")])
    settings = {"anthropic:claude-sonnet-4-6": MemberSettings(temperature=0.1, max_tokens=1000),
                "openai:gpt-4o": MemberSettings(temperature=0.9)}
    FallbackChain(script.model_client(), CHAIN[:2], settings=settings).complete(
        [user_message("hi")], options=AdapterOptions(model=CHAIN[0], max_tokens=500))
    (_, _, anthropic_body, _), (_, _, openai_body, _) = script.requests
    assert anthropic_body["temperature"] == 0.1 and anthropic_body["max_tokens"] == 1000
    assert openai_body["temperature"] == 0.9
    assert openai_body.get("max_tokens", openai_body.get("max_completion_tokens")) == 500


async def test_stream_failing_before_first_token_falls_back(script: ScriptedTransport) -> None:
    script.script("anthropic", [Reply.fixture("anthropic", "stream__error_event_overloaded.sse")])
    script.script("openai", [Reply.fixture("openai_chat", "stream__text_with_usage_chunk.sse")])
    events = [e async for e in FallbackChain(script.model_client(), CHAIN[:2]).astream([user_message("hi")])]
    final = events[-1]
    assert final.type == "message_complete" and final.message.metadata.provider == "openai"
    assert final.message.status is MessageStatus.COMPLETE


async def test_stream_failing_mid_way_keeps_the_partial_and_does_not_fall_back(script: ScriptedTransport) -> None:
    body = Reply.fixture("anthropic", "stream__text_basic.sse").body
    cut = body[: body.index(b"content_block_stop")]  # text has streamed, then the connection drops
    script.script("anthropic", [Reply(200, cut, {"content-type": "text/event-stream"})])
    events = [e async for e in FallbackChain(script.model_client(), CHAIN[:2]).astream([user_message("hi")])]
    assert any(e.type == "error" for e in events)
    final = events[-1]
    assert final.type == "message_complete" and final.message.status is MessageStatus.PARTIAL
    assert final.message.text()
    assert script.hosts() == ["anthropic.test"]


async def test_a_stream_that_broke_off_counts_for_health_as_a_failure_and_not_a_success(
    script: ScriptedTransport,
) -> None:
    body = Reply.fixture("anthropic", "stream__text_basic.sse").body
    cut = body[: body.index(b"content_block_stop")]  # text has streamed, then the connection drops
    script.script("anthropic", [Reply(200, cut, {"content-type": "text/event-stream"})])
    health = HealthTracker(HealthPolicy(failure_threshold=1))
    chain = FallbackChain(script.model_client(), CHAIN[:2], health=health)
    events = [e async for e in chain.astream([user_message("hi")])]
    assert events[-1].message.status is MessageStatus.PARTIAL
    assert not health.is_available(CHAIN[0])  # a success recorded after the failure would have cleared it


def test_transport_double_rejects_unscripted_calls(script: ScriptedTransport) -> None:
    sync, _ = script.clients()
    assert sync.get("http://nowhere.test/x").status_code == 599
    assert isinstance(sync, httpx.Client)


def test_member_options_is_a_copy_as_dataclasses_replace_makes_it() -> None:
    import dataclasses

    from metis_core.routing.fallback import member_options

    base = AdapterOptions(model="anthropic:claude-haiku-4-5", max_tokens=9, temperature=0.3, top_p=0.5,
                          stop=["x"], reasoning_effort="low", thinking_budget_tokens=1024, tool_choice="auto",
                          parallel_tool_calls=False, response_format={"name": "n", "schema": {}}, stream=True,
                          session_id="sess_1", hosted_tools={"web_search": {}}, provider_tools=[{"type": "t"}],
                          extra={"k": 1})
    copied = member_options(base, "openai:gpt-4o", None)
    assert copied == dataclasses.replace(base, model="openai:gpt-4o")
    assert copied is not base and base.model == "anthropic:claude-haiku-4-5"
    for field in dataclasses.fields(AdapterOptions):  # shared values, as replace shares them
        assert getattr(copied, field.name) is getattr(dataclasses.replace(base, model="openai:gpt-4o"), field.name) \
            or field.name == "model"
