"""Memoizes what a request derives from one canonical message, per message object and mapping context.

A conversation re-sends its whole history every turn and its messages are frozen values, so what
a call derives from a message (its survey summary, its wire form for a target) is kept per message
object — held, so a recycled id cannot alias — in a table per context (target, model, the options
the mapping reads). What stays mutable inside a frozen message (the content list, nested lists,
dicts such as tool `input`, `payload` and `provider_raw`, the metadata) is compared on every hit
with what it was when the entry was made; any difference and the message is mapped afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from copy import deepcopy
from operator import is_
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from metis_core.adapters._common.lossy import DroppedBlock, record_drops_again
from metis_core.adapters._common.tool_ids import RequestToolIds
from metis_core.messages import Message

T = TypeVar("T")
LIMIT = 8_192
"""Entries per context; a full table starts over (like PerToolCache)."""
CONTEXT_LIMIT = 64
"""Contexts held at once (targets x models x sessions); past it every table starts over."""


class _Entry(Generic[T]):
    """A derived value, with what the message's mutable parts held when it was derived."""

    __slots__ = ("blocks", "dicts", "extra", "lists", "message", "meta", "metadata", "snapshots", "value")

    def __init__(self, message: Message, value: T) -> None:
        self.message = message  # held: its id cannot be reused while the entry lives
        self.value = value
        self.blocks = tuple(message.content)
        lists: list[tuple[list[Any], tuple[Any, ...]]] = []
        dicts: list[dict[str, Any]] = []
        for block in self.blocks:
            _watch(block, lists, dicts)
        self.lists = tuple(lists)
        self.dicts = dicts
        self.snapshots = deepcopy(dicts)
        self.metadata = metadata = message.metadata
        self.meta = {key: deepcopy(v) if type(v) in (dict, list) else v for key, v in metadata.__dict__.items()}
        self.extra = deepcopy(metadata.__pydantic_extra__)

    def holds(self, message: Message) -> bool:
        """Whether `message` is the object this entry was made for, with nothing inside it changed."""
        if self.message is not message:
            return False
        content, blocks = message.content, self.blocks
        if len(content) != len(blocks) or not all(map(is_, content, blocks)):
            return False
        for items, held in self.lists:
            if len(items) != len(held) or not all(map(is_, items, held)):
                return False
        metadata = self.metadata
        return (
            self.dicts == self.snapshots
            and metadata.__dict__ == self.meta
            and metadata.__pydantic_extra__ == self.extra
        )


def _watch(value: BaseModel, lists: list[tuple[list[Any], tuple[Any, ...]]], dicts: list[dict[str, Any]]) -> None:
    """Collects the mutable containers inside a (frozen) block: lists by their items, dicts by value."""
    for field in value.__dict__.values():
        kind = type(field)
        if kind is dict:
            dicts.append(field)
        elif kind is list:
            lists.append((field, tuple(field)))
            for item in field:
                if isinstance(item, BaseModel):
                    _watch(item, lists, dicts)
                elif type(item) in (dict, list):
                    dicts.append({"": item})  # compared by value through a holder dict
        elif isinstance(field, BaseModel):
            _watch(field, lists, dicts)


class MemoTable(Generic[T]):
    """One context's entries. A message seen once is only held; its value is kept from the second
    sight on, so a request made of fresh messages (a gateway request) pays no snapshot."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, _Entry[T] | Message] = {}

    def get(self, message: Message) -> T | None:
        entry = self._entries.get(id(message))
        if type(entry) is _Entry and entry.holds(message):
            return entry.value  # type: ignore[no-any-return]
        return None

    def put(self, message: Message, value: T) -> None:
        entries = self._entries
        key = id(message)
        if key not in entries:  # a held message or entry keeps its id from being reused by another
            if len(entries) >= LIMIT:
                entries.clear()
            entries[key] = message  # first sight: held, not yet worth a snapshot
            return
        try:
            entries[key] = _Entry(message, value)
        except Exception:  # something inside that deepcopy cannot copy: mapped afresh every time
            entries.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)


class MessageMemo(Generic[T]):
    """The tables of one kind of derived value, by context (any hashable key the derivation reads)."""

    __slots__ = ("_tables",)

    def __init__(self) -> None:
        self._tables: dict[Hashable, MemoTable[T]] = {}

    def table(self, context: Hashable) -> MemoTable[T]:
        table = self._tables.get(context)
        if table is None:
            if len(self._tables) >= CONTEXT_LIMIT:
                self._tables.clear()
            table = self._tables[context] = MemoTable()
        return table

    def clear(self) -> None:
        self._tables.clear()


Mapped = tuple[T, tuple[tuple[str, str], ...], tuple[DroppedBlock, ...]]
"""A message's wire form, with the (canonical, sent) tool ids and the lossy drops its mapping made."""


def mapped(
    table: MemoTable[Mapped[T]],
    message: Message,
    wire_id: RequestToolIds,
    dropped: list[DroppedBlock],
    derive: Callable[[Message], T],
) -> T:
    """`derive(message)`, or what it gave for this very message before: only while every tool id it used
    still goes out the same (the request's id map decides) and with its drops recorded again."""
    held = table.get(message)
    if held is not None and wire_id.all_same(held[1]):
        if held[2]:
            record_drops_again(dropped, held[2])
        return held[0]
    wire_id.used = used = []
    before = len(dropped)
    try:
        value = derive(message)
    finally:
        wire_id.used = None
    table.put(message, (value, tuple(used), tuple(dropped[before:])))
    return value
