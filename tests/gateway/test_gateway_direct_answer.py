"""The direct non-streamed path gives what the general one gave: answers, events, records, charges.

A non-streamed call awaits `FallbackChain.acomplete` (`ContinuedCall.answer`) in the handler's own
task, with one watcher task for a disconnect. Before, it drained `ContinuedCall.events(stream=False)`
over `FallbackChain.astream` in a task of its own, beside a second task and `asyncio.wait`. Each case
below runs on a fresh gateway both ways (the general path restored by `general_path`) and compares
the response, every event of the run and the store, with ids and clock readings normalized.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Callable, Coroutine, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from cli.replay_server import ANTHROPIC, OPENAI, ReplayServer, Reply
from starlette.requests import Request

from metis_core.gateway.app import GatewayApp, client_gone
from metis_core.gateway.call_record import CallRecord
from metis_core.gateway.continued_call import ContinuedCall
from metis_core.messages import Message, MessageComplete, StreamEvent
from metis_core.routing.fallback import FallbackChain

from .gateway_harness import GatewayHarness, gateway_before
from .stalling_upstream import StallingUpstream
from .test_gateway_pause_turn import PAUSED, PROMPT, as_json, body_of, read_bytes
from .test_gateway_translation import PNG, WEATHER_TOOL

HAIKU = "anthropic:claude-haiku-4-5"
ANTHROPIC_TOOLS = [{"name": n, "description": n, "input_schema": {"type": "object", "properties": {}}}
                   for n in ("GetWeatherArgs", "get_stock_price")]

# --- the general path, as it was -----------------------------------------------------------------


async def _answer_via_events(self: ContinuedCall) -> Message:
    final: Message | None = None
    async for event in self.events(stream=False):
        if event.type == "message_complete":
            final = event.message
    assert final is not None
    return final


async def _acomplete_via_astream(self: FallbackChain, messages: Any, **kwargs: Any) -> Message:
    final: Message | None = None
    events: Any = self.astream(messages, stream=False, **kwargs)
    async for event in events:
        assert isinstance(event, MessageComplete)
        final = event.message
    assert final is not None
    return final


async def _answer_unless_gone_in_two_tasks(self: GatewayApp, request: Request, record: CallRecord,
                                           work: Coroutine[Any, Any, Any]) -> Any:
    upstream = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(client_gone(request.receive))
    try:
        await asyncio.wait((upstream, gone), return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        upstream.cancel()
        gone.cancel()
        raise
    if upstream.done():
        gone.cancel()
        return upstream.result()
    upstream.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await upstream
    return None


@contextlib.contextmanager
def general_path() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ContinuedCall, "answer", _answer_via_events)
        patch.setattr(FallbackChain, "acomplete", _acomplete_via_astream)
        patch.setattr(GatewayApp, "answer_unless_gone", _answer_unless_gone_in_two_tasks)
        yield


# --- what a run leaves, normalized ---------------------------------------------------------------

_ID = re.compile(r"(?<![A-Za-z0-9+/=])(?:[a-z_]+[_-])?[0-9A-HJKMNP-TV-Z]{26}(?![A-Za-z0-9+/=])")
_CLOCK_KEYS = {"created", "created_at", "timestamp", "latency_ms", "wall_time_seconds", "ts", "window_start",
               "window_end", "started_at", "ended_at", "updated_at", "last_active_at"}


class Normalizer:
    """Each distinct id becomes `<id N>` in the order met (so references still have to agree), and
    each clock reading `<clock>`."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def __call__(self, value: Any, key: str = "") -> Any:
        if key in _CLOCK_KEYS and value is not None:
            return "<clock>"
        if isinstance(value, dict):
            return {self(k) if isinstance(k, str) else k: self(v, str(k)) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self(v) for v in value]
        if isinstance(value, str):
            return _ID.sub(lambda m: self.ids.setdefault(m.group(0), f"<id {len(self.ids)}>"), value)
        if isinstance(value, Decimal):
            return str(value)
        return value


@dataclass
class Outcome:
    status: int
    body: Any
    events: list[str]
    stored: list[Any]
    spent: str


def _session_ids(harness: GatewayHarness) -> list[str]:
    return list(dict.fromkeys(e.session_id for e in harness.events.events
                              if e.type.startswith(("turn.", "llm."))))


def _blanked(value: Any) -> str:
    return _ID.sub("<id>", json.dumps(value, sort_keys=True, default=str))


def outcome(harness: GatewayHarness, key_id: str, status: int, body: Any) -> Outcome:
    """What the run left. Events come from three threads (loop, record writer, bus) in no fixed order,
    so each is compared as its content with ids blanked and its parent named by type, as a sorted list."""
    harness.drain()
    norm = Normalizer()
    body = norm(body)
    kept = [e for e in harness.events.events if not e.type.startswith(("gateway.key_", "bus."))]
    types = {e.id: e.type for e in kept}
    events = sorted(_blanked({"type": e.type, "actor": e.actor, "payload": norm(e.payload),
                              "parent": types.get(e.parent_event_id or "", e.parent_event_id),
                              "turn": e.turn_id is not None}) for e in kept)
    stored = [norm([m.model_dump(mode="json") for m in harness.runtime.store.load_messages(session)])
              for session in _session_ids(harness)]
    return Outcome(status, body, events, stored, str(harness.spent_today(key_id)))


Call = Callable[[GatewayHarness, str], tuple[int, Any]]


def post(path: str, body: dict[str, Any]) -> Call:
    def call(harness: GatewayHarness, token: str) -> tuple[int, Any]:
        answer = httpx.post(harness.base_url + path, json=body, timeout=30,
                            headers={"x-api-key": token, "authorization": f"Bearer {token}"})
        return answer.status_code, answer.json()

    return call


def run_both(tmp_path: Path, script: Callable[[ReplayServer], None], call: Call,
             general: Callable[[], AbstractContextManager[object]] = general_path) -> tuple[Outcome, Outcome]:
    """The same call on two fresh gateways: the direct path, then the general one (`general()` in force;
    when it yields a list, of what went its way, that list must not be empty)."""
    found: list[Outcome] = []
    for name in ("direct", "general"):
        upstream = ReplayServer().start()
        script(upstream)
        harness = GatewayHarness(tmp_path / name, upstream).start()
        try:
            with general() if name == "general" else contextlib.nullcontext() as seen:
                key_id, token = harness.issue(budget_usd=Decimal("100"), budget_period="day", tpm=1_000_000)
                found.append(outcome(harness, key_id, *call(harness, token)))
                if isinstance(seen, list):
                    assert seen, "the comparison run did not go the general way"
        finally:
            harness.stop()
            upstream.stop()
    return found[0], found[1]


def assert_same(direct: Outcome, general: Outcome) -> None:
    """What both runs left is the same, and they left something (or the comparison proves nothing)."""
    assert direct.status == general.status
    assert direct.body == general.body
    assert direct.events == general.events
    assert direct.stored == general.stored
    assert direct.spent == general.spent
    assert direct.events, "the run left no events: the comparison would prove nothing"


def replies(path: str, *answers: Reply) -> Callable[[ReplayServer], None]:
    return lambda upstream: upstream.script(path, *answers)


CASES: dict[str, tuple[Callable[[ReplayServer], None], Call]] = {
    "anthropic text": (
        replies(ANTHROPIC, Reply.recording("anthropic", "response__text.json")),
        post("/v1/messages", {"model": HAIKU, "max_tokens": 50, "system": "terse",
                              "messages": [{"role": "user", "content": "hi"}]})),
    "anthropic tool call": (
        replies(ANTHROPIC, Reply.recording("anthropic", "response__tool_use.json")),
        post("/v1/messages", {"model": HAIKU, "max_tokens": 200, "tools": [WEATHER_TOOL],
                              "messages": [{"role": "user", "content": "weather in SF?"}]})),
    "anthropic client, openai model, image and parallel tools": (
        replies(OPENAI, Reply.recording("openai_chat", "response__parallel_tool_calls.json")),
        post("/v1/messages", {"model": "openai:gpt-4o", "max_tokens": 300, "tools": ANTHROPIC_TOOLS,
                              "messages": [{"role": "user", "content": [
                                  {"type": "text", "text": "weather and AAPL"},
                                  {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                               "data": PNG}}]}]})),
    "openai client, thinking anthropic model": (
        replies(ANTHROPIC, Reply.recording("anthropic", "response__thinking_with_signature.json")),
        post("/v1/chat/completions", {"model": "anthropic:claude-sonnet-4-5",
                                      "messages": [{"role": "user", "content": "think"}]})),
    "anthropic client, thinking kept with its signature": (
        replies(ANTHROPIC, Reply.recording("anthropic", "response__thinking_with_signature.json")),
        post("/v1/messages", {"model": "anthropic:claude-sonnet-4-5", "max_tokens": 2000,
                              "thinking": {"type": "enabled", "budget_tokens": 1024},
                              "messages": [{"role": "user", "content": "think"}]})),
    "responses client, openai model": (
        replies(OPENAI, Reply.recording("openai_chat", "response__text.json")),
        post("/v1/responses", {"model": "openai:gpt-4o", "input": "hi"})),
    "an upstream error is the shape's error": (
        replies(ANTHROPIC, Reply.recording("anthropic", "error__529_overloaded_error.json", 529)),
        post("/v1/messages", {"model": HAIKU, "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]})),
    "a fallback chain answers from its next member": (
        lambda upstream: (upstream.script(ANTHROPIC, Reply.recording("anthropic", "error__529_overloaded_error.json",
                                                                     529)),
                          upstream.script(OPENAI, Reply.recording("openai_chat", "response__text.json"))),
        post("/v1/messages", {"model": f"{HAIKU},openai:gpt-4o", "max_tokens": 20,
                              "messages": [{"role": "user", "content": "hi"}]})),
    "a paused answer is continued": (
        replies(ANTHROPIC, as_json(PAUSED), as_json(body_of(read_bytes("anthropic",
                                                                     "stream__hosted_pause_turn_continued.sse")))),
        post("/v1/chat/completions", {"model": "anthropic:claude-sonnet-4-5",
                                      "messages": [{"role": "user", "content": PROMPT}]})),
    "an answer still paused at the cap is cut short": (
        replies(ANTHROPIC, *[as_json(PAUSED)] * 8),
        post("/v1/messages", {"model": "anthropic:claude-sonnet-4-5", "max_tokens": 1000,
                              "messages": [{"role": "user", "content": PROMPT}]})),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_direct_path_answers_records_and_charges_as_the_general_one(tmp_path: Path, case: str) -> None:
    assert_same(*run_both(tmp_path, *CASES[case]))


def test_a_disconnect_before_the_answer_is_recorded_as_on_the_general_path(tmp_path: Path) -> None:
    found: list[Outcome] = []
    for name in ("direct", "general"):
        stalling = StallingUpstream(None)  # reads the request, never answers
        harness = gateway_before(tmp_path / name, stalling)
        try:
            with general_path() if name == "general" else contextlib.nullcontext():
                key_id, token = harness.issue(budget_usd=Decimal("5"), budget_period="day")
                harness.post_and_leave("/v1/messages", f"x-api-key: {token}", {
                    "model": HAIKU, "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}, stalling)
                harness.cancelled_turn()
                found.append(outcome(harness, key_id, 499, None))
        finally:
            harness.stop()
    direct, general = found
    assert any('"turn.cancelled"' in e for e in direct.events)
    assert direct.events == general.events and direct.stored == general.stored and direct.spent == general.spent


def test_the_watcher_takes_its_cancel_back_so_the_handler_answers() -> None:
    """A disconnect cancels the awaited work; the handler's task itself is not left cancelled."""

    async def scenario() -> tuple[Any, bool, int]:
        left = asyncio.Event()

        async def receive() -> dict[str, Any]:
            await left.wait()
            return {"type": "http.disconnect"}

        cancelled: list[str] = []

        class Record:
            def cancelled(self, message: object, reason: str) -> None:
                cancelled.append(reason)

        async def work() -> str:
            left.set()
            await asyncio.sleep(10)
            return "never"

        request = Request({"type": "http", "method": "POST", "headers": []}, receive)
        answer = await GatewayApp.answer_unless_gone(None, request, Record(), work())  # type: ignore[arg-type]
        await asyncio.sleep(0)  # the task goes on: nothing cancels it at its next await
        task = asyncio.current_task()
        assert task is not None
        return answer, cancelled == [], task.cancelling()  # the caller records the cut call (GatewayApp.cut)

    assert asyncio.run(scenario()) == (None, True, 0)


def test_work_that_finishes_first_is_the_answer_and_the_watcher_is_stopped() -> None:
    async def scenario() -> tuple[Any, int]:
        never = asyncio.Event()

        async def receive() -> dict[str, Any]:
            await never.wait()
            return {"type": "http.disconnect"}

        async def work() -> str:
            await asyncio.sleep(0)
            return "answer"

        request = Request({"type": "http", "method": "POST", "headers": []}, receive)
        answer = await GatewayApp.answer_unless_gone(None, request, None, work())  # type: ignore[arg-type]
        await asyncio.sleep(0)
        left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        return answer, len(left)

    assert asyncio.run(scenario()) == ("answer", 0)


def test_a_failure_of_the_work_is_raised_unchanged() -> None:
    async def scenario() -> None:
        async def receive() -> dict[str, Any]:
            await asyncio.Event().wait()
            return {"type": "http.disconnect"}

        async def work() -> str:
            raise ValueError("upstream broke")

        request = Request({"type": "http", "method": "POST", "headers": []}, receive)
        await GatewayApp.answer_unless_gone(None, request, None, work())  # type: ignore[arg-type]

    with pytest.raises(ValueError, match="upstream broke"):
        asyncio.run(scenario())


def test_the_direct_acomplete_matches_astream_on_a_chain_with_a_failed_member() -> None:
    """FallbackChain.acomplete alone (no gateway): the same message, attempts and health as astream's."""
    from metis_core.adapters.client import ModelClient
    from metis_core.messages import user_message as user
    from metis_core.routing.health import HealthTracker
    from metis_core.transport.retry import RetryPolicy

    seen: list[tuple[str, Any]] = []

    class Observer:
        def attempt_started(self, model: str, attempt: int) -> None:
            seen.append(("started", (model, attempt)))

        def attempt_failed(self, model: str, error: BaseException) -> str | None:
            seen.append(("failed", (model, type(error).__name__)))
            return None

    def run(direct: bool) -> tuple[dict[str, Any], list[tuple[str, Any]], list[Any]]:
        seen.clear()
        upstream = ReplayServer().start()
        upstream.script(ANTHROPIC, Reply.recording("anthropic", "error__529_overloaded_error.json", 529))
        upstream.script(OPENAI, Reply.recording("openai_chat", "response__text.json"))
        client = ModelClient(base_urls={"anthropic": upstream.base_url, "openai": upstream.base_url + "/v1"},
                             api_keys={"anthropic": "a", "openai": "o"}, retry=RetryPolicy(max_retries=0))
        health = HealthTracker()
        chain = FallbackChain(client, [HAIKU, "openai:gpt-4o"], health=health)
        try:
            with contextlib.nullcontext() if direct else general_path():
                message = asyncio.run(chain.acomplete([user("hi")], session_id="sess_x", observer=Observer()))
        finally:
            upstream.stop()
        benched = [health.is_available(m) for m in chain.members]
        return Normalizer()(message.model_dump(mode="json")), list(seen), benched

    assert run(direct=True) == run(direct=False)


def _events_of(stream: list[StreamEvent]) -> list[str]:
    return [e.type for e in stream]


def test_the_non_streamed_events_are_one_message_complete_so_nothing_else_is_skipped() -> None:
    """What the direct path leaves out: `astream(stream=False)` yields only the final MessageComplete."""
    from metis_core.adapters.client import ModelClient
    from metis_core.messages import user_message as user
    from metis_core.transport.retry import RetryPolicy

    upstream = ReplayServer().start()
    upstream.script(ANTHROPIC, Reply.recording("anthropic", "response__tool_use.json"))
    client = ModelClient(base_urls={"anthropic": upstream.base_url}, api_keys={"anthropic": "a"},
                         retry=RetryPolicy(max_retries=0))

    async def drain() -> list[StreamEvent]:
        return [e async for e in FallbackChain(client, [HAIKU]).astream([user("hi")], stream=False)]

    try:
        assert _events_of(asyncio.run(drain())) == ["message_complete"]
    finally:
        upstream.stop()
