"""The skill tools: `skill_load(name)` brings a skill's instructions into the conversation,
`skill_search(query)` finds skills by text. Both record what they did (skill.loaded on_demand with
the tool-use id; skill.search), parented to the llm.call_completed that asked.

A load over the session's skill budget (`skills.session_budget_tokens`) fails as a tool error;
a blocked skill never loads; a skill already in context is not loaded twice.
"""

from __future__ import annotations

from typing import Any

from metis_core.agent.skills.catalog import SKILL_FILE
from metis_core.agent.skills.session_skills import SkillState, skill_block
from metis_core.agent.tools.base import ToolContext, ToolOutcome
from metis_core.events.envelope import Actor
from metis_core.messages import SideEffects, ToolDefinition

MAX_LISTED_FILES = 30


def _state(context: ToolContext) -> SkillState | None:
    return context.session.skills if context.session is not None else None


class SkillLoadTool:
    definition = ToolDefinition(
        name="skill_load",
        description="Load a skill's instructions (by name, from the skill list in the system prompt) before "
                    "doing a task it covers.",
        input_schema={"type": "object", "properties": {"name": {"type": "string", "minLength": 1}},
                      "required": ["name"], "additionalProperties": False},
        side_effects=SideEffects.NONE,
        requires_workspace=False,
    )

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        state = _state(context)
        name = tool_input["name"]
        if state is None:
            return ToolOutcome.failure("not_found", "this session has no skills")
        skill = state.catalog.skills.get(name)
        if skill is None:
            known = ", ".join(s.name for s in state.catalog.loadable()) or "none"
            return ToolOutcome.failure("not_found", f"no skill named {name!r}; available: {known}")
        if skill.blocked:
            return ToolOutcome.failure("permission_denied", f"skill {name!r} is blocked by the security scan "
                                                            f"({'; '.join(skill.scan.findings)}) and never loads")
        if name in state.loaded:
            return ToolOutcome(f"skill {name!r} is already loaded in this session; follow its instructions above")
        if state.used_tokens + skill.tokens > state.session_budget_tokens:
            return ToolOutcome.failure("validation_error", (
                f"loading {name!r} (~{skill.tokens} tokens) would exceed this session's skill budget "
                f"({state.used_tokens} of {state.session_budget_tokens} tokens used); do without it"))
        state.loaded[name] = skill.tokens
        if context.call is not None:
            context.call.recorder.emit("skill.loaded", {
                "skill_id": skill.name, "skill_version": skill.version, "load_reason": "on_demand",
                "load_size_tokens": skill.tokens, "source": skill.source,
                "triggered_by_tool_use_id": context.call.tool_use_id,
            }, context.call.caused_by, actor=Actor.SYSTEM)
        folder = skill.path.parent
        files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.name != SKILL_FILE)
        extra = ""
        if files:
            shown = files[:MAX_LISTED_FILES]
            extra = f"\n\nFiles beside this skill (in {folder}): " + ", ".join(shown) + \
                (f" and {len(files) - len(shown)} more" if len(files) > len(shown) else "")
        return ToolOutcome(skill_block(skill) + extra)


class SkillSearchTool:
    definition = ToolDefinition(
        name="skill_search",
        description="Find skills by text (name, description, instructions); returns names and descriptions.",
        input_schema={"type": "object", "properties": {"query": {"type": "string", "minLength": 1}},
                      "required": ["query"], "additionalProperties": False},
        side_effects=SideEffects.NONE,
        requires_workspace=False,
    )

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        state = _state(context)
        found = state.catalog.search(tool_input["query"]) if state is not None else []
        if context.call is not None:
            context.call.recorder.emit("skill.search", {
                "query": tool_input["query"], "results_count": len(found),
                "result_skill_ids": [s.name for s in found],
            }, context.call.caused_by, actor=Actor.AGENT)
        if not found:
            return ToolOutcome("no skill matches")
        return ToolOutcome("\n".join(f"- {s.name} (v{s.version}): {s.description}" for s in found))
