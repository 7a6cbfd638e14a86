"""Why a turn was cancelled and who did it, read from the task's cancel message.

A running turn's task is cancelled with one of CANCEL_REASONS as the message (a bare cancel is the
user's own Ctrl-C); every path that records a cancel (a turn, a structured turn, a confirmation left
unanswered, a delegated worker) reads the reason and the actor here, so they cannot disagree.
"""

from __future__ import annotations

import asyncio

from metis_core.events.envelope import Actor

CANCEL_REASONS = ("user_cancel", "client_disconnect", "timeout")
"""turn.cancelled reasons. Cancel a running turn's task with one as the message, e.g.
`task.cancel("client_disconnect")`; `run(timeout_seconds=...)` cancels with "timeout" itself."""


def cancel_reason(cancel: asyncio.CancelledError) -> str:
    """The CANCEL_REASONS entry a task was cancelled with; a bare cancel (Ctrl-C) is the user's own."""
    return next((a for a in cancel.args if a in CANCEL_REASONS), "user_cancel")


def cancel_actor(reason: str) -> Actor:
    """Who ended a cancelled turn: the user for their own cancel, the system for a disconnect or timeout."""
    return Actor.USER if reason == "user_cancel" else Actor.SYSTEM
