"""The stable system prefix of a session: memory, always-on skills and the skill index.

Built once when a session is created or resumed and held on the Session, not stored as a message:
it stays byte-identical for the whole session (provider prompt caches keep working), and memory
text never lands in the message store, so no export can carry it. Worker sessions get none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from metis_core.events.envelope import Event
from metis_core.messages import Message, Role, TextBlock

if TYPE_CHECKING:
    from metis_core.agent.session import Session


def build_system_prefix(rt: Any, session: Session, cause: Event | None) -> Message | None:
    """The prefix message for `session`, or None when there is nothing to say.

    `cause` (session.created or session.resumed) parents the skill.loaded events of always-on skills.
    """
    from metis_core.agent.memory.files import MemoryFiles  # on first session, not on import
    from metis_core.agent.skills.session_skills import attach_skills

    sections: list[str] = []
    if rt.config.memory.enabled:
        memory = MemoryFiles(session.workspace, rt.home, rt.config.memory.max_bytes).prefix_text()
        if memory:
            sections.append(memory)
    skills = attach_skills(rt, session, cause)
    if skills:
        sections.append(skills)
    if not sections:
        return None
    return Message(role=Role.SYSTEM, session_id=session.id, content=[TextBlock(text="\n\n".join(sections))])
