"""What normalization changed in a schema, and the once-per-tool WARN line for each lossy change.

A `SchemaChange` is lossy when the normalized schema accepts a different set of inputs than the
original. Like the adapters' lossy projections (adapters/_common/lossy.py), each is logged once per
process, here per (tool, path, keyword, action), on the `metis_core.messages.schema` logger.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from threading import Lock
from typing import Any

log = logging.getLogger("metis_core.messages.schema")


@dataclass(frozen=True, slots=True)
class SchemaChange:
    """One rewrite normalization made: where, of which keyword, what was done, and whether it is lossy.

    `lossy` means the normalized schema accepts a different set of inputs than the original."""

    path: str
    keyword: str
    action: str
    lossy: bool = False

    def __str__(self) -> str:
        return f"{self.path}: {self.keyword}: {self.action}{' (lossy)' if self.lossy else ''}"


@dataclass(frozen=True, slots=True)
class NormalizedSchema:
    schema: dict[str, Any]
    changes: tuple[SchemaChange, ...]

    @property
    def lossy_changes(self) -> tuple[SchemaChange, ...]:
        return tuple(change for change in self.changes if change.lossy)


_SEEN_LIMIT = 50_000
_logged: OrderedDict[tuple[str, str, str, str], None] = OrderedDict()
_logged_lock = Lock()


def log_lossy_changes(name: str, changes: tuple[SchemaChange, ...] | list[SchemaChange]) -> None:
    """One WARN line per lossy change, once per (tool, path, keyword, action) per process."""
    for change in changes:
        if not change.lossy:
            continue
        key = (name, change.path, change.keyword, change.action)
        with _logged_lock:
            if key in _logged:
                continue
            _logged[key] = None
            if len(_logged) > _SEEN_LIMIT:
                _logged.popitem(last=False)
        log.warning("tool %r: schema normalization at %s changed %s: %s", name, change.path, change.keyword,
                    change.action, extra={"tool": name, "path": change.path, "keyword": change.keyword,
                                          "action": change.action})


def forget_logged_changes() -> None:
    """Clear the once-per-process memory (tests use this to observe logging again)."""
    with _logged_lock:
        _logged.clear()
