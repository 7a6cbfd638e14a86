"""Payloads of the skill domain (spec §6.6): a skill loaded into context, created, modified, or
searched for by the agent.

skill.created / skill.modified are user_controlled (the user chose to keep or share the skill);
skill.search is private because it carries the agent's query text.
"""

from __future__ import annotations

from typing import Literal

from metis_core.events.envelope import Actor, Sensitivity
from metis_core.events.event_spec import EventSpec
from metis_core.events.payloads.fields import NonNegativeInt, PayloadModel


class SkillLoadedPayload(PayloadModel):
    """A skill body entered the context (pre-activated or on demand)."""

    skill_id: str
    skill_version: str
    load_reason: Literal["always", "on_demand", "auto_suggested"]
    load_size_tokens: NonNegativeInt
    source: Literal["global", "workspace"]
    triggered_by_tool_use_id: str | None = None


class SkillCreatedPayload(PayloadModel):
    """A skill was written by hand, generated from a session, or imported."""

    skill_id: str
    source: Literal["manual", "auto_generated", "imported"]
    source_session_id: str | None = None
    size_tokens: NonNegativeInt
    security_scan_result: Literal["clean", "warning", "blocked"] | None = None
    security_scan_findings: list[str]


class SkillModifiedPayload(PayloadModel):
    """An existing skill changed."""

    skill_id: str
    modification_type: Literal["edit", "version_bump", "rename"]
    before_hash: str
    after_hash: str
    diff_size_bytes: NonNegativeInt
    reason: str


class SkillSearchPayload(PayloadModel):
    """The agent searched the skill index."""

    query: str
    results_count: NonNegativeInt
    result_skill_ids: list[str]


_SYSTEM_OR_USER = (Actor.SYSTEM, Actor.USER)
SPECS = (
    # The spec names "session.started" as a parent; no such type exists, session.created is meant.
    EventSpec(
        "skill.loaded",
        SkillLoadedPayload,
        Sensitivity.PSEUDONYMOUS,
        (Actor.SYSTEM,),
        ("session.created", "llm.call_completed"),
        phase="2",
    ),
    EventSpec(
        "skill.created",
        SkillCreatedPayload,
        Sensitivity.USER_CONTROLLED,
        _SYSTEM_OR_USER,
        ("session.ended",),
        phase="2.5",
    ),
    EventSpec("skill.modified", SkillModifiedPayload, Sensitivity.USER_CONTROLLED, _SYSTEM_OR_USER, phase="2"),
    EventSpec(
        "skill.search", SkillSearchPayload, Sensitivity.PRIVATE, (Actor.AGENT,), ("llm.call_completed",), phase="2"
    ),
)
