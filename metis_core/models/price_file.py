"""The shape of prices.yaml (and of `prices:` overrides in config.yaml), read into exact Decimals.

Prices must be written as strings or integers: a YAML float such as 0.1 is rejected, because
binary floats cannot hold most cent fractions exactly. Every problem names the file and entry.
The bundled prices.yaml is checked once and then built from its prepared form without validating
(checked_price_data); the models build their schemas only when something is validated. This
module only reads and checks; computing costs lives in pricing.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from metis_core.errors import PriceTableError
from metis_core.field_defaults import empty_dict
from metis_core.yaml_text import read_yaml_file

RATE_KINDS = ("input", "output", "cache_read", "cache_write", "reasoning")


def _exact_price(value: Any) -> Decimal:
    if isinstance(value, bool | float):
        raise ValueError(f'write the price {value!r} as a quoted string (e.g. "0.30"), not a float')
    if not isinstance(value, str | int):
        raise ValueError('a price must be a string such as "3.00"')
    try:
        price = Decimal(str(value).strip())
    except InvalidOperation:
        raise ValueError(f"{value!r} is not a number") from None
    if not price.is_finite() or price < 0:
        raise ValueError(f"{value!r} is not a non-negative price")
    return price


Price = Annotated[Decimal, BeforeValidator(_exact_price)]


class Rates(BaseModel):
    """Per-million-token USD prices; omitted ones take their documented default."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    input: Price
    output: Price
    cache_read: Price | None = None
    """Defaults to input."""
    cache_write: Price | None = None
    """Defaults to input."""
    reasoning: Price | None = None
    """Defaults to output."""

    def rate(self, kind: str) -> Decimal:
        value: Decimal | None = getattr(self, kind)
        if value is not None:
            return value
        return self.output if kind == "reasoning" else self.input

    def per_million(self) -> dict[str, Decimal]:
        return {kind: self.rate(kind) for kind in RATE_KINDS}


class LongContextPrice(Rates):
    """Rates for a whole call whose total input exceeds `threshold_tokens`."""

    threshold_tokens: int = Field(gt=0)


class PriceEntry(Rates):
    long_context: LongContextPrice | None = None

    @classmethod
    def from_raw(cls, raw: Any, where: str) -> PriceEntry:
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            raise PriceTableError(f"{where}: {_first_problem(exc)}") from None


class PriceVersion(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    pricing_version: str = Field(min_length=1)
    effective_from: date
    note: str | None = None
    models: dict[str, PriceEntry | None] = Field(default_factory=empty_dict)
    """A null entry removes a model priced by an earlier version."""

    @field_validator("models")
    @classmethod
    def _model_keys(cls, value: dict[str, PriceEntry | None]) -> dict[str, PriceEntry | None]:
        for key in value:
            provider, sep, name = key.partition(":")
            if not sep or not provider or not name:
                raise ValueError(f"{key!r} is not a model id or pattern (<provider>:<model>)")
        return value


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def parse_price_data(data: Any, source: str) -> list[PriceVersion]:
    if not isinstance(data, Mapping) or not isinstance(data.get("versions"), list):
        raise PriceTableError(f"{source}: expected a top-level `versions:` list")
    if set(data) - {"versions"}:
        raise PriceTableError(f"{source}: unknown top-level key(s) {sorted(set(data) - {'versions'})}")
    versions: list[PriceVersion] = []
    for index, raw in enumerate(data["versions"]):
        label = raw.get("pricing_version", f"#{index}") if isinstance(raw, Mapping) else f"#{index}"
        try:
            versions.append(PriceVersion.model_validate(raw))
        except ValidationError as exc:
            raise PriceTableError(f"{source}: version {label}: {_first_problem(exc)}") from None
    if not versions:
        raise PriceTableError(f"{source}: `versions:` is empty")
    for attribute in ("pricing_version", "effective_from"):
        seen = [getattr(v, attribute) for v in versions]
        duplicates = sorted({str(x) for x in seen if seen.count(x) > 1})
        if duplicates:
            raise PriceTableError(f"{source}: {attribute} repeated: {duplicates}; each version needs its own")
    return versions


def checked_price_data(data: Mapping[str, Any]) -> list[PriceVersion]:
    """Versions from data that parse_price_data already accepted, without validating them again."""
    return [PriceVersion.model_construct(
        pricing_version=raw["pricing_version"], effective_from=raw["effective_from"], note=raw.get("note"),
        models={key: None if entry is None else _checked_entry(entry) for key, entry in raw.get("models", {}).items()},
    ) for raw in data["versions"]]


def _checked_entry(raw: Mapping[str, Any]) -> PriceEntry:
    long = raw.get("long_context")
    return PriceEntry.model_construct(
        **_checked_rates(raw),
        long_context=None if long is None else LongContextPrice.model_construct(
            **_checked_rates(long), threshold_tokens=int(long["threshold_tokens"])),
    )


def _checked_rates(raw: Mapping[str, Any]) -> dict[str, Any]:
    return {kind: None if raw.get(kind) is None else _exact_price(raw[kind]) for kind in RATE_KINDS}


def read_price_file(path: Path) -> list[PriceVersion]:
    return parse_price_data(read_yaml_file(path, PriceTableError, "price table"), str(path))
