"""Persistence of sessions and messages in one SQLite file, METIS_HOME/metis.db.

`SessionStore` reads and writes sessions; `db` opens connections and names SQLite failures;
`migrations` brings any earlier file up to the current schema. The trace (events) lives in the
same file but is written by `metis_core.trace`.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from metis_core.store.db import default_db_path, metis_home, open_database
    from metis_core.store.migrations import SCHEMA_VERSION
    from metis_core.store.records import SessionRecord, SessionTotals, ToolCallRecord, ToolCallStatus
    from metis_core.store.sessions import UNSET, SessionStore

_HOMES = {
    "default_db_path": "db", "metis_home": "db", "open_database": "db", "SCHEMA_VERSION": "migrations",
    "SessionRecord": "records", "SessionTotals": "records", "ToolCallRecord": "records",
    "ToolCallStatus": "records", "UNSET": "sessions", "SessionStore": "sessions",
}  # fmt: skip
"""Where each name lives. Loaded on first use: a command that opens only the key store
(`metis gateway keys list`) does not pay for the session store and the message model."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{home}"), name)


__all__ = [
    "SCHEMA_VERSION",
    "UNSET",
    "SessionRecord",
    "SessionStore",
    "SessionTotals",
    "ToolCallRecord",
    "ToolCallStatus",
    "default_db_path",
    "metis_home",
    "open_database",
]
