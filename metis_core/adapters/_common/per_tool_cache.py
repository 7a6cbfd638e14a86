"""Memoizes a value derived from a ToolDefinition, per definition object.

The same tools go with every call of a session, so work derived from them (a size estimate, a
provider's schema dialect) is done once. Keys are object identities, checked against the held
object so a recycled id can never return another tool's value. Values are shared, like the
definition's own `input_schema` that request bodies already reference: treat them as read-only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from metis_core.messages import ToolDefinition


T = TypeVar("T")
LIMIT = 4_096


class PerToolCache(Generic[T]):
    def __init__(self, compute: Callable[[ToolDefinition], T]) -> None:
        self._compute = compute
        self._entries: dict[int, tuple[ToolDefinition, T]] = {}

    def __call__(self, tool: ToolDefinition) -> T:
        entry = self._entries.get(id(tool))
        if entry is not None and entry[0] is tool:
            return entry[1]
        value = self._compute(tool)
        if len(self._entries) >= LIMIT:
            self._entries.clear()
        self._entries[id(tool)] = (tool, value)  # holding the tool keeps its id from being reused
        return value
