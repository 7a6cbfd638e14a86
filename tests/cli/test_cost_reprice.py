"""`metis cost --reprice`: stored calls priced again with the current table, beside what was recorded,
with both pricing versions; nothing stored changes. Seeded like test_admin_commands (one real run)."""

from __future__ import annotations

import json
import sqlite3
from datetime import date
from decimal import Decimal
from pathlib import Path

from metis_core.messages import Message
from metis_core.models.pricing import PriceTable
from metis_core.models.repricing import reprice
from metis_core.store.sessions import SessionStore

from .test_admin_commands import Cli, cli, event_count  # noqa: F401  (the seeded-CLI fixture)


def stored_rows(home: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(home / "metis.db") as conn:
        return conn.execute("SELECT * FROM messages ORDER BY id").fetchall()


def stored_answers(home: Path, session_id: str) -> list[Message]:
    with SessionStore(home / "metis.db") as store:
        return [m for m in store.load_messages(session_id) if m.metadata.usage is not None]


def test_reprice_with_the_same_table_matches_what_was_stored(cli: Cli) -> None:  # noqa: F811
    answers = stored_answers(cli.home, cli.session_id)
    stored_version = answers[0].metadata.usage.pricing_version  # type: ignore[union-attr]
    document = json.loads(cli("cost", "--reprice", "--json").stdout)["reprice"]
    assert document["priced_on"] == date.today().isoformat()
    total = document["total"]
    assert total["calls"] == 2
    assert total["stored"] == {"cost_usd": "0.002229", "pricing_versions": [stored_version], "unpriced_calls": 0}
    assert total["current"] == total["stored"] and total["difference_usd"] == "0"
    assert [row["key"] for row in document["model"]] == ["anthropic:claude-sonnet-4-6"]


def test_reprice_under_a_changed_price_shows_both_figures_and_changes_nothing(cli: Cli) -> None:  # noqa: F811
    answers = stored_answers(cli.home, cli.session_id)
    stored_version = answers[0].metadata.usage.pricing_version  # type: ignore[union-attr]
    (cli.home / "config.yaml").write_text(
        'prices:\n  "anthropic:claude-sonnet-4-6": {input: "1", output: "2", cache_read: "1", cache_write: "1"}\n')
    rows, events = stored_rows(cli.home), event_count(cli.home)
    document = json.loads(cli("cost", "--reprice", "--json").stdout)["reprice"]
    usages = [m.metadata.usage for m in answers]
    expected = sum((Decimal(u.total_input_tokens) + 2 * u.output_tokens) / 1_000_000 for u in usages if u)
    total = document["total"]
    assert total["stored"]["cost_usd"] == "0.002229" and total["stored"]["pricing_versions"] == [stored_version]
    assert Decimal(total["current"]["cost_usd"]) == expected == Decimal("0.00053")
    assert total["current"]["pricing_versions"] == [f"{PriceTable.load().versions[-1].isoformat()}+user"]
    assert Decimal(total["difference_usd"]) == expected - Decimal("0.002229")

    table = cli("cost", "--reprice")
    assert table.exit_code == 0
    assert "$0.002229 @ " + stored_version in table.stdout and "$0.000530 @ " in table.stdout
    assert "-$0.001699" in table.stdout
    assert stored_rows(cli.home) == rows and event_count(cli.home) == events  # nothing written
    assert [m.metadata.usage for m in stored_answers(cli.home, cli.session_id)] == usages


def test_reprice_counts_calls_without_usage_or_price_as_unpriced_on_each_side() -> None:
    from session_samples import assistant

    from metis_core.messages import TextBlock, Usage

    def answer(model: str, usage: Usage | None) -> Message:
        message = assistant("sess_x", [TextBlock(text="hi")])
        return message.model_copy(update={"metadata": message.metadata.model_copy(
            update={"model": model, "usage": usage})})

    table = PriceTable.load()
    usage = Usage(input_tokens=1_000_000, output_tokens=0)
    result = reprice([answer("openai:gpt-4o", usage.model_copy(update={"cost_usd": Decimal("5"),
                                                                        "pricing_version": "old"})),
                      answer("acme:unknown", usage), answer("openai:gpt-4o", None)], table,
                     on=date(2025, 5, 1))
    gpt = result.rows[1]
    assert gpt.key == "openai:gpt-4o" and gpt.calls == 2
    assert gpt.stored.cost_usd == 5 and gpt.stored.unpriced_calls == 1 and gpt.stored.pricing_versions == {"old"}
    assert gpt.current.cost_usd == Decimal("2.5") and gpt.current.pricing_versions == {"2025-04-16"}
    assert gpt.current.unpriced_calls == 1
    assert result.rows[0].current.unpriced_calls == 1 and result.total.current.unpriced_calls == 2
