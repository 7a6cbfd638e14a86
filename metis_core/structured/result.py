"""The outcome of a structured call: the validated value plus the record of every attempt.

`StructuredResult.value` is the pydantic instance (model specs) or the validated JSON value (dict
schemas); `attempts` says what each attempt ended with, so a caller can show or store how hard it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from metis_core.messages import Message
from metis_core.structured.recovery import Recovery

T = TypeVar("T")

AttemptOutcome = Literal["ok", "schema-violation", "parse-error", "truncation", "refusal"]
AttemptKind = Literal["constrained", "free-form", "reformat"]


@dataclass(frozen=True, slots=True)
class OutputAttempt:
    """One model call made for the answer: its outcome and why (validator errors, never output text)."""

    number: int
    outcome: AttemptOutcome
    errors: tuple[str, ...] = ()
    recovery: Recovery | None = None
    max_tokens: int | None = None
    stop_reason: str | None = None
    output_tokens: int | None = None
    kind: AttemptKind = "constrained"

    def __str__(self) -> str:
        said = f": {'; '.join(self.errors)}" if self.errors else ""
        return f"{self.outcome}{said}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"attempt": self.number, "kind": self.kind, "outcome": self.outcome,
                               "errors": list(self.errors), "stop_reason": self.stop_reason,
                               "max_tokens": self.max_tokens, "output_tokens": self.output_tokens}
        if self.recovery is not None:
            out["recovery"] = {"path": self.recovery.path, "byte_offset": self.recovery.byte_offset}
        return out


@dataclass(slots=True)
class StructuredResult(Generic[T]):
    """A validated answer. `message` is the assistant message it came from (the last call's)."""

    value: T
    model: str
    mode: str
    """How the schema travelled: json_schema, tool or instructions (docs/structured-output.md)."""
    message: Message
    attempts: list[OutputAttempt] = field(default_factory=list)
    nl_to_format: bool = False

    @property
    def retries(self) -> int:
        return sum(1 for a in self.attempts if a.kind == "constrained") - 1

    def value_json(self) -> Any:
        from pydantic import BaseModel

        return self.value.model_dump(mode="json") if isinstance(self.value, BaseModel) else self.value

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value_json(), "model": self.model, "mode": self.mode,
                "nl_to_format": self.nl_to_format, "attempts": [a.to_json() for a in self.attempts]}
