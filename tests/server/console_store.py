"""A recorded multi-session store for the console tests: a routed turn with a tool call, feedback and
a verdict; a flaky gateway session (a failed call, a structured retry, an error ending); a session
full of stored XSS payloads with an unpriced call; an open gateway session with a refusal. Also
`console_server`: `metis serve` over that store, on SQLite or PostgreSQL."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from event_payload_samples import minimal
from postgres_server import shared_server
from support_servers import ScriptedTransport

from metis_core.agent.runtime import Runtime
from metis_core.events.catalog import make_event
from metis_core.events.envelope import Event
from metis_core.learning.database import LearningDatabase
from metis_core.learning.evaluator.verdicts import Verdict, VerdictStore
from metis_core.messages.blocks import TextBlock, ToolUseBlock
from metis_core.messages.message import Message, Role, tool_result_message, user_message
from metis_core.messages.metadata import MessageMetadata, RoutingDecisionRecord, RoutingMode, Usage

from .server_support import LiveServer, WeatherTool, scripted_runtime

XSS_MARKDOWN = ("**bold** and `code` <img src=x onerror=\"window.__xss=1\"> <svg onload=\"window.__xss=2\"></svg>\n\n"
                "[click me](javascript:window.__xss=3) <script>window.__xss=4</script>\n\n"
                "```html\n<script>window.__xss=5</script>\n```\n")
XSS_TITLE = "<img src=x onerror=\"window.__xss=6\">"
XSS_USER = "<img src=x onerror=\"window.__xss=7\">"


@dataclass
class Recorded:
    routed: str
    flaky: str
    hostile: str
    refused: str


class _Clock:
    def __init__(self, start: datetime) -> None:
        self.now = start

    def tick(self, ms: int) -> datetime:
        self.now += timedelta(milliseconds=ms)
        return self.now


def _assistant(session_id: str, model: str, text: str | None, usage: Usage, tool: ToolUseBlock | None = None,
               user: str | None = None) -> Message:
    content: list[Any] = ([TextBlock(text=text)] if text else []) + ([tool] if tool else [])
    return Message(role=Role.ASSISTANT, session_id=session_id, content=content,
                   metadata=MessageMetadata(model=model, provider=model.split(":")[0], usage=usage,
                                            routing=RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model=model,
                                                                          reason="default"),
                                            stop_reason="tool_use" if tool else "end_turn", user_id=user))


class _Writer:
    def __init__(self, runtime: Runtime, clock: _Clock) -> None:
        self.runtime, self.clock = runtime, clock

    def emit(self, kind: str, session_id: str, *, turn: str | None = None, parent: Event | None = None,
             after_ms: int = 5, **payload: Any) -> Event:
        event = make_event(kind, minimal(kind, **payload), session_id=session_id, turn_id=turn, parent=parent)
        event = event.model_copy(update={"timestamp": self.clock.tick(after_ms)})
        self.runtime.trace.append(event)
        return event

    def call(self, session_id: str, turn: str, parent: Event, model: str, after_ms: int, **completed: Any) -> Event:
        started = self.emit("llm.call_started", session_id, turn=turn, parent=parent, model=model,
                            provider=model.split(":")[0])
        return self.emit("llm.call_completed", session_id, turn=turn, parent=started, after_ms=after_ms, model=model,
                         provider=model.split(":")[0], **completed)


def record_console_store(runtime: Runtime) -> Recorded:
    store, clock = runtime.store, _Clock(datetime.now(UTC) - timedelta(hours=2))
    w = _Writer(runtime, clock)
    haiku, gpt = "anthropic:claude-haiku-4-5", "openai:gpt-4o"

    routed = store.create_session("/w", haiku, title="Paris trip").id
    store.append_message(user_message("Plan a weekend in Paris and check the weather", session_id=routed))
    tool = ToolUseBlock(id="tu_01JCONSOLE0000000000000001", name="get_weather", input={"city": "Paris"})
    store.append_message(_assistant(routed, haiku, None, Usage(input_tokens=120, output_tokens=30,
                                                               cost_usd=Decimal("0.0002"), latency_ms=640), tool))
    store.append_message(tool_result_message(tool.id, "18C and sunny", session_id=routed))
    store.append_message(_assistant(routed, haiku, "Paris looks **sunny**: pack light.",
                                    Usage(input_tokens=180, output_tokens=40, cost_usd=Decimal("0.0003"),
                                          latency_ms=700)))
    turn = "turn_01JCONSOLEROUTED"
    started = w.emit("turn.started", routed, turn=turn)
    decided = w.emit("route.decided", routed, turn=turn, parent=started, chosen_model=haiku, chain=[
        {"policy": "pattern", "verdict": "chose", "candidate_model": haiku, "reason": "similar trips went well",
         "confidence": 0.8, "pattern_alternatives": [{"model": gpt, "score": 0.6, "sample_size": 4}]}])
    w.emit("pattern.matched", routed, turn=turn, parent=decided, chosen_model=haiku)
    ids = {"gateway_key_id": "key_red", "user_id": "alice", "team_id": "red"}
    first = w.call(routed, turn, started, haiku, 640, input_tokens=120, output_tokens=30, cost_usd=0.0002,
                   latency_ms=640, **ids)
    called = w.emit("tool.called", routed, turn=turn, parent=first, tool_name="get_weather", tool_use_id=tool.id)
    w.emit("tool.completed", routed, turn=turn, parent=called, after_ms=90, tool_use_id=tool.id)
    w.call(routed, turn, started, haiku, 700, input_tokens=180, output_tokens=40, cost_usd=0.0003, latency_ms=700,
           stop_reason="end_turn", **ids)
    w.emit("turn.completed", routed, turn=turn, parent=started, total_input_tokens=300, total_output_tokens=70,
           total_cost_usd=0.0005)
    w.emit("feedback.explicit", routed, rating="thumbs_up", subject_session_id=routed)
    w.emit("eval.completed", routed, subject_kind="session", subject_id=routed, score=0.9)
    store.end_session(routed, "completed")

    flaky = store.create_session("/w", gpt, title="Quarterly summary").id
    store.append_message(user_message("Summarise the quarterly report", session_id=flaky))
    store.append_message(_assistant(flaky, gpt, "Revenue grew 4%.", Usage(input_tokens=900, output_tokens=60,
                                                                           cost_usd=Decimal("0.004"), latency_ms=2100)))
    turn = "turn_01JCONSOLEFLAKY"
    started = w.emit("turn.started", flaky, turn=turn)
    failed_start = w.emit("llm.call_started", flaky, turn=turn, parent=started, model=gpt, provider="openai")
    w.emit("llm.call_failed", flaky, turn=turn, parent=failed_start, after_ms=300, model=gpt, provider="openai",
           retry_count=2)
    w.emit("llm.output_retried", flaky, turn=turn, parent=started, model=gpt)
    w.call(flaky, turn, started, gpt, 2100, input_tokens=900, output_tokens=60, cost_usd=0.004, latency_ms=2100,
           stop_reason="end_turn", gateway_key_id="key_blue", user_id="bob", team_id="blue", inbound_shape="openai")
    w.emit("turn.completed", flaky, turn=turn, parent=started, total_input_tokens=900, total_output_tokens=60,
           total_cost_usd=0.004)
    w.emit("feedback.explicit", flaky, rating="thumbs_down", subject_session_id=flaky)
    w.emit("eval.completed", flaky, subject_kind="session", subject_id=flaky, score=0.2)
    store.end_session(flaky, "error")

    hostile = store.create_session("/w", "local:llama", title=XSS_TITLE).id
    store.append_message(user_message(XSS_USER + " <script>window.__xss=8</script>", session_id=hostile))
    store.append_message(_assistant(hostile, "local:llama", XSS_MARKDOWN, Usage(input_tokens=10, output_tokens=20)))
    turn = "turn_01JCONSOLEHOSTILE"
    started = w.emit("turn.started", hostile, turn=turn)
    w.call(hostile, turn, started, "local:llama", 50, input_tokens=10, output_tokens=20, cost_usd=0.0,
           pricing_version="unpriced", latency_ms=50, stop_reason="end_turn", user_id=XSS_USER)
    w.emit("turn.cancelled", hostile, turn=turn, parent=started)
    store.end_session(hostile, "abandoned")

    refused = store.create_session("/w", gpt, title="Gateway call").id
    store.append_message(user_message("Write something you will refuse", session_id=refused))
    turn = "turn_01JCONSOLEREFUSED"
    started = w.emit("turn.started", refused, turn=turn)
    w.call(refused, turn, started, gpt, 400, input_tokens=50, output_tokens=5, cost_usd=0.0001, latency_ms=400,
           stop_reason="refusal", gateway_key_id="key_blue", user_id="bob", team_id="blue", inbound_shape="openai")
    w.emit("llm.output_refused", refused, turn=turn, parent=started, model=gpt)
    w.emit("gateway.quota_exceeded", "system", gateway_key_id="key_blue", user_id="bob")

    verdicts = VerdictStore(LearningDatabase(runtime.shared_database))
    for session_id, score in ((routed, 0.9), (flaky, 0.2)):
        verdicts.append(Verdict(eval_id=f"ev_{session_id}", subject_kind="session", subject_id=session_id,
                                session_id=session_id, rubric_id="default", rubric_version="1", judge_kind="heuristic",
                                judge_model=None, score=score, confidence=0.5, judge_cost_usd=Decimal(0), signals={},
                                trigger="batch"))
    runtime.trace.flush()
    return Recorded(routed, flaky, hostile, refused)


@contextlib.contextmanager
def console_server(root: Path, backend: str) -> Iterator[tuple[LiveServer, Recorded]]:
    """`metis serve` in `root` over the recorded store, on "sqlite" (a file in root/home) or "postgres"
    (a fresh database of the shared server); stopped and closed on exit."""
    (root / "home").mkdir()
    database = shared_server().fresh_database_url() if backend == "postgres" else None
    runtime = scripted_runtime(root / "home", ScriptedTransport(), WeatherTool(), database)
    recorded = record_console_store(runtime)
    server = LiveServer(runtime, root)
    try:
        yield server, recorded
    finally:
        server.stop()
        runtime.close()
