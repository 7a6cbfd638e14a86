"""Confirmation for tools with write, execute or network side effects.

A session keeps the tools the user allowed "for the session"; tools pre-approved in config or by
`--yes` never ask. Everything else asks the `Confirmer` (the CLI prompts; tests script it), which
must answer within the timeout or the call is refused as `confirmation_timeout`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

Decision = Literal["allow", "deny", "timeout"]
Scope = Literal["once", "session"]
Answerer = Literal["user", "policy"]


@dataclass(frozen=True, slots=True)
class ConfirmationRequest:
    request_id: str
    tool_use_id: str
    tool_name: str
    side_effects: str
    input_summary: str
    projected_modifications: list[str] | None
    command_summary: str | None
    expires_at: datetime
    note: str | None = None
    """Shown with the question: why a tool asks (one that declares no side effects) and what to do."""


@dataclass(frozen=True, slots=True)
class ConfirmationAnswer:
    decision: Decision
    scope: Scope | None = None
    by: Answerer = "user"
    """"policy" when no person answered (no terminal to ask): recorded with the system actor."""
    reason: str | None = None
    """Why a policy decided, for the tool result the model reads (e.g. "no terminal to ask")."""


Confirmer = Callable[[ConfirmationRequest], Awaitable[ConfirmationAnswer]]


NO_ONE_TO_ASK = "no terminal to ask for confirmation (pass --yes to allow tools)"


async def deny_all(request: ConfirmationRequest) -> ConfirmationAnswer:
    """The default when nobody can be asked (scripts without --yes): a policy denial, not a user's."""
    return ConfirmationAnswer("deny", by="policy", reason=NO_ONE_TO_ASK)


async def allow_all(request: ConfirmationRequest) -> ConfirmationAnswer:
    return ConfirmationAnswer("allow", "once")


@dataclass
class ConfirmationPolicy:
    confirmer: Confirmer = deny_all
    timeout_seconds: float = 300.0
    pre_approved: set[str] = field(default_factory=set)
    """Tool names that never ask (config `tools.pre_approved`, or every tool with --yes)."""
    approve_everything: bool = False
    session_allowed: set[str] = field(default_factory=set)

    def needs_asking(self, tool_name: str) -> bool:
        return not (self.approve_everything or tool_name in self.pre_approved or tool_name in self.session_allowed)

    async def ask(self, request: ConfirmationRequest) -> ConfirmationAnswer:
        try:
            answer = await asyncio.wait_for(self.confirmer(request), self.timeout_seconds)
        except TimeoutError:  # no one answered in time: the clock decided (the system actor)
            return ConfirmationAnswer("timeout", by="policy", reason="no answer in time")
        if answer.decision == "allow" and answer.scope == "session":
            self.session_allowed.add(request.tool_name)
        return answer
