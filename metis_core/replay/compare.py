"""Where a replayed turn differs from its original: tool calls step by step, errors, answer text, JSON.

Tool calls are compared per model call (names, then arguments); the first step that differs is
the tool-call divergence. Answers are compared by difflib's similarity ratio against a threshold,
and JSON answers by whether they still parse. Details name tools and argument keys, never values.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Literal

from metis_core.replay.source import ToolCall, TurnSide, parses_as_json

DivergenceKind = Literal["output", "missing", "extra", "type-mismatch"]
DivergencePoint = Literal["tool_call", "text", "structured_output", "error", "refusal"]
DEFAULT_TEXT_THRESHOLD = 0.8
SIMILARITY_CHARS = 20_000
"""Longer answers are compared on their first characters (difflib is quadratic)."""


@dataclass(frozen=True)
class Divergence:
    kind: DivergenceKind
    point: DivergencePoint
    step: int
    detail: str
    similarity: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "point": self.point, "step": self.step, "detail": self.detail,
                "text_similarity": self.similarity}


def text_similarity(a: str, b: str) -> float:
    """1.0 for equal texts, towards 0.0 as they share less (difflib ratio, on the first 20k chars)."""
    if a == b:
        return 1.0
    return round(difflib.SequenceMatcher(None, a[:SIMILARITY_CHARS], b[:SIMILARITY_CHARS], autojunk=False).ratio(), 4)


def _names(calls: list[ToolCall]) -> str:
    return ", ".join(c.name for c in calls) or "no tool"


def _argument_difference(a: ToolCall, b: ToolCall) -> str:
    keys = sorted(k for k in set(a.arguments) | set(b.arguments) if a.arguments.get(k) != b.arguments.get(k))
    return f"{a.name}: arguments differ in {', '.join(keys)}"


def tool_divergence(original: list[list[ToolCall]], replay: list[list[ToolCall]]) -> Divergence | None:
    """The first model call whose tool calls differ (missing, extra, other tools, other arguments)."""
    for step, (old, new) in enumerate(zip(original, replay, strict=False)):
        if old and not new:
            return Divergence("missing", "tool_call", step, f"the original called {_names(old)}; the replay answered")
        if new and not old:
            return Divergence("extra", "tool_call", step, f"the replay called {_names(new)}; the original answered")
        if [c.name for c in old] != [c.name for c in new]:
            return Divergence("output", "tool_call", step, f"the original called {_names(old)}; "
                                                           f"the replay called {_names(new)}")
        for a, b in zip(old, new, strict=True):
            if a.arguments != b.arguments:
                return Divergence("output", "tool_call", step, _argument_difference(a, b))
    return None


def compare_sides(original: TurnSide, replay: TurnSide, threshold: float = DEFAULT_TEXT_THRESHOLD) -> list[Divergence]:
    """Every divergence of a replayed turn, the first one first (at most one per point)."""
    found: list[Divergence] = []
    tools = tool_divergence(original.steps, replay.steps)
    if tools is not None:
        found.append(tools)
    last = max(len(replay.steps) - 1, 0)
    if replay.error and not original.error:
        found.append(Divergence("missing", "error", last, "the replay failed where the original answered"))
        return found
    if original.error and not replay.error:
        found.append(Divergence("output", "error", last, "the replay answered where the original failed"))
    if original.refused != replay.refused:  # a safety-policy shift: reported apart from other output
        found.append(Divergence("output", "refusal", last, "the original refused; the replay answered"
                                if original.refused else "the replay refused; the original answered"))
        return found
    similarity = text_similarity(original.answer, replay.answer)
    if similarity < threshold:
        found.append(Divergence("output", "text", last, f"answer text similarity {similarity:.2f} is below "
                                                        f"{threshold:.2f}", similarity))
    if original.structured_valid is not None and replay.structured_valid != original.structured_valid:
        found.append(Divergence("type-mismatch", "structured_output", last,
                                "the original answered in valid JSON; the replay did not"))
    return found


def mark_structured(original: TurnSide, replay: TurnSide) -> None:
    """Structured validity applies when the original answered in JSON: then the replay must too."""
    if parses_as_json(original.answer):
        original.structured_valid = True
        replay.structured_valid = parses_as_json(replay.answer)
