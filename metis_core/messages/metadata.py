"""Message metadata: provenance, routing summary, usage and cost, status.

`Usage.cost_usd` is a `Decimal` computed locally from the price table and serialized as a string.
It is `None` (never a silent zero) when the model has no price; `pricing_version` says which
table priced it. Unknown metadata fields from newer writers are kept, not dropped (§10.3).
"""

from decimal import Decimal
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_serializer

from metis_core.field_defaults import empty_list

MAX_TOKEN_COUNT = 2**53 - 1
"""The largest token count a Usage holds: exact in JSON and a double, far past any real call.
A provider reporting more (2^64 ...) has sent a malformed answer, and the adapter says so."""

TokenCount = Annotated[int, Field(ge=0, le=MAX_TOKEN_COUNT)]
"""A count of tokens or requests. One shared constraint: a `Field(ge=..., le=...)` per field makes
pydantic build its constraint objects again for each of them when the class is created."""
UsageTotal = Annotated[int, Field(le=MAX_TOKEN_COUNT)]
"""A `Usage` total: bounded above only."""


class MessageStatus(StrEnum):
    COMPLETE = "complete"
    PARTIAL = "partial"
    CANCELLED = "cancelled"
    ERROR = "error"


class RoutingMode(StrEnum):
    """Coarse summary of why a turn used its model; the full chain lives in `route.decided`."""

    OVERRIDE = "override"
    MANUAL = "manual"
    RULE = "rule"
    PATTERN = "pattern"
    DELEGATE = "delegate"
    DEFAULT = "default"


class RoutingDecisionRecord(BaseModel):
    model_config = ConfigDict(defer_build=True)

    mode: RoutingMode
    chosen_model: str
    reason: str
    rule_name: str | None = None
    confidence: float | None = None
    alternatives_considered: list[str] = Field(default_factory=empty_list)


class ExtraCallUsage(BaseModel):
    """A call the provider made inside one request and billed beside its totals, not inside them
    (Anthropic's `usage.iterations` of type `compaction` or `advisor_message`); `model` is set when
    another model answered it (the advisor), else the request's model did."""

    model_config = ConfigDict(defer_build=True)

    kind: str
    model: str | None = None
    input_tokens: TokenCount = 0
    output_tokens: TokenCount = 0
    cached_input_tokens: TokenCount = 0
    cache_creation_input_tokens: TokenCount = 0
    cache_write_1h_tokens: TokenCount = 0


class UsageDetails(BaseModel):
    """Finer counts a provider reports beside the totals; each is already inside a `Usage` total
    except `extra_calls`, which the price table adds to the request's cost where it knows their price.

    `cache_write_1h_tokens` is the part of `cache_creation_input_tokens` written with a one-hour TTL
    (priced at its own rate); the request counts are hosted tool calls, recorded and not priced.
    `modalities` maps a Gemini count's name (prompt, candidates, cache, tool_use_prompt) to tokens per
    modality (TEXT, IMAGE, AUDIO, VIDEO, DOCUMENT).
    """

    model_config = ConfigDict(defer_build=True)

    cache_write_1h_tokens: TokenCount = 0
    web_search_requests: TokenCount = 0
    web_fetch_requests: TokenCount = 0
    audio_input_tokens: TokenCount = 0
    audio_output_tokens: TokenCount = 0
    accepted_prediction_tokens: TokenCount = 0
    rejected_prediction_tokens: TokenCount = 0
    tool_use_prompt_tokens: TokenCount = 0
    """Gemini's built-in tool prompt tokens, already counted in `input_tokens`."""
    modalities: dict[str, dict[str, int]] | None = None
    extra_calls: list[ExtraCallUsage] | None = None

    def any_reported(self) -> bool:
        return any(value for value in self.__dict__.values())


class Usage(BaseModel):
    """Normalized token counts: `input_tokens` never includes cached or cache-write tokens.

    Providers differ (OpenAI and Gemini count cached tokens inside prompt tokens, Anthropic
    does not); adapters normalize exactly once so that pricing can add the parts up.
    """

    model_config = ConfigDict(defer_build=True)

    input_tokens: UsageTotal = 0
    output_tokens: UsageTotal = 0
    cached_input_tokens: UsageTotal = 0
    cache_creation_input_tokens: UsageTotal = 0
    reasoning_tokens: UsageTotal = 0
    """Already included in `output_tokens`; reported separately for analysis."""
    cost_usd: Decimal | None = None
    pricing_version: str | None = None
    latency_ms: int = 0
    details: UsageDetails | None = Field(default=None, exclude_if=lambda value: value is None)
    """Per-API detail counts (cache TTLs, hosted tool requests, audio, predictions, modalities);
    None when the provider reported none, and then left out of dumps: records written before it
    existed load unchanged, and ones without details are written as they were."""

    @field_serializer("cost_usd", when_used="json")
    def _decimal_as_string(self, value: Decimal | None) -> str | None:
        return None if value is None else format(value, "f")

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + self.cached_input_tokens + self.cache_creation_input_tokens


class MessageMetadata(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="allow")

    model: str | None = None
    provider: str | None = None
    routing: RoutingDecisionRecord | None = None
    usage: Usage | None = None
    parent_tool_use_id: str | None = None
    status: MessageStatus = MessageStatus.COMPLETE
    stop_reason: str | None = None
    """Canonical stop reason, a StopReason value (end_turn, max_tokens, stop_sequence, tool_use,
    refusal, error, cancelled)."""
    provider_raw: dict[str, Any] | None = None
    """Opaque round-trip aid; only the adapter that wrote it reads it (§6.5)."""
    user_id: str | None = None
    team_id: str | None = None
    tool_input_violations: dict[str, list[str]] | None = None
    """tool_use id -> why its input fails the offered tool's schema, found when the answer was parsed."""
    critical_blocks: list[int] | None = None
    """Indices of content blocks that must reach the model (§4.2.2): an adapter that cannot carry
    one fails the request (CriticalBlockDropError) instead of dropping it."""
