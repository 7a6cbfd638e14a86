"""Gap detection: events emitted but never persisted are announced once with bus.gap_detected."""

from __future__ import annotations

from pathlib import Path

from store_backends import execute_on
from trace_samples import chain, event

from metis_core.events.bus import EventBus, EventFilter, Subscription
from metis_core.events.envelope import Event
from metis_core.ids import UlidGenerator
from metis_core.trace import TraceStore
from metis_core.trace.gaps import estimate_missing


def _drop(db: Path | str, events: list[Event]) -> None:
    execute_on(db, "DELETE FROM events WHERE id = ?", [(e.id,) for e in events])


def _stored_with_losses(db: Path | str, session_id: str, length: int, lost: tuple[int, ...]) -> list[Event]:
    """A chain of `length` events of `session_id`, stored, then those at the positions `lost` deleted."""
    emitted = chain(session_id, length)
    with TraceStore(db) as store:
        store.append_many(emitted)
    _drop(db, [emitted[i] for i in lost])
    return emitted


def test_events_lost_from_the_middle_of_a_session_are_announced_on_startup(
    tmp_path: Path, db_location: Path | str
) -> None:
    db = db_location
    emitted = chain("sess_crash", 10)
    with TraceStore(db) as store, EventBus(mode="strict") as bus:
        store.attach(bus)
        for e in emitted:
            bus.emit(e)
        bus.flush(10)
    _drop(db, emitted[3:6])  # the crash: events 3, 4, 5 never reached the disk

    announced: list[Event] = []
    with TraceStore(db) as store, EventBus(mode="strict") as bus:  # the next start
        bus.subscribe(
            Subscription(EventFilter(event_types={"bus.gap_detected"}), announced.append, "recorder", fast_path=True)
        )
        gaps = store.check_gaps(bus)
        bus.flush(10)
    assert len(announced) == 1 and len(gaps) == 1
    payload = announced[0].payload
    assert payload["session_id"] == "sess_crash"
    assert payload["gap_start_id"] == emitted[2].id
    assert payload["gap_end_id"] == emitted[6].id
    assert payload["estimated_missing_count"] >= 1
    assert gaps[0].missing_ids == (emitted[5].id,)
    assert announced[0].session_id == "sess_crash" and announced[0].type == "bus.gap_detected"


def test_a_gap_is_announced_once_across_restarts(
    tmp_path: Path, db_location: Path | str
) -> None:
    db = db_location
    emitted = _stored_with_losses(db, "sess_a", 6, lost=(2,))
    for expected in (1, 0):
        sent: list[Event] = []
        with TraceStore(db) as store:
            assert len(store.check_gaps(sent.append)) == expected
            assert len(sent) == expected
            assert [g.gap_end_id for g in store.known_gaps("sess_a")] == [emitted[3].id]


def test_a_complete_trace_has_no_gaps(
    tmp_path: Path, db_location: Path | str
) -> None:
    with TraceStore(db_location) as store:
        store.append_many([*chain("sess_a", 8), *chain("sess_b", 3), event()])
        assert store.detect_gaps() == []
        sent: list[Event] = []
        assert store.check_gaps(sent.append) == [] and sent == []


def test_separate_losses_in_one_session_are_separate_gaps(
    tmp_path: Path, db_location: Path | str
) -> None:
    db = db_location
    emitted = _stored_with_losses(db, "sess_a", 10, lost=(2, 6))
    with TraceStore(db) as store:
        gaps = sorted(store.detect_gaps(), key=lambda g: g.gap_start_id)
    assert [(g.gap_start_id, g.gap_end_id) for g in gaps] == [
        (emitted[1].id, emitted[3].id),
        (emitted[5].id, emitted[7].id),
    ]


def test_parents_removed_by_retention_are_not_gaps(
    tmp_path: Path, db_location: Path | str
) -> None:
    from trace_samples import NOW

    with TraceStore(db_location) as store:
        old_parent = event(at=NOW.replace(year=2020))
        child = event(parent=old_parent, type="gateway.key_revoked")  # audit: survives the sweep
        store.append_many([old_parent, child])
        store.prune(retention_days=1, sink=lambda e: None)
        assert store.get(old_parent.id) is None and store.get(child.id) is not None
        # the parent's id dates from now, not 2020, so only an explicit floor excuses it
        assert [g.missing_ids for g in store.detect_gaps()] == [(old_parent.id,)]

    db = tmp_path / "other.db"
    with TraceStore(db) as store:
        from datetime import UTC, datetime

        generator = UlidGenerator(clock_ms=lambda: int(datetime(2020, 1, 1, tzinfo=UTC).timestamp() * 1000))
        parent = event(at=NOW.replace(year=2020)).model_copy(update={"id": generator.new()})
        orphan = event(parent=parent, type="gateway.key_revoked")
        store.append_many([parent, orphan])
        store.prune(retention_days=1, sink=lambda e: None)
        assert store.detect_gaps() == []


def test_ulid_arithmetic_counts_ids_between_neighbours_in_one_millisecond() -> None:
    generator = UlidGenerator(clock_ms=lambda: 1_700_000_000_000)
    ids = [generator.new() for _ in range(6)]
    assert estimate_missing(ids[0], ids[5], known_missing=1) == 4
    later = UlidGenerator(clock_ms=lambda: 1_700_000_000_500).new()
    assert estimate_missing(ids[0], later, known_missing=2) == 2  # across milliseconds: what is known
    assert estimate_missing("not-a-ulid", ids[1], known_missing=3) == 3


def test_the_store_wide_parent_check_counts_and_groups_what_is_missing(db_location: Path | str) -> None:
    sessions = [chain("sess_a", 6), chain("sess_b", 4)]
    with TraceStore(db_location) as store:
        store.append_many([*sessions[0], *sessions[1], event()])
        whole = store.check_parents()
    assert (whole.events, whole.with_parent, whole.pruned_parents, whole.gaps) == (11, 8, 0, [])
    _drop(db_location, [sessions[0][2], sessions[1][1]])
    with TraceStore(db_location) as store:
        broken = store.check_parents()
    assert broken.events == 9 and broken.missing_parents == 2 and broken.pruned_parents == 0
    assert sorted(g.missing_ids for g in broken.gaps) == sorted([(sessions[0][2].id,), (sessions[1][1].id,)])
