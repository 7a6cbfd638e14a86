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

log = logging.getLogger("metis_core.messages")

MessageDict = dict[str, Any]
Migration = Callable[[MessageDict], MessageDict]

# version N -> function bringing a dict from N to N+1. Current schema is 1, so none yet; tests
# register a v1 -> v2 step in a scoped registry to prove the chain (§11.1 test 4).
MESSAGE_MIGRATIONS: dict[int, Migration] = {}


def migrate_message_dict(
    data: MessageDict,
    *,
    target: int | None = None,
    migrations: dict[int, Migration] | None = None,
) -> MessageDict:
    """Apply every migration from the dict's `schema_version` up to `target` (default: current)."""
    from metis_core.messages.message import SCHEMA_VERSION

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
