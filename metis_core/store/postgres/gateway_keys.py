"""`PostgresGatewayKeyStore`: the gateway's keys, limits and quota counters on PostgreSQL.

Same methods as the SQLite backend (`store/gateway_keys.py`, the `GatewayKeyStore` protocol; the
statements both run alike come from `PortableKeyQueries`), for several gateway processes on several
machines sharing one database. Every counter changes by
one atomic `INSERT .. ON CONFLICT DO UPDATE SET x = x + excluded.x RETURNING`, never read-modify-
write; alerts are claimed by one conditional UPDATE. A reservation locks each window's spend row
(`SELECT .. FOR UPDATE`, windows in one order) for its check-and-insert transaction. Money is
`numeric` USD, rounded to the same 12 decimals (picodollars) the SQLite backend keeps.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from metis_core.store.backend import Database, SharedDatabase
from metis_core.store.gateway_keys import (
    BudgetHold,
    HoldRefused,
    PortableKeyQueries,
    ReservationRefused,
    Scope,
    from_pusd,
    hold_order,
    to_pusd,
)
from metis_core.store.postgres.database import PostgresDatabase


def _usd(amount: Decimal) -> Decimal:
    """Rounded to picodollars exactly as the SQLite backend stores it."""
    return from_pusd(to_pusd(amount))


def _money(value: Any) -> Decimal:
    return _usd(Decimal(value)) if value is not None else Decimal(0)


class PostgresGatewayKeyStore(PortableKeyQueries):
    """The `gateway_*` tables of a PostgreSQL database; safe to share between threads and processes."""

    _budget_column = "budget_usd"
    _store_money = staticmethod(_usd)
    _read_money = staticmethod(_money)

    def __init__(self, url: str | SharedDatabase) -> None:
        """A pool of its own at `url`, or a view on a runtime's shared one."""
        self._db: Database = PostgresDatabase(url) if isinstance(url, str) else url.open()
        self.path = self._db.location

    def close(self) -> None:
        self._db.close()

    def ping(self) -> None:
        self._rows("SELECT 1 FROM gateway_keys LIMIT 1", ())

    def _changed(self, sql: str, params: tuple[object, ...]) -> int:
        with self._db.transaction():
            return self._db.execute(sql, params).rowcount

    def _one(self, sql: str, params: tuple[object, ...]) -> Any:
        """One row of a write that RETURNs, fetched inside its transaction."""
        with self._db.transaction():
            return self._db.execute(sql, params).fetchone()

    def _rows(self, sql: str, params: tuple[object, ...]) -> list[Any]:
        with self._db.errors():
            return self._db.execute(sql, params).fetchall()

    # --- counters: one atomic statement each -------------------------------------------------

    def count_request(self, scope: Scope, subject_id: str, minute: int) -> tuple[int, int]:
        row = self._one(
            "INSERT INTO gateway_minute AS m (scope, subject_id, minute, requests) VALUES (?, ?, ?, 1) "
            "ON CONFLICT (scope, subject_id, minute) DO UPDATE SET requests = m.requests + 1 "
            "RETURNING requests, tokens",
            (scope, subject_id, minute),
        )
        return int(row[0]), int(row[1])

    def add_tokens(self, scope: Scope, subject_id: str, minute: int, tokens: int) -> None:
        self._changed(
            "INSERT INTO gateway_minute AS m (scope, subject_id, minute, tokens) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (scope, subject_id, minute) DO UPDATE SET tokens = m.tokens + excluded.tokens",
            (scope, subject_id, minute, tokens),
        )

    def add_spend(self, scope: Scope, subject_id: str, window_start: int, amount: Decimal) -> Decimal:
        row = self._one(
            "INSERT INTO gateway_spend AS s (scope, subject_id, window_start, spent_usd) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (scope, subject_id, window_start) DO UPDATE SET spent_usd = s.spent_usd + excluded.spent_usd "
            "RETURNING spent_usd",
            (scope, subject_id, window_start, _usd(amount)),
        )
        return _money(row[0])

    def spent(self, scope: Scope, subject_id: str, window_start: int) -> Decimal:
        rows = self._rows(
            "SELECT spent_usd FROM gateway_spend WHERE scope = ? AND subject_id = ? AND window_start = ?",
            (scope, subject_id, window_start),
        )
        return _money(rows[0][0]) if rows else Decimal(0)

    # --- reservations: each window's spend row locked for the check and the insert ------------

    def reserve(self, reservation_id: str, holds: list[BudgetHold], amount: Decimal, now_us: int,
                expires_us: int) -> HoldRefused | None:
        wanted = _usd(amount)
        try:
            with self._db.transaction():
                for hold in sorted(holds, key=hold_order):
                    self._reserve_one(reservation_id, hold, wanted, now_us, expires_us)
        except ReservationRefused as refusal:
            return refusal.refused
        return None

    def _reserve_one(self, reservation_id: str, hold: BudgetHold, wanted: Decimal, now_us: int,
                     expires_us: int) -> None:
        db = self._db
        window = (hold.scope, hold.subject_id, hold.window_start)
        db.execute("INSERT INTO gateway_spend (scope, subject_id, window_start) VALUES (?, ?, ?) "
                   "ON CONFLICT DO NOTHING", window)
        # The row lock: a second reserver of this window waits here until this transaction ends, then
        # reads (READ COMMITTED: a fresh snapshot per statement) every reservation committed before it.
        spent = _money(db.execute("SELECT spent_usd FROM gateway_spend WHERE scope = ? AND subject_id = ? "
                                  "AND window_start = ? FOR UPDATE", window).fetchone()[0])
        db.execute("DELETE FROM gateway_reservations WHERE scope = ? AND subject_id = ? AND expires_at <= ?",
                   (hold.scope, hold.subject_id, now_us))
        held = _money(db.execute(
            "SELECT COALESCE(SUM(amount_usd), 0) FROM gateway_reservations "
            "WHERE scope = ? AND subject_id = ? AND window_start = ? AND id <> ?", (*window, reservation_id),
        ).fetchone()[0])
        if spent + held + wanted > _usd(hold.budget_usd):
            raise ReservationRefused(HoldRefused(hold, spent, held))
        db.execute(
            "INSERT INTO gateway_reservations (id, scope, subject_id, window_start, amount_usd, created_at, "
            "expires_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id, scope, subject_id) DO UPDATE SET "
            "window_start = excluded.window_start, amount_usd = excluded.amount_usd, "
            "expires_at = excluded.expires_at",
            (reservation_id, *window, wanted, now_us, expires_us),
        )

    def settle(self, reservation_id: str, holds: list[BudgetHold], cost: Decimal, *,
               keep: bool) -> dict[tuple[str, str], Decimal]:
        charged = _usd(cost)
        totals: dict[tuple[str, str], Decimal] = {}
        with self._db.transaction():
            for hold in sorted(holds, key=hold_order) if charged else ():
                row = self._db.execute(
                    "INSERT INTO gateway_spend AS s (scope, subject_id, window_start, spent_usd) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (scope, subject_id, window_start) DO UPDATE SET "
                    "spent_usd = s.spent_usd + excluded.spent_usd RETURNING spent_usd",
                    (hold.scope, hold.subject_id, hold.window_start, charged),
                ).fetchone()
                totals[(hold.scope, hold.subject_id)] = _money(row[0])
            if keep:
                self._db.execute("UPDATE gateway_reservations SET amount_usd = GREATEST(amount_usd - ?, 0) "
                                 "WHERE id = ?", (charged, reservation_id))
            else:
                self._db.execute("DELETE FROM gateway_reservations WHERE id = ?", (reservation_id,))
        return totals

    def reserved(self, scope: Scope, subject_id: str, window_start: int, now_us: int) -> Decimal:
        rows = self._rows(
            "SELECT COALESCE(SUM(amount_usd), 0) FROM gateway_reservations "
            "WHERE scope = ? AND subject_id = ? AND window_start = ? AND expires_at > ?",
            (scope, subject_id, window_start, now_us),
        )
        return _money(rows[0][0])
