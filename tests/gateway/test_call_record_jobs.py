"""A gateway call's record reaches the writer as one job when the writer gets to it after the call
ended (as on a busy gateway, within the writer's linger), as more when it got there mid-call; its
pieces run in order, each guarded on its own: a failed piece loses only itself."""

from __future__ import annotations

import logging
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions
from metis_core.events.bus import BusMode, EventBus
from metis_core.events.recorder import EventRecorder
from metis_core.gateway.call_record import CallRecord
from metis_core.gateway.record_writer import RecordWriter
from metis_core.gateway.shapes.base import InboundRequest
from metis_core.ids import new_session_id
from metis_core.messages import Message, MessageMetadata, MessageStatus, Role, TextBlock, Usage
from metis_core.messages.message import user_message
from metis_core.messages.metadata import RoutingDecisionRecord, RoutingMode
from metis_core.store.sessions import SessionStore

from .gateway_harness import hold


class CountingWriter(RecordWriter):
    def __init__(self, store: SessionStore, bus: EventBus) -> None:
        super().__init__(store, bus=bus, linger=0)
        self.submitted = 0

    def submit(self, job: Callable[[], object]) -> None:
        self.submitted += 1
        super().submit(job)


def _call(tmp_path: Path) -> tuple[CallRecord, CountingWriter, EventRecorder, SessionStore, Message]:
    bus = EventBus(mode=BusMode.STRICT)
    recorder = EventRecorder()
    bus.subscribe(recorder.subscription())
    store = SessionStore(tmp_path / "metis.db")
    writer = CountingWriter(store, bus)
    sid = new_session_id()
    options = AdapterOptions(model="claude-haiku-4-5", max_tokens=20)
    request = InboundRequest(messages=[user_message("weather?", session_id=sid)], tools=[], options=options,
                             tool_ids=ToolIdMap(), stream=False)
    key = SimpleNamespace(id="gk_1", user_id="usr_1", team_id=None)
    record = CallRecord(SimpleNamespace(bus=bus), writer, key, "anthropic", sid, request,  # type: ignore[arg-type]
                        "anthropic:claude-haiku-4-5")
    answer = Message(role=Role.ASSISTANT, session_id=sid, content=[TextBlock(text="sunny")], metadata=MessageMetadata(
        model="anthropic:claude-haiku-4-5", provider="anthropic", stop_reason="end_turn",
        routing=RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model="anthropic:claude-haiku-4-5",
                                      reason="asked"),
        usage=Usage(input_tokens=3, output_tokens=1, cost_usd=Decimal("0.00001"), pricing_version="t")))
    return record, writer, recorder, store, answer


def _recorded_in_order(record: CallRecord, recorder: EventRecorder, store: SessionStore) -> None:
    assert recorder.types()[-4:] == ["turn.started", "llm.call_started", "llm.call_completed", "turn.completed"]
    started, call, completed = (recorder.of_type(t)[0] for t in ("llm.call_started", "llm.call_completed",
                                                                  "turn.completed"))
    assert call.parent_event_id == started.id and call.payload["gateway_key_id"] == "gk_1"
    assert started.payload["request_options"]["max_tokens"] == 20
    assert completed.payload["total_output_tokens"] == 1
    assert [m.role for m in store.load_messages(record.session_id)] == [Role.USER, Role.ASSISTANT]


def test_a_call_that_ends_before_the_writer_reaches_it_is_one_job_with_its_events_in_order(tmp_path: Path) -> None:
    record, writer, recorder, store, answer = _call(tmp_path)
    release = hold(writer)
    record.begin(5)
    record.attempt_started("anthropic:claude-haiku-4-5", 1)
    record.completed(answer)
    release.set()
    writer.drain()
    writer.bus.flush()  # type: ignore[union-attr]
    assert writer.submitted == 2  # the holding job, and this call's start, attempt and ending as one
    _recorded_in_order(record, recorder, store)
    writer.close()


def test_a_call_the_writer_reached_mid_way_submits_its_ending_as_a_job_of_its_own(tmp_path: Path) -> None:
    record, writer, recorder, store, answer = _call(tmp_path)
    release = hold(writer)
    record.begin(5)
    record.attempt_started("anthropic:claude-haiku-4-5", 1)
    release.set()
    writer.drain()  # the writer has run the call's start while the upstream answers
    record.completed(answer)
    writer.drain()
    writer.bus.flush()  # type: ignore[union-attr]
    assert writer.submitted == 3  # the holding job, the call's start and attempt, its ending
    _recorded_in_order(record, recorder, store)
    writer.close()


def test_a_failing_piece_of_the_ending_loses_only_itself(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    record, writer, recorder, store, answer = _call(tmp_path)
    record.begin(5)
    record.attempt_started("anthropic:claude-haiku-4-5", 1)

    monkeypatch.setattr(record.recorder, "emit_trusted", _failing_for("turn.completed", record.recorder.emit_trusted))
    caplog.set_level(logging.ERROR, "metis_core.gateway")
    record.completed(answer)
    writer.drain()
    writer.bus.flush()  # type: ignore[union-attr]
    assert "turn.completed" not in recorder.types() and "llm.call_completed" in recorder.types()
    assert len(store.load_messages(record.session_id)) == 2  # the conversation after it is still stored
    assert "recording failed" in caplog.text
    writer.close()


def _failing_for(event_type: str, emit: Callable[..., Any]) -> Callable[..., Any]:
    def emit_or_fail(kind: str, *args: Any, **kwargs: Any) -> Any:
        if kind == event_type:
            raise RuntimeError(f"no {event_type} today")
        return emit(kind, *args, **kwargs)

    return emit_or_fail


def test_an_incomplete_answer_with_usage_is_a_completed_call_as_the_store_counts_it(tmp_path: Path) -> None:
    record, writer, recorder, store, answer = _call(tmp_path)
    answer.metadata.status, answer.metadata.stop_reason = MessageStatus.PARTIAL, "max_tokens"
    record.begin(5)
    record.attempt_started("anthropic:claude-haiku-4-5", 1)
    record.completed(answer)
    writer.drain()
    writer.bus.flush()  # type: ignore[union-attr]
    assert recorder.of_type("llm.call_failed") == []
    [call] = recorder.of_type("llm.call_completed")
    assert call.payload["cost_usd"] == 0.00001 and call.payload["stop_reason"] == "max_tokens"
    session = store.get_session(record.session_id)
    assert session is not None and session.total_cost_usd == Decimal("0.00001")
    writer.close()
