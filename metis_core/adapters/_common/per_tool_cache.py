"""Memoizes values derived from ToolDefinitions: per definition object, and per list of them.

The same tools go with every call of a session, so work derived from them (a provider's schema
dialect, a request's wire tool list and its JSON) is done once. Keys are object identities, checked
against the held objects so a recycled id can never return another tool's value. Values are shared,
like the definition's own `input_schema` that request bodies already reference: treat them as
read-only. A value is derived afresh when anything in its definition (or list of them) changed,
compared with a copy as history_memo.py does for messages; as there, a definition (or list) is
copied from its second sight, so one-off requests (the gateway's) copy nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from copy import deepcopy
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from metis_core.adapters._common.encoded_body import items_json

if TYPE_CHECKING:
    from metis_core.messages import ToolDefinition


T = TypeVar("T")
LIMIT = 4_096
LIST_LIMIT = 256
"""Tool lists held per mapping; a full table starts over."""


class PerToolCache(Generic[T]):
    """A value per definition object, derived afresh when a field of it (a schema changed in place) differs
    from the copy taken with the value."""

    def __init__(self, compute: Callable[[ToolDefinition], T]) -> None:
        self._compute = compute
        self._entries: dict[int, tuple[ToolDefinition, dict[str, Any] | None, T]] = {}
        """By the tool's id: the tool (held: its id is not reused), a copy of its fields (None: seen once,
        not copied), the value derived from it."""

    def __call__(self, tool: ToolDefinition) -> T:
        entry = self._entries.get(id(tool))
        if entry is not None and entry[0] is tool and entry[1] == tool.__dict__:  # a copy None never equals
            return entry[2]
        seen = entry is not None and entry[0] is tool
        value = self._compute(tool)
        fields = None
        if seen:  # seen before: copied now, so the next sight can check it
            try:
                fields = deepcopy(tool.__dict__)
            except Exception:  # something in a schema deepcopy cannot copy: derived afresh each time
                self._entries.pop(id(tool), None)
                return value
        if len(self._entries) >= LIMIT:
            self._entries.clear()
        self._entries[id(tool)] = (tool, fields, value)
        return value


class _WireTools:
    """A tool list (held), its wire definitions and their JSON, and a copy of each definition's fields (None:
    seen once, not copied)."""

    __slots__ = ("json", "snapshot", "tools", "wire")

    def __init__(self, tools: list[ToolDefinition], wire: list[dict[str, Any]],
                 snapshot: list[dict[str, Any]] | None) -> None:
        self.tools = tools
        self.wire = wire
        self.json = items_json(wire)
        self.snapshot = snapshot


class WireToolsMemo:
    """A request mapping's wire tool list and its JSON (comma-separated, no brackets), per list of tool
    objects: mapped once and held while the same definitions come again unchanged."""

    __slots__ = ("_held", "_wire_tool")

    def __init__(self, wire_tool: Callable[[ToolDefinition], dict[str, Any]]) -> None:
        self._wire_tool = wire_tool
        self._held: dict[int, _WireTools] = {}

    def __call__(self, tools: list[ToolDefinition]) -> tuple[list[dict[str, Any]], bytes]:
        """(the wire definitions, their JSON) of a non-empty tool list; the list is the caller's own."""
        key = id(tools[0])
        held = self._held.get(key)
        if held is not None and held.tools == tools and held.snapshot == [tool.__dict__ for tool in tools]:
            return list(held.wire), held.json  # (a snapshot None never equals)
        seen = held is not None and held.tools == tools
        wire = [self._wire_tool(tool) for tool in tools]
        snapshot = None
        if seen:  # seen before: copied now, so the next sight can check it
            try:
                snapshot = deepcopy([tool.__dict__ for tool in tools])
            except Exception:  # something in a schema deepcopy cannot copy: mapped afresh each time
                self._held.pop(key, None)
                return wire, items_json(wire)
        if len(self._held) >= LIST_LIMIT:
            self._held.clear()
        entry = self._held[key] = _WireTools(list(tools), wire, snapshot)  # held: the ids are not reused
        return list(wire), entry.json
