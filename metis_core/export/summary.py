"""What an export did: how many events it carried over, how many it skipped and why, what it wrote.

Every event read is either exported (it contributed to at least one output document) or skipped
(counted under its type), so `exported + skipped_total == events_read` always holds.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class ExportSummary:
    format: str
    session_id: str
    events_read: int = 0
    exported: int = 0
    """Events that contributed to at least one output document."""
    documents: int = 0
    """Units written: spans (otel), run event documents (openwop), log entries (eventlog)."""
    skipped: Counter[str] = field(default_factory=Counter)
    """Event type -> how many events of that type had no counterpart in the format."""
    path: str | None = None
    head_hash: str | None = None
    """Event log only: the last entry's hash, to anchor the chain out of band."""

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    def skip(self, event_type: str) -> None:
        self.skipped[event_type] += 1
