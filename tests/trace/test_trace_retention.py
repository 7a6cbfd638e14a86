"""Retention: old events go, audit events stay, dry runs change nothing, real runs emit trace.swept."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from trace_samples import NOW, event

from metis_core.events.bus import EventBus, EventFilter, Subscription
from metis_core.events.catalog import AUDIT_EVENT_TYPES
from metis_core.events.envelope import SYSTEM_SESSION_ID, Event
from metis_core.trace import TraceStore


@pytest.fixture
def store(tmp_path: Path, db_location: Path | str) -> TraceStore:
    s = TraceStore(db_location)
    old = [event(type="tool.called", at=NOW - timedelta(days=100 + i)) for i in range(5)]
    old_audit = [event(type=t, at=NOW - timedelta(days=200)) for t in sorted(AUDIT_EVENT_TYPES)]
    recent = [event(type="tool.called", at=NOW - timedelta(days=10 + i)) for i in range(3)]
    s.append_many([*old, *old_audit, *recent])
    yield s
    s.close()


def test_old_operational_events_are_deleted_and_audit_events_kept(store: TraceStore) -> None:
    sent: list[Event] = []
    result = store.prune(90, now=NOW, sink=sent.append)
    assert (result.rows_deleted, result.rows_audit_exempt) == (5, len(AUDIT_EVENT_TYPES))
    remaining = store.events()
    assert {e.type for e in remaining if e.timestamp < NOW - timedelta(days=90)} == AUDIT_EVENT_TYPES
    assert sum(1 for e in remaining if e.type == "tool.called") == 3
    assert result.cutoff_timestamp == NOW - timedelta(days=90)
    assert result.oldest_kept_timestamp == NOW - timedelta(days=200)
    assert result.swept_at == NOW and not result.dry_run


def test_a_dry_run_counts_but_deletes_and_emits_nothing(store: TraceStore) -> None:
    before = store.events()
    sent: list[Event] = []
    progress: list[tuple[int, int]] = []
    result = store.prune(90, dry_run=True, now=NOW, sink=sent.append, progress=lambda d, t: progress.append((d, t)))
    assert result.dry_run and result.rows_deleted == 5 and result.rows_audit_exempt == len(AUDIT_EVENT_TYPES)
    assert result.oldest_kept_timestamp == NOW - timedelta(days=200)
    assert store.events() == before
    assert sent == []
    assert progress == [(0, 5)]


def test_a_real_run_emits_trace_swept_through_the_bus(store: TraceStore) -> None:
    swept: list[Event] = []
    with EventBus(mode="strict") as bus:
        store.attach(bus)
        bus.subscribe(Subscription(EventFilter(event_types={"trace.swept"}), swept.append, "rec", fast_path=True))
        result = store.prune(90, now=NOW, sink=bus)
        bus.flush(10)
    (event_,) = swept
    assert event_.session_id == SYSTEM_SESSION_ID and event_.parent_event_id is None
    assert event_.payload["rows_deleted"] == 5 and event_.payload["dry_run"] is False
    assert event_.payload["rows_audit_exempt"] == result.rows_audit_exempt
    store.flush()
    assert store.get(event_.id) is not None  # persisted by the subscriber, and audit-flagged:
    store.prune(0, now=NOW + timedelta(days=365), sink=lambda e: None)
    assert store.events(types=["tool.called", "bus.subscriber_registered"]) == []
    assert store.get(event_.id) is not None


def test_without_a_sink_the_sweep_is_recorded_in_the_store_itself(store: TraceStore) -> None:
    store.prune(90, now=NOW)
    old_sweep, record = store.events(types=["trace.swept"])  # the fixture's own, then this one
    assert old_sweep.payload == {"n": 1}
    assert record.payload["rows_deleted"] == 5


def test_deletion_runs_in_batches_and_reports_progress(store: TraceStore, monkeypatch: pytest.MonkeyPatch) -> None:
    from metis_core.trace import retention

    monkeypatch.setattr(retention, "DELETE_BATCH_ROWS", 2)
    progress: list[tuple[int, int]] = []
    result = store.prune(90, now=NOW, sink=lambda e: None, progress=lambda d, t: progress.append((d, t)))
    assert result.rows_deleted == 5
    assert progress == [(2, 5), (4, 5), (5, 5)]


def test_an_empty_trace_sweeps_to_nothing(tmp_path: Path, db_location: Path | str) -> None:
    with TraceStore(db_location) as store:
        result = store.prune(90, now=NOW, sink=lambda e: None)
        assert (result.rows_deleted, result.rows_audit_exempt, result.oldest_kept_timestamp) == (0, 0, None)
        with pytest.raises(ValueError):
            store.prune(-1)
