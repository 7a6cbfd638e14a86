"""Context compaction: a long chat on a small-window model never overflows, loses no stored message,
and every compaction is on the record with its cost; a swap to a smaller window compacts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from anthropic_sse import anthropic_stream
from support_servers import API_KEYS, BASE_URLS

from metis_core.adapters.client import ModelClient
from metis_core.agent.compaction.view import SUMMARY_HEADER, baseline, summary_block
from metis_core.agent.runtime import Runtime
from metis_core.agent.session import Session
from metis_core.agent.structured_turn import run_structured_turn
from metis_core.agent.tools.base import ToolContext, ToolOutcome
from metis_core.agent_config import compaction_config
from metis_core.config import load_config
from metis_core.errors import CompactionConfigError, ConfigError
from metis_core.events.bus import EventBus
from metis_core.events.envelope import Event
from metis_core.messages import (
    BlockOrigin,
    CompactionBlock,
    Message,
    MessageMetadata,
    Role,
    RoutingDecisionRecord,
    RoutingMode,
    SideEffects,
    TextBlock,
    ToolDefinition,
    Usage,
)
from metis_core.structured.spec import output_spec
from metis_core.transport.retry import RetryPolicy

WINDOW = 32_768
SMALL = "anthropic:claude-haiku-4-5"
"""Declared a 32k-token window in the test's config.yaml."""
LARGE = "anthropic:claude-sonnet-4-5"
TURNS = 400


class LogTool:
    """A read-only tool whose results are long: what trimming cuts first."""

    definition = ToolDefinition(
        name="read_log", description="Read the build log.", input_schema={"type": "object", "properties": {}},
        side_effects=SideEffects.READ, requires_workspace=False)

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        return ToolOutcome("log line: compiled module ok\n" * 300)


class WindowedAnthropic:
    """A fake Messages API that refuses, as the real one does, any prompt over the model's window
    (counted as request bytes / 4), answers chat turns as SSE, and summarising calls as JSON."""

    def __init__(self, windows: dict[str, int]) -> None:
        self.windows = windows
        self.largest: dict[str, int] = {}
        self.summaries = 0
        self.turns = 0
        self.counted = 0

    def handler(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        model = "anthropic:" + body["model"]
        tokens = len(request.content) // 4
        if request.url.path.endswith("/count_tokens"):
            self.counted += 1
            return httpx.Response(200, json={"input_tokens": tokens})
        self.largest[model] = max(self.largest.get(model, 0), tokens)
        window = self.windows[model]
        if tokens > window:
            return httpx.Response(400, json={"type": "error", "error": {
                "type": "invalid_request_error", "message": f"prompt is too long: {tokens} tokens > {window} maximum"}})
        if not body.get("stream"):
            self.summaries += 1
            return httpx.Response(200, json={
                "id": f"msg_sum{self.summaries}", "type": "message", "role": "assistant", "model": body["model"],
                "content": [{"type": "text", "text": f"Summary {self.summaries}: the user asked about topics; "
                                                     "decisions and facts so far are noted here."}],
                "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": tokens, "output_tokens": 40}})
        if "output_config" in body:  # a structured turn: the schema travelled as output_config.format
            return self._sse(body["model"], '{"verdict": "fits"}', tokens)
        last = body["messages"][-1]
        if last["role"] == "user" and isinstance(last["content"], list) and \
                last["content"][-1].get("type") == "tool_result":
            return self._sse(body["model"], "The log shows the build passed. " * 20, tokens)
        self.turns += 1
        if self.turns % 10 == 0:
            return self._sse(body["model"], "Let me read the log.", tokens, [(f"toolu_{self.turns}", "read_log", {})])
        return self._sse(body["model"], f"Answer {self.turns}: " + "here is a detailed explanation. " * 60, tokens)

    @staticmethod
    def _sse(model: str, text: str, tokens: int, uses: list[tuple[str, str, dict[str, Any]]] | None = None
             ) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=anthropic_stream(model, text, uses or [], input_tokens=tokens))


def _runtime(home: Path, fake: WindowedAnthropic) -> Runtime:
    transport = httpx.MockTransport(fake.handler)
    client = ModelClient(http_client=httpx.Client(transport=transport),
                         async_http_client=httpx.AsyncClient(transport=transport), base_urls=BASE_URLS,
                         api_keys=API_KEYS, retry=RetryPolicy(max_retries=0))
    runtime = Runtime(home=home, client=client, bus=EventBus(mode="strict"), configured_providers=set(API_KEYS))
    runtime.tools.register(LogTool())
    return runtime


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "home"
    root.mkdir()
    (root / "routing.yaml").write_text(f"default: {LARGE}\n")
    (root / "config.yaml").write_text(
        f"models:\n  {SMALL}: {{max_context_tokens: {WINDOW}}}\n"
        "compaction:\n  keep_last_turns: 3\n  summary_max_tokens: 512\n")
    (tmp_path / "workspace").mkdir()
    yield root


def _events(runtime: Runtime, session_id: str) -> list[Event]:
    runtime.bus.flush()
    runtime.trace.flush()
    return runtime.trace.replay(session_id)


async def test_a_400_turn_chat_on_a_32k_model_never_overflows_and_keeps_every_message(home: Path) -> None:
    fake = WindowedAnthropic({SMALL: WINDOW})
    runtime = _runtime(home, fake)
    try:
        session = runtime.sessions.create(home.parent / "workspace", model=SMALL)
        first = None
        for turn in range(TURNS):
            result = await runtime.turns.run(session, f"Question {turn}: " + "please explain this part. " * 40)
            assert result.error is None, f"turn {turn}: {result.error}"
            first = first or session.history[0].id
        stored = runtime.store.load_messages(session.id)
        events = _events(runtime, session.id)
    finally:
        runtime.close()

    assert fake.largest[SMALL] <= WINDOW  # every request fit: no ContextOverflowError was ever possible
    users = [m for m in stored if m.role is Role.USER]
    assert len(users) == TURNS and [m.text() for m in users][:2] == [
        "Question 0: " + "please explain this part. " * 40, "Question 1: " + "please explain this part. " * 40]
    assert sum(1 for m in stored if m.role is Role.TOOL) == TURNS // 10
    summaries = [m for m in stored if summary_block(m) is not None]
    compacted = [e for e in events if e.type == "memory.compacted"]
    by_summary = [e for e in compacted if e.payload["method"] == "summary"]
    assert len(summaries) == len(by_summary) >= 10 and fake.summaries >= len(summaries)
    assert fake.counted >= len(summaries)  # the exact count confirmed each compaction the estimate asked for
    for event in by_summary:
        payload = event.payload
        assert payload["tokens_after"] < payload["tokens_before"] and payload["window_tokens"] == WINDOW
        assert payload["cost_usd"] > 0 and payload["model"] == SMALL
        assert payload["compaction_message_id"] in {m.id for m in summaries}
    # the summarising calls are charged like any call: events, stored usage, the session's totals
    charged = sum((m.metadata.usage.cost_usd for m in summaries if m.metadata.usage), Decimal(0))
    assert charged == pytest.approx(Decimal(str(sum(e.payload["cost_usd"] for e in by_summary))), rel=Decimal("1e-6"))
    completed = [e for e in events if e.type == "llm.call_completed"]
    assert len(completed) == fake.summaries + fake.turns + TURNS // 10
    turns = [e.payload for e in events if e.type == "turn.completed"]
    assert sum(t["llm_call_count"] for t in turns) == len(completed)  # the turns count their summarising calls
    stored_cost = sum((m.metadata.usage.cost_usd for m in stored if m.metadata.usage and m.metadata.usage.cost_usd),
                      Decimal(0))
    assert sum(Decimal(str(t["total_cost_usd"])) for t in turns) == pytest.approx(stored_cost, rel=Decimal("1e-6"))


async def _long_history_on_the_large_model(runtime: Runtime, home: Path) -> Session:
    """A session of 60 long turns on LARGE: about 45k tokens, more than SMALL's window."""
    session = runtime.sessions.create(home.parent / "workspace", model=LARGE)
    for turn in range(60):
        await runtime.turns.run(session, f"Question {turn}: " + "please explain this part. " * 40)
    return session


async def test_a_swap_to_a_smaller_window_compacts_instead_of_refusing(home: Path) -> None:
    fake = WindowedAnthropic({SMALL: WINDOW, LARGE: 200_000})
    runtime = _runtime(home, fake)
    try:
        session = await _long_history_on_the_large_model(runtime, home)
        assert fake.largest[LARGE] > WINDOW and fake.summaries == 0  # the big model needed no compaction
        runtime.sessions.swap_model(session, SMALL)  # the old check refused: ~45k tokens > 32k
        result = await runtime.turns.run(session, "And now, on the small model?")
        events = _events(runtime, session.id)
    finally:
        runtime.close()
    assert result.error is None and result.model == SMALL and fake.largest[SMALL] <= WINDOW
    compacted = [e for e in events if e.type == "memory.compacted"]
    assert [(e.payload["method"], e.payload["trigger"]) for e in compacted] == [("summary", "model_swap")]
    assert not [e for e in events if e.type == "routing.constraint_failure"]


async def test_a_structured_turn_on_a_long_history_compacts_too(home: Path) -> None:
    fake = WindowedAnthropic({SMALL: WINDOW, LARGE: 200_000})
    runtime = _runtime(home, fake)
    try:
        session = await _long_history_on_the_large_model(runtime, home)
        runtime.sessions.swap_model(session, SMALL)
        spec = output_spec({"type": "object", "properties": {"verdict": {"type": "string"}},
                            "required": ["verdict"], "additionalProperties": False})
        outcome = await run_structured_turn(runtime.turns, session, "Does it fit?", spec)
        events = _events(runtime, session.id)
    finally:
        runtime.close()
    assert outcome.output is not None and outcome.output.value == {"verdict": "fits"}
    assert outcome.turn.llm_calls == 1 + fake.summaries  # the answer and the summarising calls
    assert fake.largest[SMALL] <= WINDOW
    assert [e.payload["trigger"] for e in events if e.type == "memory.compacted"] == ["model_swap"]


async def test_slash_compact_summarises_now_and_the_view_carries_the_summary_and_the_pins(home: Path) -> None:
    fake = WindowedAnthropic({SMALL: WINDOW, LARGE: 200_000})
    runtime = _runtime(home, fake)
    try:
        session = runtime.sessions.create(home.parent / "workspace", model=LARGE)
        for turn in range(8):
            await runtime.turns.run(session, f"Question {turn}")
        session.pin(session.history[2].id if session.history[2].role is Role.USER else
                    next(m.id for m in session.history[1:] if m.role is Role.USER))
        prepared = await runtime.compactor.compact_now(session)
        assert prepared.compacted is not None and prepared.compacted.payload["trigger"] == "manual"
        lead = prepared.messages[0].text()
        assert lead.startswith(SUMMARY_HEADER) and "Question 0" in lead and "Question 1" in lead
        assert sum(1 for m in prepared.messages if m.role is Role.USER) == 3  # the last three turns
        await runtime.turns.run(session, "Go on")
        stored = runtime.store.load_messages(session.id)
    finally:
        runtime.close()
    assert sum(1 for m in stored if m.role is Role.USER) == 9  # nothing lost
    with pytest.raises(CompactionConfigError, match="pinned"):
        session.pin(next(m.id for m in stored if m.role is Role.ASSISTANT))


@pytest.mark.parametrize(("values", "field"), [({"threshold": 1.5}, "threshold"), ({"threshold": 0}, "threshold"),
                                               ({"keep_last_turns": -1}, "keep_last_turns")])
def test_bad_compaction_settings_are_a_named_error(values: dict[str, Any], field: str, tmp_path: Path) -> None:
    with pytest.raises(CompactionConfigError, match=f"compaction.{field}"):
        compaction_config(**values)
    key, value = next(iter(values.items()))
    (tmp_path / "config.yaml").write_text(f"compaction:\n  {key}: {value}\n")
    with pytest.raises(ConfigError, match=field):
        load_config(tmp_path).compaction  # noqa: B018 - reading it validates it


def test_a_provider_compaction_block_starts_the_view_at_its_turn() -> None:
    origin = BlockOrigin(provider="anthropic", api="messages", model="claude-opus-4-6")

    answered = MessageMetadata(model="anthropic:claude-opus-4-6", provider="anthropic", usage=Usage(),
                               routing=RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model="anthropic:x",
                                                             reason="test"))

    def said(role: Role, text: str) -> Message:
        return Message(role=role, content=[TextBlock(text=text)],
                       metadata=answered if role is Role.ASSISTANT else MessageMetadata())

    compacted = Message(role=Role.ASSISTANT, metadata=answered, content=[
        CompactionBlock(text="Summary of turns 1-2", payload={"type": "compaction"}, origin=origin),
        TextBlock(text="second answer")])
    history = [said(Role.USER, "first"), said(Role.ASSISTANT, "first answer"), said(Role.USER, "second"),
               compacted, said(Role.USER, "third")]
    base = baseline(history, set(), pin_first_user=True)
    assert base.summary is None and base.pinned == []  # nothing of metis's own: the provider summarised
    assert [m.text() for m in base.live] == ["second", "second answer", "third"]
