"""The pydantic schema of prices.yaml entries: what parse_price_data and `prices:` overrides validate.

Loaded only when price data is validated (a user's `prices:`, another file, the first read of the
bundled table); each validated model is turned into price_file's plain runtime classes, so pricing
a call never builds these schemas. Error messages name the field and say what to write instead.
"""

from datetime import date
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from metis_core.field_defaults import empty_dict
from metis_core.models.price_file import (
    CACHE_WRITE_1H,
    RATE_KINDS,
    LongContextPrice,
    PriceEntry,
    PriceVersion,
    exact_price,
)

Price = Annotated[Any, BeforeValidator(exact_price)]


class RatesSchema(BaseModel):
    """Per-million-token USD prices; omitted ones take their documented default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: Price
    output: Price
    cache_read: Price | None = None
    cache_write: Price | None = None
    reasoning: Price | None = None
    cache_write_1h: Price | None = None

    def rates(self) -> dict[str, Any]:
        return {kind: getattr(self, kind) for kind in (*RATE_KINDS, CACHE_WRITE_1H)}


class LongContextSchema(RatesSchema):
    threshold_tokens: int = Field(gt=0)


class PriceEntrySchema(RatesSchema):
    long_context: LongContextSchema | None = None

    def runtime(self) -> PriceEntry:
        long = self.long_context
        return PriceEntry(**self.rates(), long_context=None if long is None else LongContextPrice(
            **long.rates(), threshold_tokens=long.threshold_tokens))


class PriceVersionSchema(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    pricing_version: str = Field(min_length=1)
    effective_from: date
    note: str | None = None
    models: dict[str, PriceEntrySchema | None] = Field(default_factory=empty_dict)
    """A null entry removes a model priced by an earlier version."""

    @field_validator("models")
    @classmethod
    def _model_keys(cls, value: dict[str, PriceEntrySchema | None]) -> dict[str, PriceEntrySchema | None]:
        for key in value:
            provider, sep, name = key.partition(":")
            if not sep or not provider or not name:
                raise ValueError(f"{key!r} is not a model id or pattern (<provider>:<model>)")
        return value

    def runtime(self) -> PriceVersion:
        return PriceVersion(self.pricing_version, self.effective_from, self.note,
                            {key: None if entry is None else entry.runtime() for key, entry in self.models.items()})


def first_problem(exc: ValidationError) -> str:
    error = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message
