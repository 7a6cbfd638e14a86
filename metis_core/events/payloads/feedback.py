"""Payloads of the feedback domain (spec §6.9): explicit ratings and implicit signals.

feedback.explicit's floor is aggregatable as the spec says, even though its optional `comment`
is free text; that is a known spec gap (docs/event-bus.md), not something this module decides.
"""

from __future__ import annotations

from typing import Any, Literal

from metis_core.events.envelope import Actor, Sensitivity
from metis_core.events.event_spec import EventSpec
from metis_core.events.payloads.fields import PayloadModel, UnitInterval


class FeedbackExplicitPayload(PayloadModel):
    """The user rated a turn or a session."""

    scope: Literal["turn", "session"]
    rating: Literal["thumbs_up", "thumbs_down"]
    comment: str | None = None
    subject_turn_id: str | None = None
    subject_session_id: str | None = None


class FeedbackImplicitPayload(PayloadModel):
    """The system inferred satisfaction or dissatisfaction from behaviour."""

    type: Literal["retry", "manual_swap", "edit_followup", "abandon", "accept"]
    confidence: UnitInterval
    subject_turn_id: str | None = None
    context: dict[str, Any]


SPECS = (
    EventSpec(
        "feedback.explicit",
        FeedbackExplicitPayload,
        Sensitivity.AGGREGATABLE,
        (Actor.USER,),
        ("turn.completed", "session.ended"),
        phase="2",
    ),
    EventSpec("feedback.implicit", FeedbackImplicitPayload, Sensitivity.PSEUDONYMOUS, (Actor.SYSTEM,), phase="2"),
)
