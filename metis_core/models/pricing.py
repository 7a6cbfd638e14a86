"""Cost of a call from the local, versioned price table (canonical-message-format §6.4).

Prices are exact Decimals per token, precomputed at load, so costing a call is a few
multiplications. The version in force on the call's date is used and recorded as
`pricing_version`, so past calls can be repriced. A model without a price costs None and logs a
WARNING, never a silent zero. Usage must already be normalized (usage_normalization.py); this
module never reads provider-reported costs.
"""

from __future__ import annotations

import bisect
import fnmatch
import logging
import time
from collections.abc import Callable, Mapping
from datetime import date, datetime, timedelta
from decimal import Context, Decimal
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Final

from metis_core.errors import MetisError, PriceTableError
from metis_core.models.price_file import (
    CACHE_WRITE_1H,
    RATE_KINDS,
    PriceEntry,
    PriceVersion,
    Rates,
    checked_price_data,
    parse_price_data,
    read_price_file,
)
from metis_core.plain_values import PlainValue
from metis_core.prepared_data import DATA_DIR, load_checked
from metis_core.yaml_text import parse_yaml_text

if TYPE_CHECKING:  # only annotations: the message model is not loaded to list models and prices
    from metis_core.config import MetisConfig
    from metis_core.messages.metadata import ExtraCallUsage, Usage

log = logging.getLogger("metis_core.models.pricing")

_PER_TOKEN = Decimal(1_000_000)
_ARITHMETIC: Final = Context()
_ZERO: Final = Decimal(0)
"""The default decimal context's settings, held here: costing a call does not touch the caller's
context. A gateway request runs in a new asyncio task whose context holds no decimal context yet, and
the first implicit Decimal operation there makes one (~3 µs per call); prices never depended on it."""
USER_PRICING_SUFFIX = "+user"


class TokenRates(PlainValue):
    """USD per single token, for each kind of token; `cache_write_1h` prices the one-hour part of
    cache writes (outside `scaled`: most calls have none)."""

    __slots__ = (*RATE_KINDS, CACHE_WRITE_1H, "scaled")
    input: Decimal
    output: Decimal
    cache_read: Decimal
    cache_write: Decimal
    reasoning: Decimal
    cache_write_1h: Decimal
    scaled: tuple[int, int, int, int, int, int] | None
    """Derived from the five rates: (exponent, then each rate's integer at that common exponent, in
    RATE_KINDS order), for `ModelPrice.cost_of`'s integer path; None when a rate is negative or not finite."""

    def __init__(self, input: Decimal, output: Decimal, cache_read: Decimal, cache_write: Decimal,
                 reasoning: Decimal, cache_write_1h: Decimal | None = None) -> None:
        self._assign(input=input, output=output, cache_read=cache_read, cache_write=cache_write, reasoning=reasoning,
                     cache_write_1h=input * 2 if cache_write_1h is None else cache_write_1h,
                     scaled=_scaled((input, output, cache_read, cache_write, reasoning)))

    @classmethod
    def per_token(cls, rates: Rates) -> TokenRates:
        return cls(*(rates.rate(kind) / _PER_TOKEN for kind in (*RATE_KINDS, CACHE_WRITE_1H)))


def _scaled(rates: tuple[Decimal, ...]) -> tuple[int, int, int, int, int, int] | None:
    """(common exponent, each rate as an integer at it), or None for a negative or non-finite rate."""
    parts = [rate.as_tuple() for rate in rates]
    if any(part.sign or not isinstance(part.exponent, int) for part in parts):
        return None
    exponent = min(int(part.exponent) for part in parts)
    ints = [int("".join(map(str, part.digits))) * 10 ** (int(part.exponent) - exponent) for part in parts]
    return exponent, ints[0], ints[1], ints[2], ints[3], ints[4]


def _zone_names() -> object:
    """`time.tzname` itself, the tuple `time.tzset()` replaces (`_LocalDay` checks its identity)."""
    return time.tzname


class _LocalDay:
    """`date.today()` read from the clock once per local day: the day, with the span of clock times it
    covers (local midnight to the next, DST included) and the time zone it was read in, replaced as
    one tuple. A clock outside the span (the next day, or a clock set back) or a zone changed by
    `time.tzset()` reads the day again. `date.today()` converts to local time on every call
    (~5,800 instructions, a fifth of costing a call); this is one clock read and two comparisons."""

    __slots__ = ("kept",)

    def __init__(self) -> None:
        self.kept: tuple[float, float, object, date] = (0.0, 0.0, None, date.min)

    def today(self) -> date:
        now = time.time()
        start, end, zone, day = self.kept
        if start <= now < end and zone is _zone_names():
            return day
        zone = _zone_names()
        day = date.fromtimestamp(now)
        start = datetime.combine(day, datetime.min.time()).timestamp()
        end = datetime.combine(day + timedelta(days=1), datetime.min.time()).timestamp()
        if not start <= now < end:  # a clock or zone moved in between: no span kept, read again next time
            self.kept = (0.0, 0.0, None, date.min)
            return day
        self.kept = (start, end, zone, day)
        return day


local_today = _LocalDay().today
"""Today's local date, as `date.today()` gives it (a named fast path, docs/gateway.md "What it costs")."""


_EXACT_BELOW: Final = 10**28
"""A cost whose integer at the rates' common exponent is below this has at most 28 digits, the default
context's precision: then every product and sum of the Decimal form is exact too (all terms are
non-negative, so none exceeds the total), and both forms give the same value."""


def _normalized(total: int, exponent: int) -> Decimal:
    """`Decimal(total).scaleb(exponent).normalize()` under the default settings, for 0 <= total < 10**28 (so no
    digit is rounded away): the trailing zeros stripped in integers, then the integer's Decimal scaled, what
    `normalize` gives (the same coefficient and exponent; zero is `0`). Three Decimal operations cost ~2.5x
    this (tests/models/test_pricing.py holds the two to each other; bench/results/gateway-history.md)."""
    if total == 0:
        return _ZERO
    while total % 10 == 0:
        total //= 10
        exponent += 1
    return Decimal(total, _ARITHMETIC).scaleb(exponent, _ARITHMETIC)  # exact (at most 28 digits); no context made


class ModelPrice(PlainValue):
    """One model's price in one table version; per-million figures kept for display."""

    __slots__ = (
        "effective_from",
        "key",
        "long_context_rates",
        "long_context_threshold",
        "per_million",
        "pricing_version",
        "rates",
    )
    key: str
    """The table entry it came from: a model id or a glob pattern."""
    pricing_version: str
    effective_from: date
    per_million: Mapping[str, Decimal]
    rates: TokenRates
    long_context_threshold: int | None
    long_context_rates: TokenRates | None

    def __init__(self, key: str, pricing_version: str, effective_from: date, per_million: Mapping[str, Decimal],
                 rates: TokenRates, long_context_threshold: int | None = None,
                 long_context_rates: TokenRates | None = None) -> None:
        self._assign(key=key, pricing_version=pricing_version, effective_from=effective_from, per_million=per_million,
                     rates=rates, long_context_threshold=long_context_threshold,
                     long_context_rates=long_context_rates)

    def cost_of(self, usage: Usage) -> Decimal:
        rates = self.rates
        if (
            self.long_context_rates is not None
            and self.long_context_threshold is not None
            and (
                usage.input_tokens + usage.cached_input_tokens + usage.cache_creation_input_tokens
                > self.long_context_threshold
            )
        ):
            rates = self.long_context_rates
        details = usage.details
        if details is not None and details.cache_write_1h_tokens:
            return _with_1h_writes(usage, rates, details.cache_write_1h_tokens)
        return _cost_at(usage, rates)


def _with_1h_writes(usage: Usage, rates: TokenRates, written_1h: int) -> Decimal:
    """The one-hour cache writes (part of cache_creation_input_tokens) at their own rate, the rest as usual."""
    written_1h = min(written_1h, usage.cache_creation_input_tokens)
    rest = usage.model_copy(update={"cache_creation_input_tokens": usage.cache_creation_input_tokens - written_1h,
                                    "details": None})
    add, times = _ARITHMETIC.add, _ARITHMETIC.multiply
    return add(_cost_at(rest, rates), times(rates.cache_write_1h, written_1h)).normalize(_ARITHMETIC)


def _cost_at(usage: Usage, rates: TokenRates) -> Decimal:
    """The cost of `usage` at `rates`, its cache writes all at the five-minute rate."""
    output, reasoning = usage.output_tokens, usage.reasoning_tokens
    if reasoning > output:  # not min(): a builtin call with its argument tuple, per answer
        reasoning = output
    scaled = rates.scaled
    if scaled is not None:  # a named fast path (docs/gateway.md "What it costs"): integers, then one Decimal
        fresh, answered, read, written = (usage.input_tokens, output - reasoning, usage.cached_input_tokens,
                                          usage.cache_creation_input_tokens)
        if fresh >= 0 and answered >= 0 and read >= 0 and written >= 0 and reasoning >= 0:  # not min(): a call
            total = (scaled[1] * fresh + scaled[2] * answered + scaled[3] * read + scaled[4] * written
                     + scaled[5] * reasoning)
            if total < _EXACT_BELOW:  # exact in both forms: the same value, normalized the same
                return _normalized(total, scaled[0])
    add, times = _ARITHMETIC.add, _ARITHMETIC.multiply  # (a * b + c * d ...) under the default settings
    cost = add(
        add(add(times(rates.input, usage.input_tokens), times(rates.cache_read, usage.cached_input_tokens)),
            times(rates.cache_write, usage.cache_creation_input_tokens)),
        times(rates.output, output - reasoning),
    )
    if reasoning:
        cost = add(cost, times(rates.reasoning, reasoning))
    return cost.normalize(_ARITHMETIC)  # exact value, no trailing zeros from the per-token scaling


def _model_price(key: str, entry: PriceEntry, version: PriceVersion, suffix: str = "") -> ModelPrice:
    long = entry.long_context
    return ModelPrice(
        key=key,
        pricing_version=version.pricing_version + suffix,
        effective_from=version.effective_from,
        per_million=entry.per_million(),
        rates=TokenRates.per_token(entry),
        long_context_threshold=long.threshold_tokens if long else None,
        long_context_rates=TokenRates.per_token(long) if long else None,
    )


PricedEntry = tuple[PriceEntry, PriceVersion, str]
"""A table entry with the version it is priced under and the pricing_version suffix (user overrides)."""


class _VersionTable:
    """One version's complete table: exact ids and glob patterns, both cumulative.

    A ModelPrice is made when a model is first looked up, not for every entry of every version at
    load (most processes price one or two models)."""

    def __init__(self, entries: dict[str, PricedEntry]) -> None:
        self._exact = {k: e for k, e in entries.items() if "*" not in k}
        self._patterns = sorted((k for k in entries if "*" in k), key=lambda k: -len(k))  # most specific first
        self._entries = entries
        self._made: dict[str, ModelPrice] = {}

    def _price(self, key: str) -> ModelPrice:
        made = self._made.get(key)
        if made is None:
            entry, version, suffix = self._entries[key]
            made = self._made[key] = _model_price(key, entry, version, suffix)
        return made

    def find(self, model_id: str, canonical_id: str) -> ModelPrice | None:
        for key in (model_id, canonical_id):
            if key in self._exact:
                return self._price(key)
        for pattern in self._patterns:
            if fnmatch.fnmatchcase(model_id, pattern) or fnmatch.fnmatchcase(canonical_id, pattern):
                return self._price(pattern)
        return None


class PriceTable:
    """Every version of the price table, with user overrides applied on top of each."""

    def __init__(
        self,
        versions: list[PriceVersion],
        *,
        overrides: Mapping[str, PriceEntry] | None = None,
        canonical_id: Callable[[str], str] | None = None,
    ) -> None:
        if not versions:
            raise PriceTableError("the price table has no versions")
        self._versions = sorted(versions, key=lambda v: v.effective_from)
        self._dates = [v.effective_from for v in self._versions]
        self._canonical = canonical_id or (lambda model_id: model_id)
        self._overrides = dict(overrides or {})
        self._tables: dict[int, _VersionTable] = {}
        """Version index -> its complete table, made when a price in force then is first asked for (a
        process prices today's calls: one version of many)."""
        self._resolved: dict[tuple[str, int], ModelPrice | None] = {}
        self._warned: set[str] = set()

    @classmethod
    def load(
        cls,
        config: MetisConfig | None = None,
        *,
        path: Path | None = None,
        canonical_id: Callable[[str], str] | None = None,
    ) -> PriceTable:
        """The built-in table (or `path`), with the config's `prices:` overrides.

        Model ids are folded to their registry entry (snapshots, openai_responses -> openai)
        unless `canonical_id` is given.
        """
        versions = read_price_file(path) if path is not None else list(_builtin_versions())
        overrides: dict[str, PriceEntry] = {}
        if config is not None:
            source = f"{config.path}: prices"
            overrides = {k: PriceEntry.from_raw(v, f"{source}.{k}") for k, v in config.prices.items()}
        if canonical_id is None:
            canonical_id = _registry_canonical_id(config)
        return cls(versions, overrides=overrides, canonical_id=canonical_id)

    @property
    def versions(self) -> list[date]:
        return list(self._dates)

    def price_for(self, model_id: str, at: date | None = None) -> ModelPrice | None:
        """The price in force on `at` (default today), or None when the model has none."""
        index = bisect.bisect_right(self._dates, at or local_today()) - 1
        if index < 0:
            return None
        key = (model_id, index)
        try:
            return self._resolved[key]
        except KeyError:
            pass
        try:
            canonical = self._canonical(model_id)
        except MetisError:
            canonical = model_id
        price = self._table(index).find(model_id, canonical)
        self._resolved[key] = price
        return price

    def _table(self, index: int) -> _VersionTable:
        """Version `index`'s table: every earlier version's entries with its own on top, then the overrides."""
        table = self._tables.get(index)
        if table is None:
            version = self._versions[index]
            entries: dict[str, PriceEntry | None] = {}
            for earlier in self._versions[:index + 1]:
                entries.update(earlier.models)
            priced: dict[str, PricedEntry] = {key: (entry, version, "") for key, entry in entries.items()
                                              if entry is not None}
            for key, entry in self._overrides.items():
                priced[key] = (entry, version, USER_PRICING_SUFFIX)
            table = self._tables[index] = _VersionTable(priced)
        return table

    def cost(self, usage: Usage, model_id: str, at: date | None = None) -> tuple[Decimal | None, str | None]:
        """(cost in USD, pricing_version), or (None, None) with a WARNING when there is no price."""
        price = self.price_for(model_id, at)
        if price is None:
            if model_id not in self._warned:
                self._warned.add(model_id)
                log.warning(
                    "no price for %s%s; its cost is unknown (add it under prices: in config.yaml)",
                    model_id,
                    f" on {at}" if at else "",
                    extra={"model_id": model_id},
                )
            return None, None
        cost = price.cost_of(usage)
        if usage.details is not None and usage.details.extra_calls:
            cost = self._with_extra_calls(cost, price, usage.details.extra_calls, model_id, at)
        return cost, price.pricing_version

    def _with_extra_calls(self, cost: Decimal, price: ModelPrice, calls: list[ExtraCallUsage], model_id: str,
                          at: date | None) -> Decimal:
        """`cost` plus each call billed beside the request's totals, at its own model's price when the
        table knows it; one it does not know is left out of the cost with a WARNING."""
        from metis_core.messages.metadata import Usage, UsageDetails  # only an answer with such calls loads them

        provider = model_id.split(":", 1)[0]
        for call in calls:
            call_price = price if call.model is None else self.price_for(f"{provider}:{call.model}", at)
            if call_price is None:
                log.warning("no price for %s:%s, which answered the %s call inside a %s request; that call's cost "
                            "is left out (add it under prices: in config.yaml)", provider, call.model, call.kind,
                            model_id, extra={"model_id": model_id})
                continue
            written_1h = call.cache_write_1h_tokens
            details = UsageDetails(cache_write_1h_tokens=written_1h) if written_1h else None
            cost = _ARITHMETIC.add(cost, call_price.cost_of(Usage(
                input_tokens=call.input_tokens, output_tokens=call.output_tokens,
                cached_input_tokens=call.cached_input_tokens,
                cache_creation_input_tokens=call.cache_creation_input_tokens, details=details)))
        return cost.normalize(_ARITHMETIC)

    def price_usage(self, usage: Usage, model_id: str, at: date | None = None) -> Usage:
        """A copy of `usage` with cost_usd and pricing_version set from this table."""
        cost, version = self.cost(usage, model_id, at)
        return usage.model_copy(update={"cost_usd": cost, "pricing_version": version})


def _registry_canonical_id(config: MetisConfig | None) -> Callable[[str], str]:
    from metis_core.models.registry import ModelRegistry, default_registry

    registry = default_registry() if config is None else ModelRegistry.load(config)
    return registry.canonical_id


def builtin_price_path() -> Path:
    return DATA_DIR / "prices.yaml"


@lru_cache(maxsize=1)
def _builtin_versions() -> tuple[PriceVersion, ...]:
    """prices.yaml shipped with metis-core: parsed and checked, or built from the prepared form a
    checked parse stored (prepared_data.py)."""
    path = builtin_price_path()
    return tuple(load_checked(path, lambda text: parse_yaml_text(text, path, PriceTableError),
                              lambda data: parse_price_data(data, str(path)), checked_price_data))


@lru_cache(maxsize=1)
def default_price_table() -> PriceTable:
    """The built-in table without user overrides, built once. Use PriceTable.load(config) for those."""
    return PriceTable.load()


def price_usage(usage: Usage, model_id: str, *, at: date | None = None, table: PriceTable | None = None) -> Usage:
    """A copy of `usage` priced with `table` (default: the built-in table)."""
    return (table or default_price_table()).price_usage(usage, model_id, at)
