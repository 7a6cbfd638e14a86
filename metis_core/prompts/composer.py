"""PromptComposer: the hook where templates, memory and skills contribute to a turn's system prompt.

Sources are callables registered once (`add_source`); each is asked, for every turn, which parts it
contributes given the turn's context, in registration order after any fixed parts (`add_part`).
The agent loop sends the composition as the request's system message (not stored in the session)
and records it as llm.prompt_composed. A source that raises fails the turn's composition loudly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from metis_core.messages import Message
from metis_core.prompts.composition import Composition, PromptPart, compose


@dataclass(frozen=True)
class CompositionContext:
    """What a source may look at when deciding its contribution."""

    session_id: str
    workspace: Path
    user_text: str
    history: tuple[Message, ...]


PromptSource = Callable[[CompositionContext], Iterable[PromptPart]]


class PromptComposer:
    def __init__(self) -> None:
        self._parts: list[PromptPart] = []
        self._sources: list[PromptSource] = []

    def add_part(self, part: PromptPart) -> None:
        """A part every turn gets (base instructions, a fixed template)."""
        self._parts.append(part)

    def add_source(self, source: PromptSource) -> None:
        """A contributor asked on every turn (a template resolver, memory, skills, fetched context)."""
        self._sources.append(source)

    @property
    def empty(self) -> bool:
        return not self._parts and not self._sources

    def compose(self, context: CompositionContext) -> Composition | None:
        parts = list(self._parts)
        for source in self._sources:
            parts.extend(source(context))
        return compose(parts)
