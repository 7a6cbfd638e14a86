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

from metis_core.errors import GatewayKeyError, StoreError
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


def test_keys_issued_before_step_8_keep_calling_models_and_a_new_scope_round_trips(db_location: Path | str) -> None:
    from dataclasses import replace

    insert = ("INSERT INTO gateway_keys (id, name, prefix, secret_hash, created_at) "
              "VALUES ({0}, 'old', 'mk_OLDOLD01', {0}, 1000)")
    if isinstance(db_location, Path):  # a file left at version 7 by an older metis
        from metis_core.store.sqlite.connection import connect
        from metis_core.store.sqlite.migrations import migrate

        conn = connect(db_location)
        migrate(conn, db_location, up_to=7)
        conn.execute(insert.format("?"), ("gk_old", "ab" * 32))
        conn.commit()
        conn.close()
    else:
        import psycopg

        from metis_core.store.postgres.migrations import migrate as migrate_postgres

        with psycopg.connect(db_location, autocommit=True) as pg:
            migrate_postgres(pg, "test", up_to=7)
            pg.execute(insert.format("%s"), ("gk_old", "ab" * 32))
    store = open_gateway_key_store(db_location)
    try:
        old = store.get_key("gk_old")
        assert old.scope == "model" and old.secret_hash == "ab" * 32 and old.name == "old"
        store.insert_key(replace(record("gk_admin"), scope="admin"))
        assert store.get_key("gk_admin").scope == "admin"
        assert [k.scope for k in store.list_keys()] == ["admin", "model"]
        with pytest.raises(StoreError, match=r"(?i)check"):  # the database itself refuses an unknown scope
            store.insert_key(replace(record("gk_root"), prefix="mk_ROOTROOT", scope="root"))  # type: ignore[arg-type]
        assert store.key_by_prefix("mk_ROOTROOT") is None
    finally:
        store.close()
