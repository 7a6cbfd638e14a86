"""The shape of prices.yaml (and of `prices:` overrides in config.yaml), read into exact Decimals.

Prices must be written as strings or integers: a YAML float such as 0.1 is rejected, because
binary floats cannot hold most cent fractions exactly. Every problem names the file and entry.
The runtime classes are plain slotted values: price_schema.py (pydantic) validates, loaded only when
something is (a user's `prices:`, another file); the bundled prices.yaml, once checked, is built
from its prepared form without it (checked_price_data). Computing costs lives in pricing.py.
"""

from collections.abc import Mapping
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from metis_core.errors import PriceTableError
from metis_core.plain_values import PlainValue
from metis_core.yaml_text import read_yaml_file

RATE_KINDS = ("input", "output", "cache_read", "cache_write", "reasoning")


def exact_price(value: Any) -> Decimal:
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


CACHE_WRITE_1H = "cache_write_1h"
"""The rate of cache writes with a one-hour TTL (Anthropic); it defaults to twice the input rate."""


class Rates(PlainValue):
    """Per-million-token USD prices (plain values, made from checked data: price_schema validates,
    checked_price_data trusts a checked form). cache_read and cache_write default to input,
    reasoning to output, cache_write_1h to twice input."""

    __slots__ = (*RATE_KINDS, CACHE_WRITE_1H)
    input: Decimal
    output: Decimal
    cache_read: Decimal | None
    cache_write: Decimal | None
    reasoning: Decimal | None
    cache_write_1h: Decimal | None

    def __init__(self, input: Decimal, output: Decimal, cache_read: Decimal | None = None,
                 cache_write: Decimal | None = None, reasoning: Decimal | None = None,
                 cache_write_1h: Decimal | None = None) -> None:
        self._assign(input=input, output=output, cache_read=cache_read, cache_write=cache_write, reasoning=reasoning,
                     cache_write_1h=cache_write_1h)

    def rate(self, kind: str) -> Decimal:
        value: Decimal | None = getattr(self, kind)
        if value is not None:
            return value
        if kind == CACHE_WRITE_1H:
            return self.input * 2
        return self.output if kind == "reasoning" else self.input

    def per_million(self) -> dict[str, Decimal]:
        return {kind: self.rate(kind) for kind in RATE_KINDS}


class LongContextPrice(Rates):
    """Rates for a whole call whose total input exceeds `threshold_tokens`."""

    __slots__ = ("threshold_tokens",)
    threshold_tokens: int

    def __init__(self, input: Decimal, output: Decimal, cache_read: Decimal | None = None,
                 cache_write: Decimal | None = None, reasoning: Decimal | None = None,
                 cache_write_1h: Decimal | None = None, *, threshold_tokens: int) -> None:
        super().__init__(input, output, cache_read, cache_write, reasoning, cache_write_1h)
        self._assign(threshold_tokens=threshold_tokens)


class PriceEntry(Rates):
    __slots__ = ("long_context",)
    long_context: LongContextPrice | None

    def __init__(self, input: Decimal, output: Decimal, cache_read: Decimal | None = None,
                 cache_write: Decimal | None = None, reasoning: Decimal | None = None,
                 cache_write_1h: Decimal | None = None, *, long_context: LongContextPrice | None = None) -> None:
        super().__init__(input, output, cache_read, cache_write, reasoning, cache_write_1h)
        self._assign(long_context=long_context)

    @classmethod
    def from_raw(cls, raw: Any, where: str) -> "PriceEntry":
        """A `prices:` entry of a user's config, validated (PriceTableError naming `where` if not)."""
        from pydantic import ValidationError

        from metis_core.models.price_schema import PriceEntrySchema, first_problem

        try:
            return PriceEntrySchema.model_validate(raw).runtime()
        except ValidationError as exc:
            raise PriceTableError(f"{where}: {first_problem(exc)}") from None


class PriceVersion:
    """One version of the table; a None entry removes a model priced by an earlier version."""

    __slots__ = ("effective_from", "models", "note", "pricing_version")

    def __init__(self, pricing_version: str, effective_from: date, note: str | None,
                 models: dict[str, PriceEntry | None]) -> None:
        self.pricing_version, self.effective_from = pricing_version, effective_from
        self.note, self.models = note, models

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PriceVersion) and all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PriceVersion({self.pricing_version!r}, {self.effective_from!r}, {len(self.models)} models)"


def parse_price_data(data: Any, source: str) -> list[PriceVersion]:
    if not isinstance(data, Mapping) or not isinstance(data.get("versions"), list):
        raise PriceTableError(f"{source}: expected a top-level `versions:` list")
    if set(data) - {"versions"}:
        raise PriceTableError(f"{source}: unknown top-level key(s) {sorted(set(data) - {'versions'})}")
    from pydantic import ValidationError

    from metis_core.models.price_schema import PriceVersionSchema, first_problem

    versions: list[PriceVersion] = []
    for index, raw in enumerate(data["versions"]):
        label = raw.get("pricing_version", f"#{index}") if isinstance(raw, Mapping) else f"#{index}"
        try:
            versions.append(PriceVersionSchema.model_validate(raw).runtime())
        except ValidationError as exc:
            raise PriceTableError(f"{source}: version {label}: {first_problem(exc)}") from None
    if not versions:
        raise PriceTableError(f"{source}: `versions:` is empty")
    for attribute in ("pricing_version", "effective_from"):
        seen = [getattr(v, attribute) for v in versions]
        duplicates = sorted({str(x) for x in seen if seen.count(x) > 1})
        if duplicates:
            raise PriceTableError(f"{source}: {attribute} repeated: {duplicates}; each version needs its own")
    return versions


def checked_price_data(data: Mapping[str, Any]) -> list[PriceVersion]:
    """Versions from data that parse_price_data already accepted, without validating them again.

    Equal prices written alike share one Decimal: the table repeats a few dozen figures hundreds of times."""
    prices: dict[Any, Decimal] = {}
    return [PriceVersion(raw["pricing_version"], raw["effective_from"], raw.get("note"),
                         {key: None if entry is None else _checked_entry(entry, prices)
                          for key, entry in raw.get("models", {}).items()})
            for raw in data["versions"]]


def _checked_entry(raw: Mapping[str, Any], prices: dict[Any, Decimal]) -> PriceEntry:
    long = raw.get("long_context")
    return PriceEntry(**_checked_rates(raw, prices), long_context=None if long is None else LongContextPrice(
        **_checked_rates(long, prices), threshold_tokens=int(long["threshold_tokens"])))


def _checked_rates(raw: Mapping[str, Any], prices: dict[Any, Decimal]) -> dict[str, Any]:
    rates: dict[str, Any] = {}
    for kind in (*RATE_KINDS, CACHE_WRITE_1H):
        value = raw.get(kind)
        if value is not None:
            price = prices.get(value)
            if price is None:
                price = prices[value] = exact_price(value)
            value = price
        rates[kind] = value
    return rates


def read_price_file(path: Path) -> list[PriceVersion]:
    return parse_price_data(read_yaml_file(path, PriceTableError, "price table"), str(path))
