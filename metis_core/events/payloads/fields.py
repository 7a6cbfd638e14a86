"""Field types shared by the catalog payload models: the strict base model, UTC datetimes,
Decimal-as-string amounts and the enums several domains repeat.

Payload models forbid unknown fields so strict mode catches typos; nullable additive fields
default to None. Nothing here knows which event uses which field.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, PlainSerializer


class PayloadModel(BaseModel):
    """Base of every catalog payload: frozen, unknown fields rejected, no `model_` name guard."""

    model_config = ConfigDict(extra="forbid", frozen=True, protected_namespaces=())


def _to_utc(value: datetime) -> datetime:
    return value.astimezone(UTC)


def _utc_text(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


UtcDatetime = Annotated[
    AwareDatetime,
    AfterValidator(_to_utc),
    PlainSerializer(_utc_text, return_type=str, when_used="json"),
]
"""Timezone-aware datetime, normalised to UTC, serialised with microseconds and a `Z`."""

DecimalString = Annotated[
    str,
    Field(pattern=r"^\d+(\.\d+)?$", json_schema_extra={"x-decimal": True}),
]
"""A non-negative Decimal amount in USD carried as a plain string ("0.0123"), never a float."""

NonNegativeInt = Annotated[int, Field(ge=0)]
NonNegativeFloat = Annotated[float, Field(ge=0)]
UnitInterval = Annotated[float, Field(ge=0.0, le=1.0)]

StopReason = Literal["end_turn", "max_tokens", "stop_sequence", "tool_use", "refusal"]
"""The spec's four, plus `refusal` (docs/event-bus.md "Extended enums"): a provider's refusal is on
the record as itself, not as end_turn. `error` and `cancelled` never reach these payloads."""
TurnStopReason = Literal["end_turn", "max_tokens", "stop_sequence", "tool_use", "refusal", "error"]
"""A turn's own end: a model call's reasons, or "error" when the turn failed (provider, limit)."""
InboundShape = Literal["openai", "anthropic"]
MemoryFile = Literal["MEMORY.md", "USER.md"]
ProviderScope = Literal["model_specific", "provider_wide"]
FingerprintKind = Literal["structural", "hybrid"]
EvalSubjectKind = Literal["turn", "tool_cycle", "session", "workload"]
JudgeKind = Literal["heuristic", "llm", "hybrid"]
QuotaCapType = Literal["daily", "monthly", "total"]
QuotaLimitType = Literal["daily", "monthly", "total", "rpm", "tpm"]
QuotaScope = Literal["gateway_key", "user", "team"]
