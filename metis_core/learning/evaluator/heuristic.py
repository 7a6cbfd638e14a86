"""The heuristic judge: a verdict from the record alone, at zero cost, always available.

Evidence: how the turn ended (error, cancellation), failed and invalid tool calls, refusals
(stop reason or a refusal-shaped answer), explicit feedback (which dominates) and implicit
feedback weighted by its confidence. A session is the mean of its turns (a turn's current
verdict, the LLM judge's part included, when it has one), unless the user rated the whole
session. The weights are in docs/learning.md; signals name each piece of evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from metis_core.events.envelope import Event

NEUTRAL_SUCCESS = 0.75
"""A turn that ended normally with no other evidence: probably fine, not certainly."""
IMPLICIT_WEIGHT = {"retry": -0.5, "edit_followup": -0.45, "manual_swap": -0.4, "abandon": -0.5, "accept": 0.15}
EXPLICIT_SCORE = {"thumbs_up": 0.95, "thumbs_down": 0.05}
SESSION_RATING_CONFIDENCE = 0.8
"""A rating of the whole session, applied to a turn not rated itself: strong, but less direct."""
REFUSAL = re.compile(r"^\s*(?:i'?m sorry,?\s+but\s+)?i\s+(?:can(?:'|no)t|cannot|won'?t|am unable to|'m unable to)"
                     r"\s+(?:help|assist|do|provide|comply)", re.IGNORECASE)


@dataclass
class HeuristicVerdict:
    score: float
    confidence: float
    signals: dict[str, Any] = field(default_factory=dict)


def _clamp(value: float) -> float:
    return round(min(1.0, max(0.0, value)), 4)


def is_refusal(answer: str) -> bool:
    return REFUSAL.match(answer) is not None


def judge_turn(events: list[Event], feedback: list[Event], answer: str | None = None) -> HeuristicVerdict:
    signals: dict[str, Any] = {}
    closer = next((e for e in events if e.type in ("turn.completed", "turn.cancelled")), None)
    failed_tools = sum(1 for e in events if e.type in ("tool.failed", "tool.input_invalid"))
    failed_calls = sum(1 for e in events if e.type == "llm.call_failed")
    if closer is None:
        score, confidence, signals["ended"] = 0.5, 0.2, "unfinished"
    elif closer.type == "turn.cancelled":
        score, confidence, signals["ended"] = 0.2, 0.5, "cancelled"
    elif (closer.payload.get("signals_extra") or {}).get("error"):
        score, confidence, signals["ended"] = 0.1, 0.7, "error"
    else:
        score, confidence, signals["ended"] = NEUTRAL_SUCCESS, 0.4, "completed"
    if failed_tools:
        signals["tool_failures"] = failed_tools
        score -= min(0.45, 0.15 * failed_tools)
    if answer is not None and is_refusal(answer):
        signals["refusal"] = True
        score -= 0.4
    if failed_calls:
        signals["llm_call_failures"] = failed_calls
        score -= min(0.1, 0.05 * failed_calls)
    for event in feedback:
        if event.type == "feedback.implicit":
            kind, weight = str(event.payload["type"]), float(event.payload["confidence"])
            signals.setdefault("implicit", []).append(kind)
            score += IMPLICIT_WEIGHT.get(kind, 0.0) * weight
            confidence = max(confidence, min(0.8, weight))
    explicit = [e for e in feedback if e.type == "feedback.explicit" and e.payload.get("scope") != "session"]
    whole = [e for e in feedback if e.type == "feedback.explicit" and e.payload.get("scope") == "session"]
    if explicit:
        rating = str(explicit[-1].payload["rating"])
        signals["explicit"] = rating
        score, confidence = EXPLICIT_SCORE[rating], 0.95
    elif whole:  # the user rated the whole session: it covers this turn unless the turn was rated itself
        rating = str(whole[-1].payload["rating"])
        signals["explicit_session"] = rating
        score, confidence = EXPLICIT_SCORE[rating], SESSION_RATING_CONFIDENCE
    return HeuristicVerdict(_clamp(score), _clamp(confidence), signals)


def judge_session(turns: dict[str, list[Event]], feedback: list[Event],
                  turn_verdicts: dict[str, tuple[float, float]] | None = None) -> HeuristicVerdict:
    """`turn_verdicts`: (score, confidence) of turns already judged (LLM judge included), used as is."""
    session_rated = [e for e in feedback if e.type == "feedback.explicit" and e.payload.get("scope") == "session"]
    judged = turn_verdicts or {}
    per_turn = [HeuristicVerdict(*judged[turn_id]) if turn_id in judged else
                judge_turn(events, [f for f in feedback if f.payload.get("subject_turn_id") == turn_id])
                for turn_id, events in turns.items()]
    if session_rated:
        rating = str(session_rated[-1].payload["rating"])
        return HeuristicVerdict(EXPLICIT_SCORE[rating], 0.95, {"explicit": rating, "turns": len(per_turn)})
    if not per_turn:
        return HeuristicVerdict(0.5, 0.1, {"turns": 0})
    score = sum(v.score for v in per_turn) / len(per_turn)
    confidence = sum(v.confidence for v in per_turn) / len(per_turn)
    abandoned = any(f.payload.get("type") == "abandon" for f in feedback if f.type == "feedback.implicit")
    signals: dict[str, Any] = {"turns": len(per_turn), "failed_turns": sum(1 for v in per_turn if v.score < 0.5)}
    if abandoned:
        signals["abandoned"] = True
        score -= 0.2
    return HeuristicVerdict(_clamp(score), _clamp(confidence), signals)


def judge_tool_cycle(events: list[Event]) -> HeuristicVerdict:
    outcome = next((e for e in events if e.type in ("tool.completed", "tool.failed")), None)
    if outcome is None:
        return HeuristicVerdict(0.5, 0.2, {"ended": "no_result"})
    if outcome.type == "tool.completed":
        return HeuristicVerdict(0.9, 0.8, {"ended": "completed"})
    return HeuristicVerdict(0.1, 0.8, {"ended": "failed", "error_class": outcome.payload.get("error_class")})
