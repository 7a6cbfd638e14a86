"""Tool confirmations answered over HTTP: the runtime's `Confirmer` while `metis serve` runs.

A turn asking to run a side-effecting tool parks a future here under the request id it also put
on `tool.confirmation_requested`; `POST /api/chat/confirmations/{id}` resolves it with allow once,
allow for the session, or deny. The confirmation policy's own timeout still applies.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from metis_core.agent.confirmation import ConfirmationAnswer, ConfirmationRequest
from metis_core.errors import ServeError

ANSWERS: dict[str, ConfirmationAnswer] = {
    "allow_once": ConfirmationAnswer("allow", "once"),
    "allow_session": ConfirmationAnswer("allow", "session"),
    "deny": ConfirmationAnswer("deny"),
}


@dataclass
class _Pending:
    request: ConfirmationRequest
    answer: asyncio.Future[ConfirmationAnswer]


class PendingConfirmations:
    def __init__(self) -> None:
        self._pending: dict[str, _Pending] = {}

    async def __call__(self, request: ConfirmationRequest) -> ConfirmationAnswer:
        future: asyncio.Future[ConfirmationAnswer] = asyncio.get_running_loop().create_future()
        self._pending[request.request_id] = _Pending(request, future)
        try:
            return await future
        finally:
            self._pending.pop(request.request_id, None)

    def waiting(self) -> list[dict[str, Any]]:
        return [{"request_id": p.request.request_id, "tool_use_id": p.request.tool_use_id,
                 "tool_name": p.request.tool_name, "side_effects": p.request.side_effects,
                 "input_summary": p.request.input_summary, "note": p.request.note,
                 "expires_at": p.request.expires_at.isoformat()}
                for p in self._pending.values()]

    def answer(self, request_id: str, choice: str) -> None:
        """Resolve a waiting request with `allow_once`, `allow_session` or `deny`."""
        if choice not in ANSWERS:
            raise ServeError(f"answer {choice!r} is not one of {', '.join(ANSWERS)}")
        pending = self._pending.get(request_id)
        if pending is None or pending.answer.done():
            raise ServeError(f"no confirmation {request_id!r} is waiting; it was answered or timed out")
        pending.answer.set_result(ANSWERS[choice])
