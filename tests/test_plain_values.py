"""PlainValue: the frozen-dataclass behaviour the price and registry records keep without dataclasses."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from metis_core import ModelPrice
from metis_core.models.price_file import LongContextPrice, PriceEntry
from metis_core.models.pricing import TokenRates
from metis_core.models.registry_file import ModelEntry, ProviderEntry


def _rates() -> TokenRates:
    return TokenRates(Decimal("0.000003"), Decimal("0.000015"), Decimal("0.0000003"), Decimal("0.00000375"),
                      Decimal("0.000015"))


def test_fields_are_set_once_and_never_again() -> None:
    price = ModelPrice("anthropic:claude-sonnet-4-5", "2026-01", date(2026, 1, 1), {}, _rates())
    with pytest.raises(AttributeError, match="ModelPrice is immutable; cannot set 'key'"):
        price.key = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError, match="immutable"):
        del price.rates
    assert price.long_context_threshold is None and price.long_context_rates is None


def test_equality_and_hash_go_by_type_and_every_field_of_every_class() -> None:
    base = PriceEntry(Decimal(3), Decimal(15))
    assert base == PriceEntry(Decimal(3), Decimal(15)) and hash(base) == hash(PriceEntry(Decimal(3), Decimal(15)))
    assert base != PriceEntry(Decimal(3), Decimal(16))
    long = LongContextPrice(Decimal(6), Decimal(22), threshold_tokens=200_000)
    assert PriceEntry(Decimal(3), Decimal(15), long_context=long) != base  # a subclass field counts
    assert long != LongContextPrice(Decimal(6), Decimal(22), threshold_tokens=100_000)
    assert _rates() != PriceEntry(Decimal(3), Decimal(15))  # another type is never equal
    assert ProviderEntry(family="openai") == ProviderEntry(family="openai") != ProviderEntry()


def test_repr_names_every_field() -> None:
    text = repr(LongContextPrice(Decimal(6), Decimal(22), threshold_tokens=200_000))
    assert text.startswith("LongContextPrice(") and "threshold_tokens=200000" in text and "input=Decimal('6')" in text
    assert repr(ModelEntry(display_name="X")) == (
        "ModelEntry(capabilities={}, display_name='X', provider_capabilities={}, snapshots=[])")


def test_defaults_are_fresh_containers_per_value() -> None:
    first, second = ModelEntry(), ModelEntry()
    first.capabilities["supports_tools"] = True
    assert second.capabilities == {}
