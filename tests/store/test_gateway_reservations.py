"""Budget reservations in the gateway key store, on both backends: reserve, settle, release, expire.

A reservation holds a call's worst case in every budget window it counts against, all or none; the
spend plus every live reservation never passes a window's cap, even with several stores (workers)
reserving at once. Settling charges the real cost; a lease that ran out stops holding and is swept.
"""

from __future__ import annotations

import threading
from decimal import Decimal
from pathlib import Path

from metis_core.store.gateway_keys import BudgetHold, GatewayKeyStore, open_gateway_key_store

NOW = 1_800_000_000_000_000  # microseconds
LEASE = NOW + 60_000_000
KEY = BudgetHold("gateway_key", "gk_1", 0, Decimal("1"))
TEAM = BudgetHold("team", "team_1", 0, Decimal("0.5"))


def held(store: GatewayKeyStore, hold: BudgetHold, now: int = NOW) -> Decimal:
    return store.reserved(hold.scope, hold.subject_id, hold.window_start, now)


def test_a_reservation_that_fits_is_held_and_one_that_does_not_is_refused_with_the_figures(
        db_location: Path | str) -> None:
    store = open_gateway_key_store(db_location)
    store.add_spend("gateway_key", "gk_1", 0, Decimal("0.3"))
    assert store.reserve("rsv_a", [KEY], Decimal("0.5"), NOW, LEASE) is None
    assert held(store, KEY) == Decimal("0.5")
    refused = store.reserve("rsv_b", [KEY], Decimal("0.25"), NOW, LEASE)
    assert refused is not None and refused.hold == KEY
    assert refused.spent_usd == Decimal("0.3") and refused.reserved_usd == Decimal("0.5")
    assert store.reserve("rsv_b", [KEY], Decimal("0.2"), NOW, LEASE) is None  # exactly the cap: fits
    assert held(store, KEY) == Decimal("0.7")
    store.close()


def test_a_reservation_is_all_or_nothing_across_key_and_team(db_location: Path | str) -> None:
    store = open_gateway_key_store(db_location)
    refused = store.reserve("rsv_a", [KEY, TEAM], Decimal("0.6"), NOW, LEASE)  # fits the key, not the team
    assert refused is not None and refused.hold == TEAM
    assert held(store, KEY) == 0 and held(store, TEAM) == 0  # the key's hold was rolled back
    assert store.reserve("rsv_a", [KEY, TEAM], Decimal("0.4"), NOW, LEASE) is None
    assert held(store, KEY) == Decimal("0.4") and held(store, TEAM) == Decimal("0.4")
    store.close()


def test_settling_charges_the_real_cost_and_ends_or_shrinks_the_reservation(db_location: Path | str) -> None:
    store = open_gateway_key_store(db_location)
    assert store.reserve("rsv_a", [KEY, TEAM], Decimal("0.4"), NOW, LEASE) is None
    totals = store.settle("rsv_a", [KEY, TEAM], Decimal("0.1"), keep=True)  # a structured retry may follow
    assert totals == {("gateway_key", "gk_1"): Decimal("0.1"), ("team", "team_1"): Decimal("0.1")}
    assert held(store, KEY) == Decimal("0.3")
    assert store.reserve("rsv_a", [KEY, TEAM], Decimal("0.4"), NOW, LEASE) is None  # topped up, not added
    assert held(store, TEAM) == Decimal("0.4")
    store.settle("rsv_a", [KEY, TEAM], Decimal("0.15"), keep=False)
    assert held(store, KEY) == 0 and held(store, TEAM) == 0
    assert store.spent("gateway_key", "gk_1", 0) == Decimal("0.25") and store.spent("team", "team_1", 0) == Decimal(
        "0.25")
    store.close()


def test_a_released_reservation_frees_the_budget_uncharged(db_location: Path | str) -> None:
    store = open_gateway_key_store(db_location)
    assert store.reserve("rsv_a", [KEY], Decimal("1"), NOW, LEASE) is None
    assert store.reserve("rsv_b", [KEY], Decimal("0.01"), NOW, LEASE) is not None
    store.release("rsv_a")
    assert store.reserve("rsv_b", [KEY], Decimal("1"), NOW, LEASE) is None
    assert store.spent("gateway_key", "gk_1", 0) == 0
    store.close()


def test_an_expired_lease_stops_holding_is_swept_and_a_late_settle_still_charges(db_location: Path | str) -> None:
    store = open_gateway_key_store(db_location)
    assert store.reserve("rsv_crashed", [KEY], Decimal("0.9"), NOW, NOW + 1_000_000) is None
    assert held(store, KEY) == Decimal("0.9")
    later = NOW + 2_000_000  # the process that held it died; its lease ran out
    assert held(store, KEY, later) == 0
    assert store.reserve("rsv_next", [KEY], Decimal("0.9"), later, later + 60_000_000) is None  # sweeps it first
    assert store.sweep_reservations(later) == 0  # already swept by the reservation above
    assert store.reserve("rsv_old", [TEAM], Decimal("0.1"), NOW, NOW + 1_000_000) is None
    assert store.sweep_reservations(later) == 1
    store.settle("rsv_crashed", [KEY], Decimal("0.05"), keep=False)  # a call that outlived its lease still pays
    assert store.spent("gateway_key", "gk_1", 0) == Decimal("0.05")
    assert held(store, KEY, later) == Decimal("0.9")  # the other call's hold is untouched
    store.close()


def test_workers_reserving_at_once_never_hold_more_than_the_cap(db_location: Path | str) -> None:
    stores = [open_gateway_key_store(db_location) for _ in range(3)]
    granted: list[str] = []
    lock = threading.Lock()

    def work(store: GatewayKeyStore, worker: int) -> None:
        for n in range(15):
            name = f"rsv_{worker}_{n}"
            if store.reserve(name, [KEY, TEAM], Decimal("0.03"), NOW, LEASE) is None:
                with lock:
                    granted.append(name)

    threads = [threading.Thread(target=work, args=(stores[i % 3], i)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(granted) == 16  # the team's $0.50 holds exactly 16 reservations of $0.03, never 17
    assert held(stores[0], TEAM) == Decimal("0.48")
    for store in stores:
        store.close()
