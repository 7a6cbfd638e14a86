"""Asking the user about a pattern recommendation that a routing rule outranked.

When `route.decided` records the pattern slot as `deferred`, the turn can ask a `RouteAdviceAsker`
(the chat prompts; library callers pass their own) before the first model call: "override" sends
the turn to the suggested model (route.overridden), "ignore" dismisses the suggestion
(pattern.override_dismissed), None keeps the rule's model without an event.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

RouteAnswer = Literal["override", "ignore"]


@dataclass(frozen=True, slots=True)
class RouteSuggestion:
    turn_id: str
    chosen_model: str
    """What the rule chose (and the turn uses unless overridden)."""
    suggested_model: str
    rule_name: str | None
    confidence: float
    sample_size: int


RouteAdviceAsker = Callable[[RouteSuggestion], Awaitable[RouteAnswer | None]]
