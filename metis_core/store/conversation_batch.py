"""New sessions with all their messages, as prepared rows: a few `executemany` per batch, not ~5 statements a message.

`conversation_rows` checks in Python what `insert_message` checks in SQL for a session that is
new and written whole (message ids increasing, each tool_result answering an earlier unanswered
tool_use of the same conversation, no tool_use id twice) and computes the session's totals, so the
rows go in final. It returns None when any conversation of the batch fails a check: the caller
then takes the statement-by-statement path, whose errors name the problem. Uniqueness against
rows already stored (a taken session or message id) is the database's to find.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import orjson

from metis_core.messages import MessageStatus, Role, ToolResultBlock, ToolUseBlock
from metis_core.messages.call_spend import calls_of
from metis_core.store.message_rows import message_row
from metis_core.store.records import ToolCallStatus, now_us

if TYPE_CHECKING:
    from metis_core.store.sessions import StoredConversation

INSERT_SESSION = (
    "INSERT INTO sessions (id, workspace_path, active_model, routing_policy_json, tool_id_map_json, title, "
    "schema_version, created_at, updated_at, parent_session_id, replay_of, total_cost_usd, "
    "unpriced_message_count, total_input_tokens, total_output_tokens) "
    "VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?, NULL, NULL, ?, ?, ?, ?)"
)
INSERT_MESSAGE = (
    "INSERT INTO messages (id, session_id, role, content_json, metadata_json, created_at, schema_version) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
INSERT_TOOL_CALL = (
    "INSERT INTO tool_calls (id, session_id, message_id, result_message_id, name, status, provider_id, provider, "
    "created_at, completed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
TOOL_CALL_NULLABLE = (3, 6, 9)
"""result_message_id, provider_id, completed_at: None in a call not yet answered (most of a gateway
answer's tool calls), written as NULL literals (`multi_row_inserts`' `nullable`)."""


@dataclass(slots=True)
class ConversationRows:
    """The rows of a batch of new conversations, ready for executemany."""

    sessions: list[tuple[Any, ...]] = field(default_factory=list)
    messages: list[tuple[Any, ...]] = field(default_factory=list)
    tool_calls: list[tuple[Any, ...]] = field(default_factory=list)


def conversation_rows(
    conversations: Sequence[StoredConversation], workspace: dict[str, str], schema_version: int,
) -> ConversationRows | None:
    """The batch's rows, or None when a conversation needs the checked, statement-by-statement path.

    `workspace` maps each conversation's workspace_path to its normalized form (the caller's)."""
    rows = ConversationRows()
    seen_sessions: set[str] = set()
    stamp = now_us()
    for item in conversations:
        if item.session_id in seen_sessions:
            return None
        seen_sessions.add(item.session_id)
        tool_map = item.tool_id_map or {}
        if not all(isinstance(v, dict) and all(isinstance(p, str) for p in v.values()) for v in tool_map.values()):
            return None
        calls: dict[str, list[Any]] = {}
        cost, unpriced, input_tokens, output_tokens = Decimal(0), 0, 0, 0
        last_id = ""
        for message in item.messages:
            # The fields read from the models' storage (`__dict__`): each attribute read otherwise goes
            # through BaseModel's __getattr__ hook, and this runs for every message the gateway stores.
            fields = message.__dict__
            message_id = fields["id"]
            if fields["session_id"] != item.session_id or message_id <= last_id:
                return None
            last_id = message_id
            row = message_row(message)
            metadata = fields["metadata"].__dict__
            provider = metadata["provider"]
            created = row[5]  # the message's created_at, as microseconds
            for block in fields["content"]:
                if isinstance(block, ToolUseBlock):
                    if block.id in calls:
                        return None
                    cancelled = metadata["status"] in (MessageStatus.CANCELLED, MessageStatus.ERROR)
                    status = ToolCallStatus.CANCELLED if cancelled else ToolCallStatus.PENDING
                    provider_id = tool_map.get(block.id, {}).get(provider) if provider is not None else None
                    calls[block.id] = [block.id, item.session_id, message_id, None, block.name, status.value,
                                       provider_id, provider, created, None]
                elif isinstance(block, ToolResultBlock):
                    call = calls.get(block.tool_use_id)
                    if call is None or call[3] is not None:
                        return None  # answers nothing issued here, or an answered call: let insert_message say so
                    if call[5] != ToolCallStatus.CANCELLED.value:
                        call[5] = (ToolCallStatus.FAILED if block.is_error else ToolCallStatus.SUCCEEDED).value
                    call[3], call[9] = message_id, created
            usage = metadata["usage"]
            if usage is not None and fields["role"] is Role.ASSISTANT:
                counts = usage.__dict__
                unpriced += calls_of(message)[1]  # a gateway structured answer can stand for several calls
                if counts["cost_usd"] is not None:
                    cost += counts["cost_usd"]
                input_tokens += (  # Usage.total_input_tokens
                    counts["input_tokens"] + counts["cached_input_tokens"] + counts["cache_creation_input_tokens"]
                )
                output_tokens += counts["output_tokens"]
            rows.messages.append(row)
        rows.sessions.append((
            item.session_id, workspace[item.workspace_path], item.active_model,
            orjson.dumps(tool_map, option=orjson.OPT_SORT_KEYS).decode(), item.title, schema_version,
            item.stamp_us, stamp if item.messages else item.stamp_us, format(cost, "f"), unpriced, input_tokens,
            output_tokens,
        ))  # fmt: skip
        rows.tool_calls.extend(tuple(call) for call in calls.values())
    return rows

