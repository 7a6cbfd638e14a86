"""What the session store hands back: session, tool-call and totals records, and their row forms.

Records are plain frozen values read from one row; they carry no connection and no behaviour.
Times are stored as integer unix microseconds and come back as UTC datetimes, exactly.
Messages themselves are `metis_core.messages.Message`; this module does not describe them.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from enum import StrEnum
from typing import Any

import orjson

ToolIdMap = dict[str, dict[str, str]]
"""canonical tool_use id -> {provider name -> that provider's id for the same call}."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_us(value: datetime) -> int:
    """Unix microseconds of an aware datetime, exact (no float on the way)."""
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_us(value: int) -> datetime:
    seconds, micros = divmod(value, 1_000_000)
    return datetime.fromtimestamp(seconds, UTC).replace(microsecond=micros)


def now_us() -> int:
    return to_us(datetime.now(UTC))


class ToolCallStatus(StrEnum):
    PENDING = "pending"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class SessionRecord:
    id: str
    workspace_path: str
    active_model: str | None
    routing_policy: dict[str, Any] | None
    tool_id_map: ToolIdMap
    title: str | None
    schema_version: int
    created_at: datetime
    updated_at: datetime
    ended_at: datetime | None
    disposition: str | None
    total_cost_usd: Decimal
    """Sum of the priced assistant messages; see `unpriced_message_count` for the others."""
    unpriced_message_count: int
    total_input_tokens: int
    total_output_tokens: int
    parent_session_id: str | None = None
    """The planner session that delegated to this worker session; None for a top-level session."""
    replay_of: str | None = None
    """The session this one re-ran on another model (`metis replay`); None for any other session."""

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "workspace_path": self.workspace_path,
            "active_model": self.active_model,
            "routing_policy": self.routing_policy,
            "tool_id_map": self.tool_id_map,
            "title": self.title,
            "schema_version": self.schema_version,
            "created_at": _iso(self.created_at),
            "updated_at": _iso(self.updated_at),
            "ended_at": _iso(self.ended_at) if self.ended_at else None,
            "disposition": self.disposition,
            "total_cost_usd": format(self.total_cost_usd, "f"),
            "unpriced_message_count": self.unpriced_message_count,
            "total_input_tokens": self.total_input_tokens,
            "total_output_tokens": self.total_output_tokens,
            "parent_session_id": self.parent_session_id,
            "replay_of": self.replay_of,
        }


SESSION_COLUMNS = (
    "id, workspace_path, active_model, routing_policy_json, tool_id_map_json, title, "
    "schema_version, created_at, updated_at, ended_at, disposition, total_cost_usd, "
    "unpriced_message_count, total_input_tokens, total_output_tokens, parent_session_id, replay_of"
)


def session_from_row(row: sqlite3.Row | tuple[Any, ...]) -> SessionRecord:
    (
        sid,
        workspace,
        model,
        policy,
        tool_map,
        title,
        version,
        created,
        updated,
        ended,
        disposition,
        cost,
        unpriced,
        tokens_in,
        tokens_out,
        parent,
        replay_of,
    ) = tuple(row)
    return SessionRecord(
        id=sid,
        workspace_path=workspace,
        active_model=model,
        routing_policy=orjson.loads(policy) if policy is not None else None,
        tool_id_map=orjson.loads(tool_map),
        title=title,
        schema_version=version,
        created_at=from_us(created),
        updated_at=from_us(updated),
        ended_at=from_us(ended) if ended is not None else None,
        disposition=disposition,
        total_cost_usd=Decimal(cost),
        unpriced_message_count=unpriced,
        total_input_tokens=tokens_in,
        total_output_tokens=tokens_out,
        parent_session_id=parent,
        replay_of=replay_of,
    )


@dataclass(frozen=True)
class ToolCallRecord:
    id: str
    session_id: str
    message_id: str
    result_message_id: str | None
    name: str
    status: ToolCallStatus
    provider_id: str | None
    provider: str | None
    created_at: datetime
    completed_at: datetime | None


TOOL_CALL_COLUMNS = (
    "id, session_id, message_id, result_message_id, name, status, provider_id, provider, created_at, completed_at"
)


def tool_call_from_row(row: tuple[Any, ...]) -> ToolCallRecord:
    (tid, sid, message_id, result_id, name, status, provider_id, provider, created, completed) = row
    return ToolCallRecord(
        id=tid,
        session_id=sid,
        message_id=message_id,
        result_message_id=result_id,
        name=name,
        status=ToolCallStatus(status),
        provider_id=provider_id,
        provider=provider,
        created_at=from_us(created),
        completed_at=from_us(completed) if completed is not None else None,
    )


@dataclass(frozen=True)
class SessionTotals:
    """Usage summed over a session's assistant messages, recomputed from the messages."""

    message_count: int = 0
    assistant_message_count: int = 0
    cost_usd: Decimal = Decimal(0)
    unpriced_message_count: int = 0
    """Model calls with no price (a message can stand for several calls: messages/call_spend.py)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    reasoning_tokens: int = 0
    models: tuple[str, ...] = field(default_factory=tuple)
    model_calls: int = 0
    """The model calls the assistant messages stand for (a structured run's attempts each count)."""


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_iso(value: str) -> datetime:
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)
