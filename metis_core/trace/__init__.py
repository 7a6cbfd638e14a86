"""The persisted trace: every bus event in the `events` table of METIS_HOME/metis.db.

`TraceStore` writes events (as a fast-path bus subscriber or directly) and answers replay and
queries; `gaps` finds events emitted but never stored; `retention` prunes old non-audit events;
`backup` snapshots and restores the database file; `audit` exports the audit-flagged events.
"""

from metis_core.trace.audit import CSV_COLUMNS, audit_records, export_audit
from metis_core.trace.backup import BackupResult, backup, restore
from metis_core.trace.gaps import Gap
from metis_core.trace.retention import DEFAULT_RETENTION_DAYS, PurgeResult
from metis_core.trace.store import TraceStore

__all__ = [
    "CSV_COLUMNS",
    "DEFAULT_RETENTION_DAYS",
    "BackupResult",
    "Gap",
    "PurgeResult",
    "TraceStore",
    "audit_records",
    "backup",
    "export_audit",
    "restore",
]
