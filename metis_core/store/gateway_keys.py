"""Gateway keys, limits and quota counters: the records, the store protocol, and its SQLite backend.

`GatewayKeyStore` is what the gateway asks of the `gateway_*` tables (migrations 6, 8, 9); the statements
both backends run alike live once, in `PortableKeyQueries`. Counters change by single atomic statements
(`x = x + ?`, `INSERT .. ON CONFLICT DO UPDATE .. RETURNING`), never read-modify-write, so several gateway
workers can share one file. Money is integer picodollars (1e-12 USD) on disk and Decimal outside. No
plaintext key is ever stored: only its SHA-256 and a public prefix.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import orjson

from metis_core.errors import GatewayKeyError
from metis_core.store.db import open_database, write_transaction
from metis_core.store.records import from_us, to_us

if TYPE_CHECKING:
    from metis_core.store.backend import SharedDatabase

Scope = Literal["gateway_key", "user", "team"]
BudgetPeriod = Literal["day", "month", "total"]
KeyScope = Literal["model", "viewer", "admin"]
"""What a key may do (migration 8): `model` calls models through the gateway (the default);
`viewer` reads `metis serve` up to user-controlled content; `admin` may do both and see private
content, chat and list keys there (docs/gateway.md "Scopes")."""
KEY_SCOPES: tuple[KeyScope, ...] = ("model", "viewer", "admin")
PICO = Decimal("1e12")


def to_pusd(amount: Decimal) -> int:
    """Decimal USD -> integer picodollars (rounded half-even at the 12th decimal)."""
    return int((amount * PICO).to_integral_value())


def from_pusd(value: int) -> Decimal:
    return (Decimal(value) / PICO).normalize() if value else Decimal(0)


@dataclass(frozen=True, slots=True)
class GatewayKeyRecord:
    id: str
    name: str
    prefix: str
    """The public part of the token, shown by `keys list` (`mk_` + 8 characters)."""
    secret_hash: str
    """SHA-256 hex of the whole token."""
    user_id: str | None
    team_id: str | None
    allowed_models: tuple[str, ...] | None
    budget_usd: Decimal | None
    budget_period: BudgetPeriod | None
    rpm: int | None
    tpm: int | None
    created_at: datetime
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    revoke_reason: str | None = None
    replaced_by: str | None = None
    grace_until: datetime | None = None
    scope: KeyScope = "model"


@dataclass(frozen=True, slots=True)
class SubjectLimits:
    """Budget and rates of one user or team (keys carry their own on the key row)."""

    scope: Scope
    subject_id: str
    budget_usd: Decimal | None = None
    budget_period: BudgetPeriod | None = None
    rpm: int | None = None
    tpm: int | None = None


_FOREVER = datetime(9999, 12, 31, tzinfo=UTC)


def budget_window(period: BudgetPeriod, now: datetime) -> tuple[datetime, datetime]:
    """[start, end) of the UTC window `now` falls in."""
    if period == "total":
        return datetime(1970, 1, 1, tzinfo=UTC), _FOREVER
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "day":
        return day, datetime.fromtimestamp(day.timestamp() + 86_400, UTC)
    start = day.replace(day=1)
    end = start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)
    return start, end


@dataclass(frozen=True, slots=True)
class BudgetUsage:
    """A budget's current window: spent, held by calls in flight, and what is left for new calls."""

    spent_usd: Decimal
    reserved_usd: Decimal
    remaining_usd: Decimal

    def as_json(self) -> dict[str, str]:
        return {"spent_usd": format(self.spent_usd, "f"), "reserved_usd": format(self.reserved_usd, "f"),
                "remaining_usd": format(self.remaining_usd, "f")}


def budget_usage(store: GatewayKeyStore, scope: Scope, subject_id: str, budget_usd: Decimal | None,
                 period: BudgetPeriod | None, now: datetime) -> BudgetUsage | None:
    """Spent, reserved and remaining in the window `now` falls in; None without a budget."""
    if budget_usd is None or period is None:
        return None
    window = int(budget_window(period, now)[0].timestamp())
    spent = store.spent(scope, subject_id, window)
    reserved = store.reserved(scope, subject_id, window, to_us(now))
    return BudgetUsage(spent, reserved, max(budget_usd - spent - reserved, Decimal(0)))


@dataclass(frozen=True, slots=True)
class BudgetHold:
    """One budget window a call's reservation is held against: the subject, the window and its cap."""

    scope: Scope
    subject_id: str
    window_start: int
    """The window's start, epoch seconds (gateway_spend's key)."""
    budget_usd: Decimal


@dataclass(frozen=True, slots=True)
class HoldRefused:
    """Why a reservation did not fit: the first window it did not fit in, with what was spent and held there."""

    hold: BudgetHold
    spent_usd: Decimal
    reserved_usd: Decimal
    """Other calls' live reservations in that window."""


class ReservationRefused(Exception):
    """Raised inside a backend's reserve transaction to roll it back; never leaves the store."""

    def __init__(self, refused: HoldRefused) -> None:
        super().__init__(refused.hold.scope)
        self.refused = refused


def hold_order(hold: BudgetHold) -> tuple[str, str]:
    """The order every backend takes a call's windows in, so two calls never wait on each other's rows."""
    return hold.scope, hold.subject_id


class GatewayKeyStore(Protocol):
    """What the gateway needs from a backend; each method is one short transaction."""

    def insert_key(self, record: GatewayKeyRecord) -> None: ...
    def key_by_prefix(self, prefix: str) -> GatewayKeyRecord | None: ...
    def get_key(self, key_id: str) -> GatewayKeyRecord: ...
    def list_keys(self) -> list[GatewayKeyRecord]: ...
    def revoke(self, key_id: str, at: datetime, reason: str) -> bool: ...
    def start_grace(self, key_id: str, replaced_by: str, until: datetime) -> bool: ...
    def set_limits(self, limits: SubjectLimits) -> None: ...
    def limits(self, scope: Scope, subject_id: str) -> SubjectLimits | None: ...
    def count_request(self, scope: Scope, subject_id: str, minute: int) -> tuple[int, int]: ...
    def add_tokens(self, scope: Scope, subject_id: str, minute: int, tokens: int) -> None: ...
    def add_spend(self, scope: Scope, subject_id: str, window_start: int, amount: Decimal) -> Decimal: ...
    def spent(self, scope: Scope, subject_id: str, window_start: int) -> Decimal: ...
    def claim_alert(self, scope: Scope, subject_id: str, window_start: int, percent: int) -> bool: ...
    def reserve(self, reservation_id: str, holds: list[BudgetHold], amount: Decimal, now_us: int,
                expires_us: int) -> HoldRefused | None:
        """All or nothing: `reservation_id` now holds `amount` in every window of `holds` when, in each,
        spent + other live reservations + `amount` <= the cap; else nothing changes and the first
        window it did not fit is returned. Expired reservations of those subjects are swept first."""
        ...
    def settle(self, reservation_id: str, holds: list[BudgetHold], cost: Decimal, *,
               keep: bool) -> dict[tuple[str, str], Decimal]:
        """Charge `cost` to every window of `holds` and, in the same transaction, end the reservation
        (`keep=False`) or lower what it holds by `cost` (`keep=True`, more calls follow); the windows'
        new totals by (scope, subject id). A reservation already expired is charged all the same."""
        ...
    def release(self, reservation_id: str) -> None: ...
    def sweep_reservations(self, now_us: int) -> int:
        """Delete every reservation whose lease ran out; how many rows went."""
        ...
    def reserved(self, scope: Scope, subject_id: str, window_start: int, now_us: int) -> Decimal:
        """What live reservations hold in a window now."""
        ...
    def ping(self) -> None: ...
    def close(self) -> None: ...


def _opt_us(value: datetime | None) -> int | None:
    return to_us(value) if value is not None else None


def _opt_dt(value: int | None) -> datetime | None:
    return from_us(value) if value is not None else None


class PortableKeyQueries(ABC):
    """The part of a key store whose SQL and decisions are the same on both backends: the key rows,
    user and team limits, alert claims and reservation deletes. A backend says how one statement runs and how it stores
    money (SQLite: integer picodollars in `*_pusd` columns; PostgreSQL: numeric USD in `*_usd`)."""

    path: Path | str
    _budget_column: str
    """The budget column of `gateway_keys` and `gateway_limits` on this backend."""

    @abstractmethod
    def _changed(self, sql: str, params: tuple[object, ...]) -> int:
        """How many rows one write, in its own transaction, changed."""

    @abstractmethod
    def _rows(self, sql: str, params: tuple[object, ...]) -> list[Any]: ...

    @staticmethod
    @abstractmethod
    def _store_money(amount: Decimal) -> object:
        """`amount` as this backend stores it, rounded to picodollars."""

    @staticmethod
    @abstractmethod
    def _read_money(value: Any) -> Decimal:
        """A stored amount back as Decimal USD."""

    def _key_columns(self) -> str:
        return (f"id, name, prefix, secret_hash, user_id, team_id, allowed_models_json, {self._budget_column}, "
                "budget_period, rpm, tpm, created_at, expires_at, revoked_at, revoke_reason, replaced_by, "
                "grace_until, scope")

    def _key_from_row(self, row: tuple[Any, ...]) -> GatewayKeyRecord:
        (key_id, name, prefix, secret_hash, user_id, team_id, models, budget, period, rpm, tpm, created,
         expires, revoked, reason, replaced_by, grace, scope) = row  # fmt: skip
        return GatewayKeyRecord(
            id=key_id, name=name, prefix=prefix, secret_hash=secret_hash, user_id=user_id, team_id=team_id,
            allowed_models=tuple(orjson.loads(models)) if models is not None else None,
            budget_usd=self._read_money(budget) if budget is not None else None, budget_period=period, rpm=rpm,
            tpm=tpm, created_at=from_us(created), expires_at=_opt_dt(expires), revoked_at=_opt_dt(revoked),
            revoke_reason=reason, replaced_by=replaced_by, grace_until=_opt_dt(grace), scope=scope,
        )  # fmt: skip

    # --- keys -------------------------------------------------------------------------------

    def insert_key(self, record: GatewayKeyRecord) -> None:
        models = orjson.dumps(list(record.allowed_models)).decode() if record.allowed_models is not None else None
        self._changed(
            f"INSERT INTO gateway_keys ({self._key_columns()}) VALUES ({', '.join('?' * 18)})",
            (record.id, record.name, record.prefix, record.secret_hash, record.user_id, record.team_id, models,
             self._store_money(record.budget_usd) if record.budget_usd is not None else None,
             record.budget_period, record.rpm, record.tpm, to_us(record.created_at), _opt_us(record.expires_at),
             _opt_us(record.revoked_at), record.revoke_reason, record.replaced_by, _opt_us(record.grace_until),
             record.scope),
        )  # fmt: skip

    def key_by_prefix(self, prefix: str) -> GatewayKeyRecord | None:
        rows = self._rows(f"SELECT {self._key_columns()} FROM gateway_keys WHERE prefix = ?", (prefix,))
        return self._key_from_row(rows[0]) if rows else None

    def get_key(self, key_id: str) -> GatewayKeyRecord:
        rows = self._rows(f"SELECT {self._key_columns()} FROM gateway_keys WHERE id = ?", (key_id,))
        if not rows:
            raise GatewayKeyError(f"no gateway key {key_id!r} in {self.path}; `metis gateway keys list` shows them")
        return self._key_from_row(rows[0])

    def list_keys(self) -> list[GatewayKeyRecord]:
        rows = self._rows(f"SELECT {self._key_columns()} FROM gateway_keys ORDER BY id", ())
        return [self._key_from_row(row) for row in rows]

    def revoke(self, key_id: str, at: datetime, reason: str) -> bool:
        """True when this call revoked it (False: already revoked, so only one caller emits the event)."""
        return self._changed(
            "UPDATE gateway_keys SET revoked_at = ?, revoke_reason = ? WHERE id = ? AND revoked_at IS NULL",
            (to_us(at), reason, key_id),
        ) == 1

    def start_grace(self, key_id: str, replaced_by: str, until: datetime) -> bool:
        return self._changed(
            "UPDATE gateway_keys SET replaced_by = ?, grace_until = ? "
            "WHERE id = ? AND revoked_at IS NULL AND replaced_by IS NULL",
            (replaced_by, to_us(until), key_id),
        ) == 1

    # --- user and team limits ---------------------------------------------------------------

    def set_limits(self, limits: SubjectLimits) -> None:
        budget = self._store_money(limits.budget_usd) if limits.budget_usd is not None else None
        column = self._budget_column
        self._changed(
            f"INSERT INTO gateway_limits (scope, subject_id, {column}, budget_period, rpm, tpm) "
            f"VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (scope, subject_id) DO UPDATE SET "
            f"{column} = excluded.{column}, budget_period = excluded.budget_period, "
            "rpm = excluded.rpm, tpm = excluded.tpm",
            (limits.scope, limits.subject_id, budget, limits.budget_period, limits.rpm, limits.tpm),
        )

    def limits(self, scope: Scope, subject_id: str) -> SubjectLimits | None:
        rows = self._rows(
            f"SELECT {self._budget_column}, budget_period, rpm, tpm FROM gateway_limits "
            "WHERE scope = ? AND subject_id = ?",
            (scope, subject_id),
        )
        if not rows:
            return None
        budget, period, rpm, tpm = rows[0]
        return SubjectLimits(scope, subject_id, self._read_money(budget) if budget is not None else None, period,
                             rpm, tpm)

    # --- alerts and reservations ------------------------------------------------------------

    def claim_alert(self, scope: Scope, subject_id: str, window_start: int, percent: int) -> bool:
        """True for exactly one caller per window and threshold (the one that should emit quota.alert)."""
        return self._changed(
            "UPDATE gateway_spend SET alerted_percent = ? "
            "WHERE scope = ? AND subject_id = ? AND window_start = ? AND alerted_percent < ?",
            (percent, scope, subject_id, window_start, percent),
        ) == 1

    def release(self, reservation_id: str) -> None:
        self._changed("DELETE FROM gateway_reservations WHERE id = ?", (reservation_id,))

    def sweep_reservations(self, now_us: int) -> int:
        return self._changed("DELETE FROM gateway_reservations WHERE expires_at <= ?", (now_us,))


class SqliteGatewayKeyStore(PortableKeyQueries):
    """The SQLite backend: the `gateway_*` tables of metis.db, one connection behind a lock."""

    _budget_column = "budget_pusd"
    _store_money = staticmethod(to_pusd)

    def __init__(self, db_path: Path | str | None = None) -> None:
        self._conn, self.path = open_database(db_path)
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def ping(self) -> None:
        self._rows("SELECT 1 FROM gateway_keys LIMIT 1", ())

    @staticmethod
    def _read_money(value: Any) -> Decimal:
        return from_pusd(int(value))

    def _changed(self, sql: str, params: tuple[object, ...]) -> int:
        with self._lock, write_transaction(self._conn, self.path):
            return self._conn.execute(sql, params).rowcount

    def _one(self, sql: str, params: tuple[object, ...]) -> tuple[object, ...] | None:
        """One row of a write that RETURNs, fetched inside its transaction."""
        with self._lock, write_transaction(self._conn, self.path):
            row: tuple[object, ...] | None = self._conn.execute(sql, params).fetchone()
            return row

    def _rows(self, sql: str, params: tuple[object, ...]) -> list[Any]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    # --- counters ---------------------------------------------------------------------------

    def count_request(self, scope: Scope, subject_id: str, minute: int) -> tuple[int, int]:
        """Count one request in `minute`; return (requests, tokens) of that minute, this one included."""
        row = self._one(
            "INSERT INTO gateway_minute (scope, subject_id, minute, requests) VALUES (?, ?, ?, 1) "
            "ON CONFLICT (scope, subject_id, minute) DO UPDATE SET requests = requests + 1 "
            "RETURNING requests, tokens",
            (scope, subject_id, minute),
        )
        assert row is not None
        return int(row[0]), int(row[1])  # type: ignore[call-overload]

    def add_tokens(self, scope: Scope, subject_id: str, minute: int, tokens: int) -> None:
        self._changed(
            "INSERT INTO gateway_minute (scope, subject_id, minute, tokens) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (scope, subject_id, minute) DO UPDATE SET tokens = tokens + excluded.tokens",
            (scope, subject_id, minute, tokens),
        )

    def add_spend(self, scope: Scope, subject_id: str, window_start: int, amount: Decimal) -> Decimal:
        """Charge `amount` to the window; return the window's new total."""
        row = self._one(
            "INSERT INTO gateway_spend (scope, subject_id, window_start, spent_pusd) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (scope, subject_id, window_start) DO UPDATE SET spent_pusd = spent_pusd + excluded.spent_pusd "
            "RETURNING spent_pusd",
            (scope, subject_id, window_start, to_pusd(amount)),
        )
        assert row is not None
        return from_pusd(int(row[0]))  # type: ignore[call-overload]

    def spent(self, scope: Scope, subject_id: str, window_start: int) -> Decimal:
        rows = self._rows(
            "SELECT spent_pusd FROM gateway_spend WHERE scope = ? AND subject_id = ? AND window_start = ?",
            (scope, subject_id, window_start),
        )
        return from_pusd(int(rows[0][0])) if rows else Decimal(0)

    # --- reservations: each a BEGIN IMMEDIATE transaction (one writer at a time on the file) --

    def reserve(self, reservation_id: str, holds: list[BudgetHold], amount: Decimal, now_us: int,
                expires_us: int) -> HoldRefused | None:
        wanted = to_pusd(amount)
        try:
            with self._lock, write_transaction(self._conn, self.path):
                for hold in sorted(holds, key=hold_order):
                    self._reserve_one(reservation_id, hold, wanted, now_us, expires_us)
        except ReservationRefused as refusal:
            return refusal.refused
        return None

    def _reserve_one(self, reservation_id: str, hold: BudgetHold, wanted: int, now_us: int, expires_us: int) -> None:
        conn = self._conn
        who = (hold.scope, hold.subject_id)
        conn.execute("DELETE FROM gateway_reservations WHERE scope = ? AND subject_id = ? AND expires_at <= ?",
                     (*who, now_us))
        spent, held = conn.execute(
            "SELECT COALESCE((SELECT spent_pusd FROM gateway_spend WHERE scope = ? AND subject_id = ? "
            "AND window_start = ?), 0), COALESCE((SELECT SUM(amount_pusd) FROM gateway_reservations "
            "WHERE scope = ? AND subject_id = ? AND window_start = ? AND id <> ?), 0)",
            (*who, hold.window_start, *who, hold.window_start, reservation_id),
        ).fetchone()
        if int(spent) + int(held) + wanted > to_pusd(hold.budget_usd):
            raise ReservationRefused(HoldRefused(hold, from_pusd(int(spent)), from_pusd(int(held))))
        conn.execute(
            "INSERT INTO gateway_reservations (id, scope, subject_id, window_start, amount_pusd, created_at, "
            "expires_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id, scope, subject_id) DO UPDATE SET "
            "window_start = excluded.window_start, amount_pusd = excluded.amount_pusd, "
            "expires_at = excluded.expires_at",
            (reservation_id, *who, hold.window_start, wanted, now_us, expires_us),
        )

    def settle(self, reservation_id: str, holds: list[BudgetHold], cost: Decimal, *,
               keep: bool) -> dict[tuple[str, str], Decimal]:
        charged = to_pusd(cost)
        totals: dict[tuple[str, str], Decimal] = {}
        with self._lock, write_transaction(self._conn, self.path):
            for hold in sorted(holds, key=hold_order) if charged else ():
                row = self._conn.execute(
                    "INSERT INTO gateway_spend (scope, subject_id, window_start, spent_pusd) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (scope, subject_id, window_start) DO UPDATE SET "
                    "spent_pusd = spent_pusd + excluded.spent_pusd RETURNING spent_pusd",
                    (hold.scope, hold.subject_id, hold.window_start, charged),
                ).fetchone()
                totals[(hold.scope, hold.subject_id)] = from_pusd(int(row[0]))
            if keep:
                self._conn.execute("UPDATE gateway_reservations SET amount_pusd = MAX(amount_pusd - ?, 0) WHERE id = ?",
                                   (charged, reservation_id))
            else:
                self._conn.execute("DELETE FROM gateway_reservations WHERE id = ?", (reservation_id,))
        return totals

    def reserved(self, scope: Scope, subject_id: str, window_start: int, now_us: int) -> Decimal:
        rows = self._rows(
            "SELECT COALESCE(SUM(amount_pusd), 0) FROM gateway_reservations "
            "WHERE scope = ? AND subject_id = ? AND window_start = ? AND expires_at > ?",
            (scope, subject_id, window_start, now_us),
        )
        return from_pusd(int(rows[0][0]))


def open_gateway_key_store(location: Path | str | SharedDatabase | None = None) -> GatewayKeyStore:
    """The key store on the configured backend: a postgresql:// URL, else the SQLite file; on a
    runtime's `SharedDatabase`, a view on its pool (PostgreSQL) or its file (SQLite)."""
    from metis_core.store.backend import SharedDatabase, database_location, is_postgres_url

    if isinstance(location, SharedDatabase):
        if location.backend == "postgres":
            from metis_core.store.postgres.gateway_keys import PostgresGatewayKeyStore

            return PostgresGatewayKeyStore(location)
        location = location.location
    where = database_location(location)
    if is_postgres_url(where):
        from metis_core.store.postgres.gateway_keys import PostgresGatewayKeyStore

        return PostgresGatewayKeyStore(str(where))
    return SqliteGatewayKeyStore(where)
