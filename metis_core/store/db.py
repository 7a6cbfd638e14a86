"""Where the database is, and the SQLite helpers older code imports from here.

`database_location()` reads METIS_DATABASE_URL (or `database_url:` in config.yaml) and falls
back to METIS_HOME/metis.db. The SQLite connection code itself lives in `store/sqlite/`.
"""

from __future__ import annotations

from metis_core.store.backend import database_location, is_postgres_url, redact_url
from metis_core.store.sqlite.connection import (
    BUSY_TIMEOUT_SECONDS,
    DB_FILENAME,
    connect,
    default_db_path,
    integrity_check,
    is_read_only_home,
    metis_home,
    open_database,
    sqlite_errors,
    translate_sqlite_error,
    write_transaction,
)

__all__ = [
    "BUSY_TIMEOUT_SECONDS",
    "DB_FILENAME",
    "connect",
    "database_location",
    "default_db_path",
    "integrity_check",
    "is_postgres_url",
    "is_read_only_home",
    "metis_home",
    "open_database",
    "redact_url",
    "sqlite_errors",
    "translate_sqlite_error",
    "write_transaction",
]
