"""Causal chains: the §8.1 "what time is it?" chain walks back from turn.completed to
turn.started with no missing links; broken and looping chains are reported, not papered over."""

from __future__ import annotations

import pytest
from event_payload_samples import MINIMAL_PAYLOADS, minimal

from metis_core.errors import BrokenCausalChainError
from metis_core.events.bus import BusMode, EventBus
from metis_core.events.catalog import make_event
from metis_core.events.causality import build_tree, walk_to_root
from metis_core.events.envelope import Event
from metis_core.events.recorder import EventRecorder

SESSION = "sess_42"


def _chain_8_1() -> list[Event]:
    """Spec §8.1: session.created, then one turn with a current_time tool call."""

    def make(event_type: str, parent: Event | None, **changes: object) -> Event:
        turn_id = None if event_type == "session.created" else "turn_1"
        return make_event(
            event_type, minimal(event_type, **changes), session_id=SESSION, turn_id=turn_id, parent=parent
        )

    session = make("session.created", None)
    started = make("turn.started", None)
    decided = make("route.decided", started)
    call_1 = make("llm.call_started", started)
    done_1 = make("llm.call_completed", call_1, produced_tool_calls=1, stop_reason="tool_use")
    tool_called = make("tool.called", done_1, tool_name="current_time")
    tool_done = make("tool.completed", tool_called, success=True)
    call_2 = make("llm.call_started", tool_done)
    done_2 = make("llm.call_completed", call_2, produced_tool_calls=0, stop_reason="end_turn")
    completed = make("turn.completed", started)
    return [session, started, decided, call_1, done_1, tool_called, tool_done, call_2, done_2, completed]


def test_walk_from_turn_completed_reaches_turn_started_with_no_missing_links() -> None:
    events = _chain_8_1()
    by_id = {e.id: e for e in events}
    chain = walk_to_root(events[-1].id, by_id.get)
    assert [e.type for e in chain] == ["turn.completed", "turn.started"]


def test_walk_from_the_last_llm_call_passes_through_the_tool_cycle() -> None:
    events = _chain_8_1()
    by_id = {e.id: e for e in events}
    chain = walk_to_root(events[8].id, by_id.get)
    assert [e.type for e in chain] == [
        "llm.call_completed",
        "llm.call_started",
        "tool.completed",
        "tool.called",
        "llm.call_completed",
        "llm.call_started",
        "turn.started",
    ]


def test_the_chain_survives_a_trip_through_the_bus() -> None:
    bus = EventBus(mode=BusMode.STRICT)
    recorder = EventRecorder()
    bus.subscribe(recorder.subscription())
    events = _chain_8_1()
    for event in events:
        bus.emit(event)
    bus.shutdown()
    chain = walk_to_root(events[8].id, recorder.lookup)
    assert chain[-1] == events[1]


def test_a_missing_parent_raises_with_the_partial_chain() -> None:
    events = _chain_8_1()
    by_id = {e.id: e for e in events if e.type != "tool.called"}
    with pytest.raises(BrokenCausalChainError) as raised:
        walk_to_root(events[8].id, by_id.get)
    tool_called = events[5]
    assert raised.value.missing_event_id == tool_called.id
    assert [e.type for e in raised.value.walked] == ["llm.call_completed", "llm.call_started", "tool.completed"]


def test_an_unknown_starting_event_raises() -> None:
    with pytest.raises(BrokenCausalChainError, match="starting event"):
        walk_to_root("01JNOTTHERE", lambda event_id: None)


def test_a_loop_in_parent_pointers_raises_instead_of_spinning() -> None:
    first = make_event("turn.started", MINIMAL_PAYLOADS["turn.started"], session_id="s", parent="B")
    looped = first.model_copy(update={"id": "A"})
    other = make_event("turn.completed", MINIMAL_PAYLOADS["turn.completed"], session_id="s", parent="A")
    other = other.model_copy(update={"id": "B"})
    by_id = {"A": looped, "B": other}
    with pytest.raises(BrokenCausalChainError, match="loops"):
        walk_to_root("A", by_id.get)


def test_build_tree_nests_children_under_parents_in_creation_order() -> None:
    events = _chain_8_1()
    tree = build_tree(reversed(events))
    assert tree.complete
    assert [root.event.type for root in tree.roots] == ["session.created", "turn.started"]
    turn = tree.roots[1]
    assert [child.event.type for child in turn.children] == ["route.decided", "llm.call_started", "turn.completed"]
    rendered = [(depth, node.event.type) for depth, node in tree.walk()]
    assert rendered[:3] == [(0, "session.created"), (0, "turn.started"), (1, "route.decided")]
    assert max(depth for depth, _ in rendered) == 6  # turn.started -> ... -> second llm.call_completed
    assert len(rendered) == len(events)


def test_build_tree_flags_events_whose_parent_is_absent() -> None:
    events = _chain_8_1()
    without_tool_called = [e for e in events if e.type != "tool.called"]
    tree = build_tree(without_tool_called)
    assert not tree.complete
    tool_done = events[6]
    assert tree.missing_parents == {tool_done.id: events[5].id}
    orphan = next(root for root in tree.roots if root.event.id == tool_done.id)
    assert orphan.parent_missing
