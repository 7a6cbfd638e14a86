"""The SQLite migrations, under their historical import path (see `store/sqlite/migrations.py`).

PostgreSQL has its own numbered steps in `store/postgres/migrations.py`; both reach the same
SCHEMA_VERSION with the same step names.
"""

from metis_core.store.sqlite.migrations import (
    MIGRATIONS,
    SCHEMA_VERSION,
    check_is_metis_database,
    migrate,
    user_version,
)

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "check_is_metis_database", "migrate", "user_version"]
