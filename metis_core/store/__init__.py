"""Persistence of sessions and messages in one SQLite file, METIS_HOME/metis.db.

`SessionStore` reads and writes sessions; `db` opens connections and names SQLite failures;
`migrations` brings any earlier file up to the current schema. The trace (events) lives in the
same file but is written by `metis_core.trace`.
"""

from metis_core.store.db import default_db_path, metis_home, open_database
from metis_core.store.migrations import SCHEMA_VERSION
from metis_core.store.records import SessionRecord, SessionTotals, ToolCallRecord, ToolCallStatus
from metis_core.store.sessions import UNSET, SessionStore

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
