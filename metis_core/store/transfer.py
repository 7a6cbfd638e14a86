"""A session as one portable JSON document, and back (`metis export` / `metis import`).

The document holds the session fields and every message in its canonical JSON form. Parsing
validates everything before the store writes anything, and can renumber a copy (new session,
message and tool-use ids, references rewritten) so it can live beside its original.
Writing the parsed session is `SessionStore.import_session`'s job, not this module's.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from pydantic import ValidationError

from metis_core.errors import StoreError
from metis_core.ids import new_session_id, new_tool_use_id, new_ulid
from metis_core.messages import Message
from metis_core.messages.migrations import migrate_message_dict
from metis_core.store.records import SessionRecord, ToolIdMap, parse_iso

EXPORT_FORMAT = "metis.session"
EXPORT_FORMAT_VERSION = 1


def session_export(session: SessionRecord, messages: list[Message]) -> dict[str, Any]:
    return {
        "format": EXPORT_FORMAT,
        "format_version": EXPORT_FORMAT_VERSION,
        "session": session.to_json_dict(),
        "messages": [message.model_dump(mode="json") for message in messages],
    }


@dataclass(frozen=True)
class ParsedExport:
    session: SessionRecord
    messages: list[Message]


def _fail(why: str) -> StoreError:
    return StoreError(f"cannot import session: {why}; pass a document made by `metis export`")


def parse_export(data: Mapping[str, Any], *, renumber: bool = False) -> ParsedExport:
    """Validate an exported document; with `renumber`, give the copy fresh ids throughout."""
    if not isinstance(data, Mapping) or data.get("format") != EXPORT_FORMAT:
        raise _fail(f"format is not {EXPORT_FORMAT!r}")
    if data.get("format_version") != EXPORT_FORMAT_VERSION:
        raise _fail(f"format_version {data.get('format_version')!r} is not {EXPORT_FORMAT_VERSION}")
    raw_session, raw_messages = data.get("session"), data.get("messages")
    if not isinstance(raw_session, Mapping) or not isinstance(raw_messages, list):
        raise _fail("it needs a 'session' object and a 'messages' list")
    session = _session_from_json(raw_session)
    message_dicts = [copy.deepcopy(dict(m)) for m in raw_messages if isinstance(m, Mapping)]
    if len(message_dicts) != len(raw_messages):
        raise _fail("every entry of 'messages' must be an object")
    for index, message in enumerate(message_dicts):
        if message.get("session_id") != session.id:
            raise _fail(f"messages[{index}] belongs to session {message.get('session_id')!r}")
    if renumber:
        session, message_dicts = _renumbered(session, message_dicts)
    try:
        messages = [Message.model_validate(migrate_message_dict(m)) for m in message_dicts]
    except ValidationError as error:
        raise _fail(f"a message is invalid: {error}") from error
    return ParsedExport(session=session, messages=messages)


def _session_from_json(raw: Mapping[str, Any]) -> SessionRecord:
    try:
        ended = raw.get("ended_at")
        tool_map = raw.get("tool_id_map") or {}
        return SessionRecord(
            id=str(raw["id"]),
            workspace_path=str(raw["workspace_path"]),
            active_model=raw.get("active_model"),
            routing_policy=raw.get("routing_policy"),
            tool_id_map={str(k): {str(p): str(i) for p, i in v.items()} for k, v in tool_map.items()},
            title=raw.get("title"),
            schema_version=int(raw.get("schema_version", 0)),
            created_at=parse_iso(str(raw["created_at"])),
            updated_at=parse_iso(str(raw.get("updated_at", raw["created_at"]))),
            ended_at=parse_iso(str(ended)) if ended else None,
            disposition=raw.get("disposition"),
            total_cost_usd=Decimal(0),
            unpriced_message_count=0,
            total_input_tokens=0,
            total_output_tokens=0,
            replay_of=str(raw["replay_of"]) if raw.get("replay_of") else None,
        )
    except (KeyError, ValueError, TypeError, AttributeError) as error:
        raise _fail(f"the session object is incomplete or malformed ({error!r})") from error


def _renumbered(session: SessionRecord, messages: list[dict[str, Any]]) -> tuple[SessionRecord, list[dict[str, Any]]]:
    """Fresh ids in the original order; tool_use ids and every reference to them rewritten.

    Each assistant message of the copy records the id it was copied from (`metadata.copied_from`),
    so spend reports count a call once.
    """
    new_sid = new_session_id()
    tool_ids: dict[str, str] = {}
    for message in messages:
        if message.get("role") == "assistant" and isinstance(message.get("metadata"), dict):
            message["metadata"].setdefault("copied_from", message.get("id"))  # paid for once, by the original
        message["id"] = new_ulid()
        message["session_id"] = new_sid
        for block in message.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                block["id"] = tool_ids.setdefault(block["id"], new_tool_use_id())
    for message in messages:
        for block in message.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                block["tool_use_id"] = tool_ids.get(block["tool_use_id"], block["tool_use_id"])
        metadata = message.get("metadata")
        if isinstance(metadata, dict) and metadata.get("parent_tool_use_id") in tool_ids:
            metadata["parent_tool_use_id"] = tool_ids[metadata["parent_tool_use_id"]]
    tool_map: ToolIdMap = {tool_ids.get(k, k): dict(v) for k, v in session.tool_id_map.items()}
    return replace(session, id=new_sid, tool_id_map=tool_map), messages
