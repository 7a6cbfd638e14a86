"""`UserStore`: the user registry behind the gateway's pseudonymous `usr_<ulid>` ids, on SQLite or
PostgreSQL. A name and an e-mail are kept here and nowhere else (the record carries the id only);
forgetting a user clears them for good and stamps `forgotten_at` (docs/users.md).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any

from metis_core.errors import UserNotFoundError
from metis_core.store.backend import Location, SharedDatabase, open_backend
from metis_core.store.records import from_us, now_us

_COLUMNS = "id, name, email, team_id, created_at, disabled_at, forgotten_at"


def _iso(at: datetime | None) -> str | None:
    return at.isoformat() if at else None


@dataclass(frozen=True, slots=True)
class UserRecord:
    id: str
    name: str | None
    email: str | None
    team_id: str | None
    created_at: datetime
    disabled_at: datetime | None
    forgotten_at: datetime | None

    @property
    def status(self) -> str:
        return "forgotten" if self.forgotten_at else "disabled" if self.disabled_at else "active"

    def as_json(self) -> dict[str, object]:
        return {"id": self.id, "name": self.name, "email": self.email, "team_id": self.team_id,
                "status": self.status, "created_at": _iso(self.created_at),
                "disabled_at": _iso(self.disabled_at), "forgotten_at": _iso(self.forgotten_at)}


def _record(row: tuple[Any, ...]) -> UserRecord:
    user_id, name, email, team_id, created, disabled, forgotten = row
    return UserRecord(str(user_id), name, email, team_id, from_us(int(created)),
                      from_us(int(disabled)) if disabled is not None else None,
                      from_us(int(forgotten)) if forgotten is not None else None)


class UserStore:
    """Users: create, list, disable, forget. Safe to share between threads; one connection."""

    def __init__(self, location: Location | SharedDatabase | None = None) -> None:
        self._db = open_backend(location)
        self._lock = threading.RLock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> UserStore:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def create(self, user_id: str, *, name: str | None, email: str | None, team_id: str | None) -> UserRecord:
        with self._lock, self._db.transaction():
            self._db.execute(f"INSERT INTO users ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, NULL, NULL)",
                             (user_id, name, email, team_id, now_us()))
        return self.get(user_id)

    def find(self, user_id: str) -> UserRecord | None:
        with self._lock, self._db.errors():
            row = self._db.execute(f"SELECT {_COLUMNS} FROM users WHERE id = ?", (user_id,)).fetchone()
        return _record(row) if row is not None else None

    def get(self, user_id: str) -> UserRecord:
        found = self.find(user_id)
        if found is None:
            raise UserNotFoundError(f"no user {user_id} in the registry; `metis users list` shows them")
        return found

    def list(self, *, include_forgotten: bool = True) -> list[UserRecord]:
        where = "" if include_forgotten else " WHERE forgotten_at IS NULL"
        with self._lock, self._db.errors():
            rows = self._db.execute(f"SELECT {_COLUMNS} FROM users{where} ORDER BY created_at, id").fetchall()
        return [_record(row) for row in rows]

    def disable(self, user_id: str) -> UserRecord:
        with self._lock, self._db.transaction():
            self._db.execute("UPDATE users SET disabled_at = ? WHERE id = ? AND disabled_at IS NULL",
                             (now_us(), user_id))
        return self.get(user_id)

    def forget(self, user_id: str) -> None:
        """Clear the name and e-mail for good, keep the id (the record's audit facts name it)."""
        stamp = now_us()
        with self._lock, self._db.transaction():
            updated = self._db.execute(
                "UPDATE users SET name = NULL, email = NULL, forgotten_at = ?, "
                "disabled_at = COALESCE(disabled_at, ?) WHERE id = ?", (stamp, stamp, user_id)).rowcount
            if not updated:  # known only from its keys: remember that it was forgotten
                self._db.execute(f"INSERT INTO users ({_COLUMNS}) VALUES (?, NULL, NULL, NULL, ?, ?, ?)",
                                 (user_id, stamp, stamp, stamp))
