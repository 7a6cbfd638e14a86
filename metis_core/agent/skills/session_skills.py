"""A session's skills: discovered at create/resume, `always` ones inlined, the rest indexed.

`attach_skills` returns the skills' parts of the stable system prefix (agent/system_prefix.py):
one `skill` part per `always` skill within `skills.always_budget_tokens` (each with skill.loaded,
load_reason always, parent session.created or session.resumed, outside any turn), then a part
listing every other loadable skill for the model to choose from. When there is anything to load, the
session gets the skill_load and skill_search tools. Blocked skills are neither inlined nor listed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from metis_core.agent.skills.catalog import Skill, SkillCatalog
from metis_core.events.envelope import Actor, Event
from metis_core.prompts import PromptPart

if TYPE_CHECKING:
    from metis_core.agent.session import Session


log = logging.getLogger("metis_core.agent.skills")


@dataclass
class SkillState:
    catalog: SkillCatalog
    session_budget_tokens: int
    loaded: dict[str, int] = field(default_factory=dict)
    """Skill name -> tokens of its body in this session's context."""

    @property
    def used_tokens(self) -> int:
        return sum(self.loaded.values())


def skill_block(skill: Skill) -> str:
    return f'<skill name="{skill.name}" version="{skill.version}">\n{skill.body}\n</skill>'


def attach_skills(rt: Any, session: Session, cause: Event | None) -> list[PromptPart]:
    settings = rt.config.skills
    if not settings.enabled:
        return []
    catalog = SkillCatalog.discover(rt.home, session.workspace)
    for problem in catalog.problems:
        log.warning("skill not loaded: %s", problem)
    for skill in catalog.skills.values():
        if skill.blocked:
            log.warning("skill %r is blocked by the security scan (%s) and never loads", skill.name,
                        "; ".join(skill.scan.findings))
    state = SkillState(catalog, settings.session_budget_tokens)
    session.skills = state
    parts: list[PromptPart] = []
    always_used = 0
    for skill in catalog.loadable():
        if not skill.always:
            continue
        if always_used + skill.tokens > settings.always_budget_tokens:
            log.warning("always skill %r (~%d tokens) does not fit skills.always_budget_tokens (%d); listed instead",
                        skill.name, skill.tokens, settings.always_budget_tokens)
            continue
        always_used += skill.tokens
        state.loaded[skill.name] = skill.tokens
        parts.append(PromptPart(kind="skill", text=skill_block(skill), template_id=skill.name,
                                version=skill.semantic_version))
        rt.bus.emit_new("skill.loaded", {
            "skill_id": skill.name, "skill_version": skill.version, "load_reason": "always",
            "load_size_tokens": skill.tokens, "source": skill.source, "triggered_by_tool_use_id": None,
        }, session_id=session.id, parent=cause, actor=Actor.SYSTEM)
    listed = [s for s in catalog.loadable() if s.name not in state.loaded]
    if listed:
        lines = "\n".join(f"- {s.name}: {s.description}" for s in listed)
        parts.append(PromptPart(kind="system", text=f"Skills you can load with skill_load(name) when a task "
                                                     f"matches one (skill_search finds more by text):\n{lines}"))
    if listed or state.loaded:
        from metis_core.agent.skills.tools import SkillLoadTool, SkillSearchTool

        session.tools = (session.tools or rt.tools).extended([SkillLoadTool(), SkillSearchTool()])
    return parts
