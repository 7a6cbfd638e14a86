"""The stable part of a session's system prompt: memory, always-on skills and the skill index.

Built once when a session is created or resumed, as PromptParts (kinds memory, skill, system)
that the runtime's PromptComposer adds to every turn of that session (`session_prefix_source`),
so they reach the request as the composed system message, are recorded by llm.prompt_composed
(hashes only) and are never stored as a message: no export can carry memory text. They stay
byte-identical for the whole session (provider prompt caches keep working). Workers get none.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from metis_core.events.envelope import Event
from metis_core.prompts import CompositionContext, PromptPart

if TYPE_CHECKING:
    from metis_core.agent.session import Session


def build_prefix_parts(rt: Any, session: Session, cause: Event | None) -> tuple[PromptPart, ...]:
    """The parts for `session`; `cause` (session.created / session.resumed) parents skill.loaded."""
    from metis_core.agent.memory.files import MemoryFiles  # on first session, not on import
    from metis_core.agent.skills.session_skills import attach_skills

    parts: list[PromptPart] = []
    if rt.config.memory.enabled:
        memory = MemoryFiles(session.workspace, rt.home, rt.config.memory.max_bytes).prefix_text()
        if memory:
            parts.append(PromptPart(kind="memory", text=memory))
    parts.extend(attach_skills(rt, session, cause))
    return tuple(parts)


def session_prefix_source(prefixes: dict[str, tuple[PromptPart, ...]]) -> Any:
    """A PromptComposer source serving each session's stable parts."""

    def source(context: CompositionContext) -> Iterable[PromptPart]:
        return prefixes.get(context.session_id, ())

    return source
