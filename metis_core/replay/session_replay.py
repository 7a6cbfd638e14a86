"""Replaying one stored session on another model: a new linked session, compared turn by turn.

The replay session names its source in `replay_of` (store step 7) and is titled `replay of <source>
on <model>`; earlier turns outside `--turns` are copied into it (with fresh ids) so the selected ones
see the same history. Each selected user turn runs through the normal agent loop, with tools
answered from the recording (the replay session's own registry, never the runtime's) unless
`live_tools`, asked with the options the original's calls recorded (a structured turn as a
structured turn); what the record lacks is in the report.
Every divergence becomes a turn.replay_diverged event inside the replayed turn, before it completes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metis_core.agent.recording import TurnRecorder
from metis_core.agent.structured_turn import run_structured_turn
from metis_core.agent.turn import TurnResult
from metis_core.errors import ReplayError
from metis_core.events.envelope import Actor, Event
from metis_core.ids import new_tool_use_id, new_ulid
from metis_core.messages import ContentBlock, Message, Role, TextBlock
from metis_core.replay.compare import (
    DEFAULT_TEXT_THRESHOLD,
    Divergence,
    compare_sides,
    mark_structured,
    text_similarity,
)
from metis_core.replay.original_points import OriginalRunIndex
from metis_core.replay.recorded_options import RecordedRequest
from metis_core.replay.recorded_tools import RecordedToolLog, recorded_registry
from metis_core.replay.source import SourceSession, SourceTurn, TurnSide, side_of, split_turns

if TYPE_CHECKING:
    from metis_core.agent.runtime import Runtime
    from metis_core.agent.session import Session


@dataclass
class TurnComparison:
    index: int
    source_turn_id: str | None
    replay_turn_id: str
    user_text: str
    original: TurnSide
    replay: TurnSide
    divergences: list[Divergence] = field(default_factory=list)
    request: RecordedRequest = field(default_factory=lambda: RecordedRequest.of(None))
    """The original's request options the replay asked with, and what it lacked of them."""

    @property
    def diverged(self) -> bool:
        return bool(self.divergences)

    @property
    def first(self) -> Divergence | None:
        return self.divergences[0] if self.divergences else None

    @property
    def similarity(self) -> float:
        return text_similarity(self.original.answer, self.replay.answer)

    def to_json(self) -> dict[str, Any]:
        return {
            "turn": self.index, "source_turn_id": self.source_turn_id, "replay_turn_id": self.replay_turn_id,
            "user_text": self.user_text, "original": self.original.to_json(), "replay": self.replay.to_json(),
            "text_similarity": self.similarity, "diverged": self.diverged,
            "first_divergence": self.first.to_json() if self.first else None,
            "divergences": [d.to_json() for d in self.divergences],
            "request_options": self.request.to_json(),
        }


def _total(values: list[Decimal | None]) -> Decimal | None:
    return None if any(v is None for v in values) else sum((v for v in values if v is not None), Decimal(0))


@dataclass
class ReplayReport:
    source_session_id: str
    replay_session_id: str
    model: str
    live_tools: bool
    turns: list[TurnComparison] = field(default_factory=list)
    tools_served: int = 0
    tools_unmatched: int = 0
    replay_of: str | None = None
    """The link stored on the replay session (its `replay_of` column), read back from the store."""

    @property
    def diverged_turns(self) -> int:
        return sum(1 for t in self.turns if t.diverged)

    def summary(self) -> dict[str, Any]:
        original = _total([t.original.cost_usd for t in self.turns])
        replay = _total([t.replay.cost_usd for t in self.turns])
        count = len(self.turns)
        points = [d.point for t in self.turns for d in t.divergences]
        return {
            "turns": count, "diverged_turns": self.diverged_turns,
            "divergence_rate": round(self.diverged_turns / count, 4) if count else 0.0,
            "tool_call_divergences": points.count("tool_call"), "text_divergences": points.count("text"),
            "original_cost_usd": format(original, "f") if original is not None else None,
            "replay_cost_usd": format(replay, "f") if replay is not None else None,
            "original_tokens": sum(t.original.input_tokens + t.original.output_tokens for t in self.turns),
            "replay_tokens": sum(t.replay.input_tokens + t.replay.output_tokens for t in self.turns),
            "original_latency_ms": sum(t.original.latency_ms for t in self.turns),
            "replay_latency_ms": sum(t.replay.latency_ms for t in self.turns),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "source_session_id": self.source_session_id, "replay_session_id": self.replay_session_id,
            "replay_of": self.replay_of, "model": self.model, "live_tools": self.live_tools,
            "tools": {"served_from_recording": self.tools_served, "not_in_recording": self.tools_unmatched},
            "summary": self.summary(), "turns": [t.to_json() for t in self.turns],
        }


def load_source(rt: Runtime, session_id: str) -> SourceSession:
    """The stored session as turns (SessionNotFoundError when there is none)."""
    record = rt.store.get_session(session_id)
    rt.bus.flush()
    events = rt.trace.replay(session_id)
    turn_ids = [e.turn_id for e in events if e.type == "turn.started" and e.turn_id]
    errors = {e.turn_id: str((e.payload.get("signals_extra") or {}).get("error")) for e in events
              if e.type == "turn.completed" and e.turn_id and (e.payload.get("signals_extra") or {}).get("error")}
    requests: dict[str, dict[str, Any] | None] = {}
    for e in events:  # a turn's calls share its options: the first llm.call_started holds them
        if e.type == "llm.call_started" and e.turn_id and e.turn_id not in requests:
            requests[e.turn_id] = e.payload.get("request_options")
    messages = rt.store.load_messages(session_id)
    first_user = next((i for i, m in enumerate(messages) if m.role is Role.USER), len(messages))
    turns = split_turns(messages, turn_ids, errors, requests)
    return SourceSession(session_id, Path(record.workspace_path), record.active_model, turns,
                         preamble=messages[:first_user])


def _copy(message: Message, session_id: str, ids: dict[str, str]) -> Message:
    """The message for another session: new message id, new tool-call ids (ids are unique store-wide)."""
    data = message.model_dump(mode="json")
    for block in data["content"]:
        if block.get("type") == "tool_use":
            block["id"] = ids.setdefault(block["id"], new_tool_use_id())
        elif block.get("type") == "tool_result":
            block["tool_use_id"] = ids.setdefault(block["tool_use_id"], new_tool_use_id())
    parent = data["metadata"].get("parent_tool_use_id")
    if parent:
        data["metadata"]["parent_tool_use_id"] = ids.setdefault(parent, new_tool_use_id())
    data.update(id=new_ulid(), session_id=session_id)
    return Message.model_validate(data)


def select_turns(source: SourceSession, turns: tuple[int, int | None] | None) -> list[SourceTurn]:
    """The turns `first..last` (1-based, inclusive; last None = to the end); ReplayError outside the session."""
    if not source.turns:
        raise ReplayError(f"session {source.id} has no user turns to replay")
    first, end = turns or (1, None)
    last = len(source.turns) if end is None else end
    if not 1 <= first <= last <= len(source.turns):
        raise ReplayError(f"--turns {first}..{last} is outside session {source.id}, which has "
                          f"{len(source.turns)} user turn(s) (1..{len(source.turns)})")
    return source.turns[first - 1 : last]


def _divergence_payload(source: SourceSession, turn: SourceTurn, model: str, d: Divergence,
                        original: OriginalRunIndex) -> dict[str, Any]:
    at = original.locate(turn.turn_id, d)
    return {
        "source_session_id": source.id, "source_turn_id": turn.turn_id or "unknown", "turn_index": turn.index,
        "step": d.step, "divergence_kind": d.kind, "divergence_point": d.point,
        "original_model": turn.side.model or source.model or "unknown", "replay_model": model,
        "detail": d.detail, "text_similarity": d.similarity,
        "original_sequence": at["sequence"] if at else None, "original_event_id": at["eventId"] if at else None,
    }


async def replay_session(
    rt: Runtime,
    source_session_id: str,
    model: str,
    *,
    turns: tuple[int, int | None] | None = None,
    live_tools: bool = False,
    text_threshold: float = DEFAULT_TEXT_THRESHOLD,
    on_turn: Callable[[TurnComparison], None] | None = None,
    on_session: Callable[[str], None] | None = None,
) -> ReplayReport:
    """Re-run the selected user turns of a stored session on `model` and compare each with the original.

    `on_session` is told the replay session's id as soon as it exists, before any of its turns runs.
    Cancelled, the replay stops after the turn under way and its session ends as `error`."""
    source = load_source(rt, source_session_id)
    selected = select_turns(source, turns)
    original = OriginalRunIndex.of_session(rt, source.id)
    log = RecordedToolLog(source.tool_results())
    # the replay session's own tools: the runtime's registry stays live for every other session
    recorded = None if live_tools else recorded_registry(rt.tools, log)
    session = rt.sessions.create(source.workspace, model=model, title=f"replay of {source.id} on {model}",
                                 replay_of=source.id, tools=recorded)
    if on_session is not None:
        on_session(session.id)
    report = ReplayReport(source.id, session.id, model, live_tools,
                          replay_of=rt.store.get_session(session.id).replay_of)
    disposition = "error"
    try:
        _seed(rt, session, source.preamble, source.turns[: selected[0].index - 1])
        for turn in selected:
            comparison = await _replay_turn(rt, session, source, turn, model, text_threshold, original)
            report.turns.append(comparison)
            if on_turn is not None:
                on_turn(comparison)
            _stop_if_cancelled()
        disposition = "completed"
    finally:
        report.tools_served, report.tools_unmatched = log.served, log.unmatched
        rt.sessions.end(session, disposition)
    return report


def _stop_if_cancelled() -> None:
    """Raise CancelledError when this task was asked to stop: a turn ends a cancel as turn.cancelled
    and returns, so the replay checks between turns (its session then ends as `error`)."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


def _seed(rt: Runtime, session: Session, preamble: list[Message], earlier: list[SourceTurn]) -> None:
    ids: dict[str, str] = {}
    for message in preamble:
        session.append(_copy(message, session.id, ids), rt.store)
    for turn in earlier:
        for message in [turn.user, *turn.messages]:
            session.append(_copy(message, session.id, ids), rt.store)
        session.turn_count += 1


async def _replay_turn(rt: Runtime, session: Session, source: SourceSession, turn: SourceTurn, model: str,
                       threshold: float, index: OriginalRunIndex) -> TurnComparison:
    found: list[TurnComparison] = []

    def compare(result: TurnResult, recorder: TurnRecorder, started: Event | None) -> None:
        original, replay = turn.side, side_of(result.produced, result.error)
        mark_structured(original, replay)
        comparison = TurnComparison(turn.index, turn.turn_id, result.turn_id, turn.user_text, original, replay,
                                    compare_sides(original, replay, threshold))
        for divergence in comparison.divergences:
            payload = _divergence_payload(source, turn, model, divergence, index)
            recorder.emit("turn.replay_diverged", payload, started, actor=Actor.SYSTEM)
        found.append(comparison)

    attachments: list[ContentBlock] = [b for b in turn.user.content if not isinstance(b, TextBlock)]
    request = turn.request
    own_tools = session.tools
    session.tools = request.offered(own_tools or rt.tools)  # the tools the original offered, where they exist
    try:
        if request.output is not None:  # a structured turn: the same output shape and policy
            outcome = await run_structured_turn(rt.turns, session, turn.user_text, request.output,
                                                policy=request.policy, options=request.options,
                                                before_completed=compare)
            result = outcome.turn
        else:
            result = await rt.turns.run(session, turn.user_text, attachments=attachments or None,
                                        options=request.options, before_completed=compare)
    finally:
        session.tools = own_tools
    if not found:  # cancelled: the turn closed without the hook
        replay = side_of(result.produced, result.error or "cancelled")
        found.append(TurnComparison(turn.index, turn.turn_id, result.turn_id, turn.user_text, turn.side, replay,
                                    compare_sides(turn.side, replay, threshold)))
    found[0].request = request
    return found[0]
