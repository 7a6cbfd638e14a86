"""The gateway key store on both backends: hashes only, and counters that several workers can share.

Two stores on one database stand in for two gateway workers: concurrent charges and request counts
must add up exactly (single atomic statements), and each alert threshold is claimed once.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from metis_core.errors import GatewayKeyError
from metis_core.store.gateway_keys import (
    GatewayKeyRecord,
    GatewayKeyStore,
    SubjectLimits,
    from_pusd,
    open_gateway_key_store,
    to_pusd,
)


def record(key_id: str = "gk_1") -> GatewayKeyRecord:
    return GatewayKeyRecord(
        id=key_id, name="ci", prefix=f"mk_{key_id[-8:]:>08}", secret_hash="ab" * 32, user_id=None, team_id=None,
        allowed_models=("anthropic:*",), budget_usd=Decimal("2.5"), budget_period="day", rpm=5, tpm=None,
        created_at=datetime(2026, 5, 1, tzinfo=UTC),
    )  # fmt: skip


def test_a_key_round_trips_and_an_unknown_id_is_named(db_location: Path | str) -> None:
    store = open_gateway_key_store(db_location)
    store.insert_key(record())
    assert store.get_key("gk_1") == record()
    assert store.key_by_prefix(record().prefix) == record()
    with pytest.raises(GatewayKeyError, match="keys list"):
        store.get_key("gk_nope")
    assert store.revoke("gk_1", datetime.now(UTC), "admin_revoke") is True
    assert store.revoke("gk_1", datetime.now(UTC), "admin_revoke") is False  # only one revoker emits


def test_money_is_exact_in_picodollars() -> None:
    amount = Decimal("0.000000123456789012")
    assert from_pusd(to_pusd(amount)) == Decimal("0.000000123457")
    assert from_pusd(to_pusd(Decimal("2.5"))) == Decimal("2.5")


def test_counters_shared_by_two_workers_add_up_exactly(db_location: Path | str) -> None:
    stores = [open_gateway_key_store(db_location) for _ in range(2)]

    def work(store: GatewayKeyStore) -> None:
        for _ in range(50):
            store.add_spend("gateway_key", "gk_1", 0, Decimal("0.001"))
            store.count_request("team", "team_1", 7)

    threads = [threading.Thread(target=work, args=(s,)) for s in stores for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert stores[0].spent("gateway_key", "gk_1", 0) == Decimal("0.2")
    assert stores[1].count_request("team", "team_1", 7) == (201, 0)
    claims = [s.claim_alert("gateway_key", "gk_1", 0, 50) for s in stores for _ in range(3)]
    assert claims.count(True) == 1


def test_user_and_team_limits_are_replaced_whole(db_location: Path | str) -> None:
    store = open_gateway_key_store(db_location)
    store.set_limits(SubjectLimits("team", "team_1", Decimal("10"), "month", rpm=5))
    store.set_limits(SubjectLimits("team", "team_1", None, None, tpm=100))
    assert store.limits("team", "team_1") == SubjectLimits("team", "team_1", None, None, None, 100)
    assert store.limits("user", "usr_1") is None


def test_amounts_round_to_the_same_picodollars_on_both_backends(db_location: Path | str) -> None:
    store = open_gateway_key_store(db_location)
    total = store.add_spend("user", "usr_1", 0, Decimal("0.000000123456789012"))
    assert total == Decimal("0.000000123457")
    assert store.add_spend("user", "usr_1", 0, Decimal("1.1")) == Decimal("1.100000123457")
    store.close()
