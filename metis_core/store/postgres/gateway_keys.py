"""`PostgresGatewayKeyStore`: the gateway's keys, limits and quota counters on PostgreSQL.

Same methods as the SQLite backend (`store/gateway_keys.py`, the `GatewayKeyStore` protocol),
for several gateway processes on several machines sharing one database. Every counter changes by
one atomic `INSERT .. ON CONFLICT DO UPDATE SET x = x + excluded.x RETURNING`, never read-modify-
write; alerts are claimed by one conditional UPDATE. A reservation locks each window's spend row
(`SELECT .. FOR UPDATE`, windows in one order) for its check-and-insert transaction. Money is
`numeric` USD, rounded to the same 12 decimals (picodollars) the SQLite backend keeps.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

import orjson

from metis_core.errors import GatewayKeyError
from metis_core.store.backend import Database, SharedDatabase
from metis_core.store.gateway_keys import (
    BudgetHold,
    GatewayKeyRecord,
    HoldRefused,
    ReservationRefused,
    Scope,
    SubjectLimits,
    from_pusd,
    hold_order,
    to_pusd,
)
from metis_core.store.postgres.database import PostgresDatabase
from metis_core.store.records import from_us, to_us

_KEY_COLUMNS = (
    "id, name, prefix, secret_hash, user_id, team_id, allowed_models_json, budget_usd, budget_period, rpm, "
    "tpm, created_at, expires_at, revoked_at, revoke_reason, replaced_by, grace_until, scope"
)


def _usd(amount: Decimal) -> Decimal:
    """Rounded to picodollars exactly as the SQLite backend stores it."""
    return from_pusd(to_pusd(amount))


def _money(value: Any) -> Decimal:
    return _usd(Decimal(value)) if value is not None else Decimal(0)


def _opt_us(value: datetime | None) -> int | None:
    return to_us(value) if value is not None else None


def _key_from_row(row: tuple[Any, ...]) -> GatewayKeyRecord:
    (key_id, name, prefix, secret_hash, user_id, team_id, models, budget, period, rpm, tpm, created,
     expires, revoked, reason, replaced_by, grace, scope) = row  # fmt: skip
    return GatewayKeyRecord(
        id=key_id, name=name, prefix=prefix, secret_hash=secret_hash, user_id=user_id, team_id=team_id,
        allowed_models=tuple(orjson.loads(models)) if models is not None else None,
        budget_usd=_money(budget) if budget is not None else None, budget_period=period, rpm=rpm, tpm=tpm,
        created_at=from_us(created), expires_at=from_us(expires) if expires is not None else None,
        revoked_at=from_us(revoked) if revoked is not None else None, revoke_reason=reason,
        replaced_by=replaced_by, grace_until=from_us(grace) if grace is not None else None, scope=scope,
    )  # fmt: skip


class PostgresGatewayKeyStore:
    """The `gateway_*` tables of a PostgreSQL database; safe to share between threads and processes."""

    def __init__(self, url: str | SharedDatabase) -> None:
        """A pool of its own at `url`, or a view on a runtime's shared one."""
        self._db: Database = PostgresDatabase(url) if isinstance(url, str) else url.open()
        self.path = self._db.location

    def close(self) -> None:
        self._db.close()

    def ping(self) -> None:
        with self._db.errors():
            self._db.execute("SELECT 1 FROM gateway_keys LIMIT 1")

    def _write(self, sql: str, params: tuple[object, ...]) -> tuple[int, Any]:
        """(rowcount, first row or None) of one statement in its own transaction."""
        with self._db.transaction():
            result = self._db.execute(sql, params)
            return result.rowcount, result.fetchone()

    def _read(self, sql: str, params: tuple[object, ...]) -> list[Any]:
        with self._db.errors():
            return self._db.execute(sql, params).fetchall()

    # --- keys -------------------------------------------------------------------------------

    def insert_key(self, record: GatewayKeyRecord) -> None:
        models = orjson.dumps(list(record.allowed_models)).decode() if record.allowed_models is not None else None
        marks = ", ".join("?" * 18)
        self._write(
            f"INSERT INTO gateway_keys ({_KEY_COLUMNS}) VALUES ({marks})",
            (record.id, record.name, record.prefix, record.secret_hash, record.user_id, record.team_id, models,
             _usd(record.budget_usd) if record.budget_usd is not None else None, record.budget_period,
             record.rpm, record.tpm, to_us(record.created_at), _opt_us(record.expires_at),
             _opt_us(record.revoked_at), record.revoke_reason, record.replaced_by, _opt_us(record.grace_until),
             record.scope),
        )  # fmt: skip

    def key_by_prefix(self, prefix: str) -> GatewayKeyRecord | None:
        rows = self._read(f"SELECT {_KEY_COLUMNS} FROM gateway_keys WHERE prefix = ?", (prefix,))
        return _key_from_row(rows[0]) if rows else None

    def get_key(self, key_id: str) -> GatewayKeyRecord:
        rows = self._read(f"SELECT {_KEY_COLUMNS} FROM gateway_keys WHERE id = ?", (key_id,))
        if not rows:
            raise GatewayKeyError(f"no gateway key {key_id!r} in {self.path}; `metis gateway keys list` shows them")
        return _key_from_row(rows[0])

    def list_keys(self) -> list[GatewayKeyRecord]:
        return [_key_from_row(row) for row in self._read(f"SELECT {_KEY_COLUMNS} FROM gateway_keys ORDER BY id", ())]

    def revoke(self, key_id: str, at: datetime, reason: str) -> bool:
        count, _ = self._write(
            "UPDATE gateway_keys SET revoked_at = ?, revoke_reason = ? WHERE id = ? AND revoked_at IS NULL",
            (to_us(at), reason, key_id),
        )
        return count == 1

    def start_grace(self, key_id: str, replaced_by: str, until: datetime) -> bool:
        count, _ = self._write(
            "UPDATE gateway_keys SET replaced_by = ?, grace_until = ? "
            "WHERE id = ? AND revoked_at IS NULL AND replaced_by IS NULL",
            (replaced_by, to_us(until), key_id),
        )
        return count == 1

    # --- user and team limits ---------------------------------------------------------------

    def set_limits(self, limits: SubjectLimits) -> None:
        budget = _usd(limits.budget_usd) if limits.budget_usd is not None else None
        self._write(
            "INSERT INTO gateway_limits (scope, subject_id, budget_usd, budget_period, rpm, tpm) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (scope, subject_id) DO UPDATE SET "
            "budget_usd = excluded.budget_usd, budget_period = excluded.budget_period, "
            "rpm = excluded.rpm, tpm = excluded.tpm",
            (limits.scope, limits.subject_id, budget, limits.budget_period, limits.rpm, limits.tpm),
        )

    def limits(self, scope: Scope, subject_id: str) -> SubjectLimits | None:
        rows = self._read(
            "SELECT budget_usd, budget_period, rpm, tpm FROM gateway_limits WHERE scope = ? AND subject_id = ?",
            (scope, subject_id),
        )
        if not rows:
            return None
        budget, period, rpm, tpm = rows[0]
        return SubjectLimits(scope, subject_id, _money(budget) if budget is not None else None, period, rpm, tpm)

    # --- counters: one atomic statement each -------------------------------------------------

    def count_request(self, scope: Scope, subject_id: str, minute: int) -> tuple[int, int]:
        _, row = self._write(
            "INSERT INTO gateway_minute AS m (scope, subject_id, minute, requests) VALUES (?, ?, ?, 1) "
            "ON CONFLICT (scope, subject_id, minute) DO UPDATE SET requests = m.requests + 1 "
            "RETURNING requests, tokens",
            (scope, subject_id, minute),
        )
        return int(row[0]), int(row[1])

    def add_tokens(self, scope: Scope, subject_id: str, minute: int, tokens: int) -> None:
        self._write(
            "INSERT INTO gateway_minute AS m (scope, subject_id, minute, tokens) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (scope, subject_id, minute) DO UPDATE SET tokens = m.tokens + excluded.tokens",
            (scope, subject_id, minute, tokens),
        )

    def add_spend(self, scope: Scope, subject_id: str, window_start: int, amount: Decimal) -> Decimal:
        _, row = self._write(
            "INSERT INTO gateway_spend AS s (scope, subject_id, window_start, spent_usd) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (scope, subject_id, window_start) DO UPDATE SET spent_usd = s.spent_usd + excluded.spent_usd "
            "RETURNING spent_usd",
            (scope, subject_id, window_start, _usd(amount)),
        )
        return _money(row[0])

    def spent(self, scope: Scope, subject_id: str, window_start: int) -> Decimal:
        rows = self._read(
            "SELECT spent_usd FROM gateway_spend WHERE scope = ? AND subject_id = ? AND window_start = ?",
            (scope, subject_id, window_start),
        )
        return _money(rows[0][0]) if rows else Decimal(0)

    def claim_alert(self, scope: Scope, subject_id: str, window_start: int, percent: int) -> bool:
        count, _ = self._write(
            "UPDATE gateway_spend SET alerted_percent = ? "
            "WHERE scope = ? AND subject_id = ? AND window_start = ? AND alerted_percent < ?",
            (percent, scope, subject_id, window_start, percent),
        )
        return count == 1

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

    def release(self, reservation_id: str) -> None:
        self._write("DELETE FROM gateway_reservations WHERE id = ?", (reservation_id,))

    def sweep_reservations(self, now_us: int) -> int:
        count, _ = self._write("DELETE FROM gateway_reservations WHERE expires_at <= ?", (now_us,))
        return count

    def reserved(self, scope: Scope, subject_id: str, window_start: int, now_us: int) -> Decimal:
        rows = self._read(
            "SELECT COALESCE(SUM(amount_usd), 0) FROM gateway_reservations "
            "WHERE scope = ? AND subject_id = ? AND window_start = ? AND expires_at > ?",
            (scope, subject_id, window_start, now_us),
        )
        return _money(rows[0][0])
