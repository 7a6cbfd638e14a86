"""Cost from the versioned price table (§6.4, §11.1 test 7): exact Decimals, per date, never a silent zero."""

from __future__ import annotations

import contextvars
import decimal
import logging
import os
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from fixture_files import read_json

from metis_core.config import load_config
from metis_core.errors import PriceTableError
from metis_core.messages.metadata import Usage
from metis_core.models.price_file import checked_price_data, read_price_file
from metis_core.models.pricing import PriceTable, default_price_table, price_usage
from metis_core.models.usage_normalization import (
    normalize_anthropic_style,
    normalize_gemini_style,
    normalize_openai_style,
)

DAY = date(2026, 5, 8)
CENT = Decimal("0.01")


@pytest.fixture
def table() -> PriceTable:
    return PriceTable.load()


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --- §11.1 test 7: a known conversation, to the cent -----------------------------------------------


def test_a_known_multi_provider_conversation_costs_exactly_the_expected_amount(table: PriceTable) -> None:
    chat = read_json("openai_chat", "response__cached_tokens_prompt_cache_read.json")["usage"]
    responses = read_json("openai_responses", "response__cached_tokens.json")["usage"]
    reasoning = read_json("openai_responses", "response__reasoning_item_and_tokens.json")["usage"]
    gemini = read_json("gemini", "response__function_call_thought_signature.json")["usageMetadata"]
    calls: list[tuple[str, Usage, Decimal]] = [
        # OpenAI-style: prompt 1220 includes 1152 cached -> 68 uncached. 68*2.50 + 1152*1.25 + 100*10 per M.
        (
            "openai:gpt-4o-2024-08-06",
            normalize_openai_style(
                chat["prompt_tokens"],
                chat["completion_tokens"],
                cached_tokens=chat["prompt_tokens_details"]["cached_tokens"],
            ),
            Decimal("0.00261"),
        ),
        # Responses API, same model family folded: 125*2.50 + 1390*1.25 + 8*10 per M.
        (
            "openai_responses:gpt-4o-2024-08-06",
            normalize_openai_style(
                responses["input_tokens"],
                responses["output_tokens"],
                cached_tokens=responses["input_tokens_details"]["cached_tokens"],
            ),
            Decimal("0.00213"),
        ),
        # Reasoning tokens are output: 54*0.25 + 164*2 per M.
        (
            "openai_responses:gpt-5-mini-2025-08-07",
            normalize_openai_style(
                reasoning["input_tokens"],
                reasoning["output_tokens"],
                reasoning_tokens=reasoning["output_tokens_details"]["reasoning_tokens"],
            ),
            Decimal("0.0003415"),
        ),
        # Anthropic-style, recorded: 11*3 + 1031*0.30 (cache read) + 100*15 per M.
        (
            "anthropic:claude-sonnet-4-20250514",
            normalize_anthropic_style(11, 100, cache_read_input_tokens=1031),
            Decimal("0.0018423"),
        ),
        # Gemini: thoughts billed as output: 189*1.25 + (20+92)*10 per M.
        (
            "gemini:gemini-2.5-pro",
            normalize_gemini_style(
                gemini["promptTokenCount"],
                gemini["candidatesTokenCount"],
                thoughts_token_count=gemini["thoughtsTokenCount"],
            ),
            Decimal("0.00135625"),
        ),
        # Anthropic cache write, then a cache read of the same prefix (Opus 4.7: 5 / 25, write 6.25, read 0.50).
        (
            "anthropic:claude-opus-4-7",
            normalize_anthropic_style(2000, 1500, cache_creation_input_tokens=50_000),
            Decimal("0.36"),
        ),
        (
            "anthropic:claude-opus-4-7",
            normalize_anthropic_style(300, 800, cache_read_input_tokens=50_000),
            Decimal("0.0465"),
        ),
        ("ollama:qwen3:8b", normalize_openai_style(4000, 900), Decimal("0")),
    ]
    total = Decimal(0)
    for model_id, usage, expected in calls:
        cost, version = table.cost(usage, model_id, at=DAY)
        assert cost == expected, model_id
        assert version == "2026-04-16"
        total += cost
    assert total == Decimal("0.41478005")
    assert total.quantize(CENT) == Decimal("0.41")


def test_price_usage_returns_a_priced_copy(table: PriceTable) -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, latency_ms=900)
    priced = table.price_usage(usage, "anthropic:claude-haiku-4-5", at=DAY)
    assert (priced.cost_usd, priced.pricing_version) == (Decimal(6), "2026-04-16")
    assert priced.latency_ms == 900
    assert usage.cost_usd is None and usage.pricing_version is None
    assert price_usage(usage, "anthropic:claude-haiku-4-5").cost_usd == Decimal(6)
    assert priced.model_dump(mode="json")["cost_usd"] == "6"
    small = table.price_usage(Usage(input_tokens=68), "openai:gpt-4o", at=DAY)
    assert small.model_dump(mode="json")["cost_usd"] == "0.00017"


# --- versions ---------------------------------------------------------------------------------------


def test_the_version_in_force_on_the_call_date_is_used(table: PriceTable) -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert table.cost(usage, "openai:o3", at=date(2025, 5, 1)) == (Decimal(50), "2025-04-16")
    assert table.cost(usage, "openai:o3", at=date(2025, 6, 9)) == (Decimal(50), "2025-05-22")
    assert table.cost(usage, "openai:o3", at=date(2025, 6, 10)) == (Decimal(10), "2025-06-10")
    assert table.cost(usage, "openai:o3", at=DAY) == (Decimal(10), "2026-04-16")


def test_a_model_is_unpriced_before_the_version_that_introduced_it(table: PriceTable) -> None:
    assert table.price_for("anthropic:claude-opus-4-7", at=date(2026, 1, 1)) is None
    assert table.price_for("anthropic:claude-opus-4-7", at=date(2026, 4, 16)) is not None
    assert table.price_for("openai:gpt-4o", at=date(2024, 1, 1)) is None


def test_later_versions_inherit_earlier_entries(table: PriceTable) -> None:
    price = table.price_for("openai:gpt-4o", at=DAY)
    assert price is not None
    assert (price.pricing_version, price.effective_from) == ("2026-04-16", date(2026, 4, 16))
    assert price.per_million["input"] == Decimal("2.50")


def test_a_checked_table_keeps_one_decimal_for_each_price_it_repeats() -> None:
    data = {"versions": [{"pricing_version": "v1", "effective_from": date(2025, 1, 1), "models": {
        "p:x": {"input": "3.00", "output": "15.00"}, "p:y": {"input": "3.00", "output": 15, "cache_read": "0.30"}}}]}
    models = checked_price_data(data)[0].models
    x, y = models["p:x"], models["p:y"]
    assert x is not None and y is not None
    assert x.input is y.input and str(x.input) == "3.00"  # one value, written as the table writes it
    assert x.output == y.output == Decimal(15) and str(x.output) == "15.00" and str(y.output) == "15"
    assert y.cache_read == Decimal("0.30") and x.cache_read is None


def test_no_price_means_none_and_a_warning_never_a_silent_zero(
    table: PriceTable, caplog: pytest.LogCaptureFixture
) -> None:
    usage = Usage(input_tokens=10, output_tokens=10)
    with caplog.at_level(logging.WARNING, logger="metis_core.models.pricing"):
        assert table.cost(usage, "openrouter:deepseek/deepseek-v3") == (None, None)
        assert table.cost(usage, "openrouter:deepseek/deepseek-v3") == (None, None)
        priced = table.price_usage(usage, "openai:gpt-5.6-sol")
    assert (priced.cost_usd, priced.pricing_version) == (None, None)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum("openrouter:deepseek/deepseek-v3" in w for w in warnings) == 1  # once per model, not per call
    assert any("openai:gpt-5.6-sol" in w for w in warnings)


def test_local_and_free_models_price_at_an_explicit_zero(table: PriceTable) -> None:
    usage = Usage(input_tokens=123_456, output_tokens=7_890)
    assert table.cost(usage, "ollama:llama3.2", at=DAY) == (Decimal(0), "2026-04-16")
    assert table.cost(usage, "openrouter:minimax/minimax-m2:free", at=DAY) == (Decimal(0), "2026-04-16")


def test_long_prompts_use_the_long_context_rates(table: PriceTable) -> None:
    short = Usage(input_tokens=200_000, output_tokens=1000)
    long = Usage(input_tokens=150_000, cached_input_tokens=60_000, output_tokens=1000)
    assert table.cost(short, "gemini:gemini-2.5-pro", at=DAY)[0] == Decimal("0.26")  # 0.25 + 0.01
    # 150k*2.50 + 60k*0.25 + 1k*15 per M
    assert table.cost(long, "gemini:gemini-2.5-pro", at=DAY)[0] == Decimal("0.405")


def test_reasoning_tokens_cost_the_reasoning_rate_when_one_is_set(tmp_path: Path) -> None:
    path = write(
        tmp_path / "prices.yaml",
        'versions:\n  - pricing_version: "v1"\n    effective_from: 2025-01-01\n    models:\n'
        '      x:think: {input: "1", output: "10", reasoning: "20"}\n'
        '      x:plain: {input: "1", output: "10"}\n',
    )
    table = PriceTable.load(path=path)
    usage = Usage(input_tokens=0, output_tokens=1_000_000, reasoning_tokens=400_000)
    assert table.cost(usage, "x:think")[0] == Decimal(14)  # 600k*10 + 400k*20 per M
    assert table.cost(usage, "x:plain")[0] == Decimal(10)


def test_a_null_entry_removes_a_model_from_later_versions(tmp_path: Path) -> None:
    path = write(
        tmp_path / "prices.yaml",
        "versions:\n"
        '  - {pricing_version: "a", effective_from: 2025-01-01, models: {"x:m": {input: "1", output: "1"}}}\n'
        '  - {pricing_version: "b", effective_from: 2025-02-01, models: {"x:m": null}}\n',
    )
    table = PriceTable.load(path=path)
    assert table.price_for("x:m", at=date(2025, 1, 15)) is not None
    assert table.price_for("x:m", at=date(2025, 2, 1)) is None


def test_user_price_overrides_apply_and_are_marked_in_the_version(_isolated_home: Path) -> None:
    config_path = _isolated_home / "config.yaml"
    config_path.write_text(
        "prices:\n"
        '  "openai:gpt-4o": {input: "1", output: "2"}\n'
        '  "openai_compatible:my-llama": {input: "0", output: "0"}\n'
    )
    os.chmod(config_path, 0o600)
    table = PriceTable.load(load_config())
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert table.cost(usage, "openai:gpt-4o-2024-08-06", at=DAY) == (Decimal(3), "2026-04-16+user")
    assert table.cost(usage, "openai_compatible:my-llama", at=DAY) == (Decimal(0), "2026-04-16+user")
    assert default_price_table().cost(usage, "openai:gpt-4o", at=DAY)[0] == Decimal("12.50")


def test_a_bad_user_price_override_names_the_entry(_isolated_home: Path) -> None:
    config_path = _isolated_home / "config.yaml"
    config_path.write_text('prices:\n  "openai:gpt-4o": {input: 0.1, output: "2"}\n')
    with pytest.raises(PriceTableError, match=r"prices\.openai:gpt-4o: input: write the price 0\.1 as a quoted"):
        PriceTable.load(load_config())


ONE_VERSION = "versions:\n  - {pricing_version: v, effective_from: 2025-01-01, models: "


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("models: {}\n", "top-level `versions:` list"),
        ("versions: []\n", "`versions:` is empty"),
        (
            ONE_VERSION + "{'x:m': {input: 0.3, output: '1'}}}\n",
            "write the price 0.3 as a quoted string",
        ),
        (
            ONE_VERSION + "{'x:m': {input: '-1', output: '1'}}}\n",
            "not a non-negative price",
        ),
        (
            ONE_VERSION + "{'x:m': {input: 'abc', output: '1'}}}\n",
            "'abc' is not a number",
        ),
        (
            ONE_VERSION + "{'x:m': {input: '1'}}}\n",
            "output: Field required",
        ),
        (
            ONE_VERSION + "{'x:m': {input: '1', output: '1', cached: '1'}}}\n",
            "cached: Extra inputs are not permitted",
        ),
        (
            ONE_VERSION + "{'gpt-4o': {input: '1', output: '1'}}}\n",
            "'gpt-4o' is not a model id",
        ),
        ("versions:\n  - {pricing_version: v, effective_from: soon, models: {}}\n", "version v: effective_from"),
        (
            "versions:\n  - {pricing_version: v, effective_from: 2025-01-01}\n"
            "  - {pricing_version: v, effective_from: 2025-02-01}\n",
            "pricing_version repeated",
        ),
        (
            "versions:\n  - {pricing_version: v, effective_from: 2025-01-01}\n"
            "  - {pricing_version: w, effective_from: 2025-01-01}\n",
            "effective_from repeated",
        ),
        ("versions:\n  - pricing_version: v\n   effective_from: 2025-01-01\n", "invalid YAML at line 3"),
    ],
)
def test_a_bad_price_file_is_rejected_naming_the_file_and_problem(tmp_path: Path, text: str, fragment: str) -> None:
    path = write(tmp_path / "prices.yaml", text)
    with pytest.raises(PriceTableError) as info:
        read_price_file(path)
    assert str(path) in str(info.value)
    assert fragment in str(info.value)


def test_the_shipped_price_table_loads_and_prices_every_catalog_model_it_lists(table: PriceTable) -> None:
    from metis_core.models.registry import default_registry

    unpriced = [m.id for m in default_registry().models() if table.price_for(m.id) is None]
    # Only a model whose list price we do not know may lack one; it then costs None, not zero.
    assert unpriced == ["openai:gpt-5.6-sol"]



def _implicit_cost(price: Any, usage: Usage) -> Decimal:
    """The cost as written with operators, in whatever decimal context is current (the old form)."""
    rates = price.rates
    if price.long_context_rates is not None and price.long_context_threshold is not None and (
            usage.total_input_tokens > price.long_context_threshold):
        rates = price.long_context_rates
    output = usage.output_tokens
    reasoning = min(usage.reasoning_tokens, output)
    cost = (rates.input * usage.input_tokens + rates.cache_read * usage.cached_input_tokens
            + rates.cache_write * usage.cache_creation_input_tokens + rates.output * (output - reasoning))
    if reasoning:
        cost += rates.reasoning * reasoning
    return cost.normalize()


@pytest.mark.parametrize("counts", [(0, 0, 0, 0, 0), (12, 30, 0, 0, 0), (1_000_003, 77_777, 5_000_000, 123, 9_999),
                                    (2**53 - 1, 2**53 - 1, 2**53 - 1, 2**53 - 1, 2**52)])
@pytest.mark.parametrize("model", ["anthropic:claude-haiku-4-5", "openai:gpt-4o", "gemini:gemini-2.5-pro"])
def test_the_cost_is_the_operator_form_under_the_default_context(counts: tuple[int, ...], model: str) -> None:
    price = PriceTable.load().price_for(model)
    assert price is not None
    usage = Usage(input_tokens=counts[0], output_tokens=counts[1], cached_input_tokens=counts[2],
                  cache_creation_input_tokens=counts[3], reasoning_tokens=counts[4])
    with decimal.localcontext(decimal.Context()):
        assert price.cost_of(usage) == _implicit_cost(price, usage)
        assert str(price.cost_of(usage)) == str(_implicit_cost(price, usage))


def test_costing_a_call_leaves_the_callers_decimal_context_alone() -> None:
    price = PriceTable.load().price_for("anthropic:claude-haiku-4-5")
    assert price is not None
    fresh = contextvars.Context()  # as a new asyncio task's: no decimal context in it yet
    fresh.run(price.cost_of, Usage(input_tokens=12, output_tokens=30))
    assert not any(var.name == "decimal_context" for var in fresh)
    usage = Usage(input_tokens=1_234_567, output_tokens=7)
    exact = price.cost_of(usage)
    with decimal.localcontext(decimal.Context(prec=3)):  # a caller's own precision does not round prices
        assert price.cost_of(usage) == exact


def _rates_of(per_million: list[str]) -> Any:
    from metis_core.models.pricing import TokenRates

    return TokenRates(*(Decimal(v) / Decimal(1_000_000) for v in per_million))


@pytest.mark.parametrize("per_million", [
    ["3", "15", "0.3", "3.75", "15"], ["0.1", "0.4", "0.025", "0", "0.4"], ["1.25", "10", "0.125", "1.5625", "10"],
    ["0.0001", "123456.789", "7", "0.333333", "2"], ["1e20", "1e20", "1e20", "1e20", "1e20"],  # past 28 digits
    ["1", "1", "1", "1", "-1"],  # a negative rate: the Decimal form only
])
@pytest.mark.parametrize("counts", [(0, 0, 0, 0, 0), (1234, 567, 0, 0, 0), (12, 30, 5, 7, 3), (1_000_003, 77_777,
                                    5_000_000, 123, 9_999), (2**53 - 1, 2**53 - 1, 2**53 - 1, 2**53 - 1, 2**52)])
def test_the_integer_path_gives_the_decimal_forms_exact_value_and_text(per_million: list[str],
                                                                       counts: tuple[int, ...]) -> None:
    # ModelPrice.cost_of adds integers at the rates' common exponent and makes one Decimal when the
    # total fits 28 digits; held here to the operator form under the default context (the general path).
    from metis_core.models.pricing import ModelPrice

    rates = _rates_of(per_million)
    price = ModelPrice("m:x", "v", DAY, {}, rates)
    usage = Usage(input_tokens=counts[0], output_tokens=counts[1], cached_input_tokens=counts[2],
                  cache_creation_input_tokens=counts[3], reasoning_tokens=counts[4])
    with decimal.localcontext(decimal.Context()):
        expected = _implicit_cost(price, usage)
    assert price.cost_of(usage) == expected and str(price.cost_of(usage)) == str(expected)
    assert (rates.scaled is None) == per_million[-1].startswith("-")


def test_the_integer_path_over_random_rates_and_counts() -> None:
    import random

    from metis_core.models.pricing import ModelPrice

    chosen = random.Random(25)
    for _ in range(2_000):
        per_million = [f"{chosen.randrange(0, 10**chosen.randrange(1, 9))}E-{chosen.randrange(0, 8)}" for _ in range(5)]
        price = ModelPrice("m:x", "v", DAY, {}, _rates_of(per_million))
        tokens = [chosen.randrange(0, 10 ** chosen.randrange(0, 16)) for _ in range(5)]
        usage = Usage(input_tokens=tokens[0], output_tokens=tokens[1], cached_input_tokens=tokens[2],
                      cache_creation_input_tokens=tokens[3], reasoning_tokens=tokens[4])
        with decimal.localcontext(decimal.Context()):
            expected = _implicit_cost(price, usage)
        assert str(price.cost_of(usage)) == str(expected)


def test_local_today_is_date_today_across_midnight_and_zone_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    import time as clock
    from datetime import datetime, timedelta

    from metis_core.models.pricing import _LocalDay

    day = _LocalDay()
    assert day.today() == date.today()
    midnight = datetime.combine(date(2026, 3, 7), datetime.min.time()).timestamp()
    for offset in (-7200.0, -0.001, 0.0, 0.001, 3600.0, -0.5, 86_399.999, 86_400.0, -86_400.0):
        monkeypatch.setattr(clock, "time", lambda offset=offset: midnight + offset)
        assert day.today() == date.fromtimestamp(midnight + offset)
        assert day.today() - date(2026, 3, 7) == timedelta(days=(offset // 86_400))
    monkeypatch.undo()
    for zone in ("Pacific/Kiritimati", "Pacific/Pago_Pago", "UTC"):  # +14 h and -11 h: different dates
        monkeypatch.setenv("TZ", zone)
        clock.tzset()
        try:
            assert day.today() == date.today()
        finally:
            monkeypatch.undo()
            clock.tzset()
    assert day.today() == date.today()


def test_local_today_keeps_the_zone_tuple_itself_so_its_fast_path_holds() -> None:
    """The kept zone must be `time.tzname` itself: compiled, a typed read made a new tuple each time,
    the identity check never held, and every call read the day again (bench/results/gateway-history.md)."""
    import time as clock

    from metis_core.models.pricing import _LocalDay

    day = _LocalDay()
    first = day.today()
    assert day.kept[2] is clock.tzname
    start, end, _, kept_day = day.kept
    assert start <= clock.time() < end and kept_day == first == day.today()


def test_normalized_is_the_three_decimal_operations_it_stands_for() -> None:
    """`_normalized` (trailing zeros stripped in integers, one Decimal scaled) against what it replaced,
    `Decimal(total).scaleb(exponent).normalize()` under the default settings, compared as text and tuple."""
    import random

    from metis_core.models.pricing import _normalized

    context = decimal.Context()
    draw = random.Random(36)
    totals = [0, 1, 10, 100, 12207, 1220700, 10**27, 10**28 - 1, 5 * 10**20]
    totals += [draw.randrange(10 ** draw.randrange(1, 29)) for _ in range(2_000)]
    totals += [draw.randrange(1, 1000) * 10 ** draw.randrange(0, 20) for _ in range(500)]
    for total in totals:
        for exponent in (-12, -8, -6, -1, 0, 3):
            expected = Decimal(total, context).scaleb(exponent, context).normalize(context)
            built = _normalized(total, exponent)
            assert (str(built), built.as_tuple()) == (str(expected), expected.as_tuple()), (total, exponent)
