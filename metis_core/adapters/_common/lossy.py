"""Lossy projections (§7.3): content a target cannot represent is dropped and logged, never corrupted.

One structured WARN line per dropped block with session_id, message_id, block type, adapter and
reason — a log line, not a bus event (bus diagnostics are log-only). A history replayed on every
turn would repeat the same drops, so each (session, message, block, adapter, reason) is logged once
per process; the drop itself happens on every request. A block its message marks critical
(`metadata.critical_blocks`, §4.2.2) is never dropped: the request fails (CriticalBlockDropError).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from threading import Lock
from typing import TYPE_CHECKING

from metis_core.errors import CriticalBlockDropError
from metis_core.plain_values import PlainValue

if TYPE_CHECKING:
    from metis_core.messages import Message

log = logging.getLogger("metis_core.adapters.lossy")

_SEEN_LIMIT = 50_000
_seen: OrderedDict[tuple[str, str, int, str, str], None] = OrderedDict()
_seen_lock = Lock()


class DroppedBlock(PlainValue):
    """One block a target could not carry, left out of the request (§7.3)."""

    __slots__ = ("adapter", "block_index", "block_type", "message_id", "reason", "session_id")
    session_id: str
    message_id: str
    block_index: int
    block_type: str
    adapter: str
    reason: str

    def __init__(self, session_id: str, message_id: str, block_index: int, block_type: str, adapter: str,
                 reason: str) -> None:
        self._assign(session_id=session_id, message_id=message_id, block_index=block_index, block_type=block_type,
                     adapter=adapter, reason=reason)


def record_drop(
    dropped: list[DroppedBlock],
    *,
    session_id: str,
    message_id: str,
    block_index: int,
    block_type: str,
    adapter: str,
    reason: str,
) -> None:
    """Append the drop to `dropped` and write the WARN line the first time it is seen."""
    item = DroppedBlock(session_id, message_id, block_index, block_type, adapter, reason)
    dropped.append(item)
    key = (session_id, message_id, block_index, adapter, reason)
    with _seen_lock:
        if key in _seen:
            return
        _seen[key] = None
        if len(_seen) > _SEEN_LIMIT:
            _seen.popitem(last=False)
    log.warning(
        "dropped %s block from message %s for %s: %s",
        block_type,
        message_id,
        adapter,
        reason,
        extra={
            "session_id": session_id,
            "message_id": message_id,
            "block_type": block_type,
            "adapter": adapter,
            "reason": reason,
        },
    )


def record_block_drop(
    dropped: list[DroppedBlock],
    adapter: str,
    session_id: str,
    message: Message,
    index: int,
    block_type: str,
    reason: str,
) -> None:
    """`record_drop` for block `index` of `message`: the request's session id, else the message's.

    Raises CriticalBlockDropError (after its WARN line) when the message marks the block critical.
    """
    critical = message.metadata.critical_blocks
    if critical and index in critical:
        log.warning(
            "refusing to drop critical %s block %d of message %s for %s: %s", block_type, index, message.id, adapter,
            reason, extra={"session_id": session_id or message.session_id, "message_id": message.id,
                           "block_type": block_type, "adapter": adapter, "reason": reason, "critical": True},
        )
        raise CriticalBlockDropError(adapter, message.id, index, block_type, reason)
    record_drop(dropped, session_id=session_id or message.session_id, message_id=message.id, block_index=index,
                block_type=block_type, adapter=adapter, reason=reason)


def record_drops_again(dropped: list[DroppedBlock], drops: tuple[DroppedBlock, ...]) -> None:
    """The drops a memoized mapping of a message made, made again for this request (logged once, as always)."""
    for item in drops:
        record_drop(dropped, session_id=item.session_id, message_id=item.message_id, block_index=item.block_index,
                    block_type=item.block_type, adapter=item.adapter, reason=item.reason)


def forget_logged_drops() -> None:
    """Clear the once-per-process memory (tests use this to observe logging again)."""
    with _seen_lock:
        _seen.clear()
