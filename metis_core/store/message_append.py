"""Writing one message: its row, its tool_call rows, and the session's running totals.

`insert_message` runs inside a transaction the caller already holds, so a message, the tool
calls it opens or closes and the session totals commit together or not at all. It checks what
only the store can check (the session exists, ids increase, a tool_result answers an open
tool_use of the same session); the message's own invariants are the Message model's job.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

import orjson

from metis_core.errors import SessionInvariantError, SessionNotFoundError, StoreError
from metis_core.messages import Message, MessageStatus, Role, ToolResultBlock, ToolUseBlock
from metis_core.messages.call_spend import calls_of
from metis_core.store.backend import Database
from metis_core.store.message_rows import message_row
from metis_core.store.records import ToolCallStatus, ToolIdMap, now_us, to_us

_INSERT_MESSAGE = (
    "INSERT INTO messages (id, session_id, role, content_json, metadata_json, created_at, "
    "schema_version) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_TOOL_CALL = (
    "INSERT INTO tool_calls (id, session_id, message_id, result_message_id, name, status, "
    "provider_id, provider, created_at, completed_at) VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?, NULL)"
)


def insert_message(
    conn: Database,
    message: Message,
    provider_ids: Mapping[str, str] | None = None,
) -> None:
    """Store `message` in its session. `provider_ids` maps its tool_use ids to the provider's ids."""
    session_id = message.session_id
    if not session_id:
        raise StoreError(f"message {message.id} has no session_id; set it to the session it belongs to")
    # the session row is held until commit, so concurrent appends (several processes on
    # PostgreSQL) add their totals one after the other instead of overwriting each other
    session = conn.execute(conn.statements.session_for_append, (session_id,)).fetchone()
    if session is None:
        raise SessionNotFoundError(
            f"no session {session_id} in {conn.location}; create it with SessionStore.create_session first"
        )
    (last_id,) = conn.execute("SELECT MAX(id) FROM messages WHERE session_id = ?", (session_id,)).fetchone()
    if last_id is not None and message.id <= last_id:
        raise StoreError(
            f"message {message.id} does not sort after the session's last message {last_id}; "
            "message ids must be increasing ULIDs (metis_core.ids.new_ulid)"
        )
    try:
        conn.execute(_INSERT_MESSAGE, message_row(message))
    except conn.duplicate_error as error:
        raise StoreError(f"message {message.id} is already stored in {conn.location}") from error

    tool_map: ToolIdMap = orjson.loads(session[0])
    map_changed = _record_tool_uses(conn, message, tool_map, provider_ids or {})
    _record_tool_results(conn, message)

    assignments = ["updated_at = ?"]
    values: list[object] = [now_us()]
    if map_changed:
        assignments.append("tool_id_map_json = ?")
        values.append(orjson.dumps(tool_map, option=orjson.OPT_SORT_KEYS).decode())
    usage = message.metadata.usage
    if message.role is Role.ASSISTANT and usage is not None:
        unpriced = calls_of(message)[1]
        if unpriced:
            assignments.append("unpriced_message_count = unpriced_message_count + ?")
            values.append(unpriced)
        if usage.cost_usd is not None:
            assignments.append("total_cost_usd = ?")
            values.append(format(Decimal(session[1]) + usage.cost_usd, "f"))
        assignments.append("total_input_tokens = total_input_tokens + ?")
        assignments.append("total_output_tokens = total_output_tokens + ?")
        values.extend([usage.total_input_tokens, usage.output_tokens])
    conn.execute(f"UPDATE sessions SET {', '.join(assignments)} WHERE id = ?", (*values, session_id))


def _record_tool_uses(
    conn: Database,
    message: Message,
    tool_map: ToolIdMap,
    provider_ids: Mapping[str, str],
) -> bool:
    """One tool_calls row per tool_use block; returns whether `tool_map` gained an entry."""
    provider = message.metadata.provider
    if provider_ids and not provider:
        raise StoreError(f"message {message.id} gives provider tool ids but no metadata.provider to file them under")
    status = (
        ToolCallStatus.CANCELLED
        if message.status in (MessageStatus.CANCELLED, MessageStatus.ERROR)
        else ToolCallStatus.PENDING
    )
    changed = False
    for block in message.content:
        if not isinstance(block, ToolUseBlock):
            continue
        provider_id = provider_ids.get(block.id)
        if provider is not None and provider_id is not None:
            known = tool_map.setdefault(block.id, {})
            if known.get(provider) != provider_id:
                known[provider] = provider_id
                changed = True
        elif provider is not None:
            provider_id = tool_map.get(block.id, {}).get(provider)
        try:
            conn.execute(
                _INSERT_TOOL_CALL,
                (
                    block.id,
                    message.session_id,
                    message.id,
                    block.name,
                    status.value,
                    provider_id,
                    provider,
                    to_us(message.created_at),
                ),
            )
        except conn.duplicate_error as error:
            raise SessionInvariantError(
                f"message {message.id}", [f"tool_use id {block.id} is already used by another message"]
            ) from error
    return changed


def _record_tool_results(conn: Database, message: Message) -> None:
    for block in message.content:
        if not isinstance(block, ToolResultBlock):
            continue
        call = conn.execute(
            "SELECT status, result_message_id FROM tool_calls WHERE id = ? AND session_id = ?",
            (block.tool_use_id, message.session_id),
        ).fetchone()
        if call is None:
            raise SessionInvariantError(
                f"message {message.id}",
                [f"tool_result answers {block.tool_use_id}, which no tool_use in this session issued"],
            )
        if call[1] is not None:
            raise SessionInvariantError(
                f"message {message.id}",
                [f"tool_use {block.tool_use_id} was already answered by message {call[1]}"],
            )
        if call[0] == ToolCallStatus.CANCELLED.value:
            status = ToolCallStatus.CANCELLED  # the answer to a cancelled call records the cancel
        else:
            status = ToolCallStatus.FAILED if block.is_error else ToolCallStatus.SUCCEEDED
        conn.execute(
            "UPDATE tool_calls SET status = ?, result_message_id = ?, completed_at = ? WHERE id = ?",
            (status.value, message.id, to_us(message.created_at), block.tool_use_id),
        )
