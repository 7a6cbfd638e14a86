"""Numbered migrations of the stored message shape (canonical-message-format §10).

A migration takes the JSON dict of a message at version N and returns it at N+1. Readers call
`migrate_message_dict` before validation, so a message written by any earlier metis loads as the
current shape. A message from a newer schema is read as-is: unknown fields are tolerated (§10.3).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from typing import Any

from metis_core.errors import SchemaMigrationError
from metis_core.messages.schema_version import SCHEMA_VERSION as SCHEMA_VERSION  # the version these migrations reach

log = logging.getLogger("metis_core.messages")

MessageDict = dict[str, Any]
Migration = Callable[[MessageDict], MessageDict]



def v1_to_v2_drop_phantom_tool_calls(data: MessageDict) -> MessageDict:
    """v2 added hosted-tool blocks. v1 streams turned a hosted tool's input into a client
    `tool_use` with an empty name (nothing could run it and providers refuse it as history):
    such blocks are removed and counted in metadata.provider_raw["migrated_v2_dropped_tool_uses"].
    A result that answered one becomes an orphan, which history repair drops before each request.
    """
    content = data.get("content")
    if data.get("role") != "assistant" or not isinstance(content, list):
        return data
    kept = [
        block
        for block in content
        if not (isinstance(block, dict) and block.get("type") == "tool_use" and not block.get("name"))
    ]
    dropped = len(content) - len(kept)
    if dropped:
        if not kept:
            kept = [{"type": "text", "text": ""}]
        data["content"] = kept
        metadata = data.setdefault("metadata", {})
        raw = metadata.get("provider_raw") or {}
        metadata["provider_raw"] = {**raw, "migrated_v2_dropped_tool_uses": dropped}
    return data


# version N -> function bringing a dict from N to N+1.
MESSAGE_MIGRATIONS: dict[int, Migration] = {1: v1_to_v2_drop_phantom_tool_calls}


def migrate_message_dict(
    data: MessageDict,
    *,
    target: int | None = None,
    migrations: dict[int, Migration] | None = None,
) -> MessageDict:
    """Apply every migration from the dict's `schema_version` up to `target` (default: current)."""
    chain = MESSAGE_MIGRATIONS if migrations is None else migrations
    goal = SCHEMA_VERSION if target is None else target
    version = int(data.get("schema_version", 1))
    if version > goal:
        log.warning(
            "message %s has schema_version %d, newer than %d; reading best-effort", data.get("id"), version, goal
        )
        return data
    while version < goal:
        step = chain.get(version)
        if step is None:
            raise SchemaMigrationError(
                f"no migration from message schema v{version} to v{version + 1}; "
                "upgrade metis-core or restore from a backup of the same version"
            )
        data = step(copy.deepcopy(data))  # a step may edit nested dicts; the caller's stay intact
        version += 1
        data["schema_version"] = version
    return data
