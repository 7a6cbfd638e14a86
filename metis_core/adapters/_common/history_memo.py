"""Memoizes the state a derivation reached at the end of a history (survey sums, wire messages), per
context (target, model, options it reads), for the next request whose history starts with the same
message objects. The mutable parts inside those frozen messages are compared with copies in one C
compare per request; any change and the history is derived afresh. It does no sequence work itself.
The wire dicts a kept state holds go into the next request's body as they are: a built body is
read-only (copy a nested part before changing it).
"""

from __future__ import annotations

from collections.abc import Hashable
from copy import deepcopy
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

from pydantic import BaseModel

from metis_core.adapters._common.lossy import DroppedBlock, record_drops_again
from metis_core.messages import Message

if TYPE_CHECKING:
    from metis_core.adapters._common.tool_ids import RequestToolIds

S = TypeVar("S")
LIMIT: Final = 256
"""Histories held per context (one per conversation); a full table starts over."""
CONTEXT_LIMIT: Final = 64
"""Contexts held at once (targets x models x sessions); past it every table starts over."""


def _watch(value: BaseModel, live: list[Any]) -> None:
    """Collects the mutable containers inside a (frozen) block, nested ones included."""
    for field in value.__dict__.values():
        kind = type(field)
        if kind is dict:
            live.append(field)
        elif kind is list:
            live.append(field)
            for item in field:
                if isinstance(item, BaseModel):
                    _watch(item, live)
                elif type(item) in (dict, list):
                    live.append(item)
        elif isinstance(field, BaseModel):
            _watch(field, live)


READ_METADATA: Final = ("model", "provider", "provider_raw", "critical_blocks")
"""The metadata fields the request mappings held here read (Chat Completions and Anthropic mappings, lossy
drops): a derivation that reads another must name it, or a change to that field would go unseen. `status` is
read by the repair pass, which runs before the mapping: a history it changes reaches the mapping as other
message objects."""


class _History(Generic[S]):
    """A history's messages (held), the state derived at its end, and what its mutable parts held then.
    A history seen once holds only its first message (one-off requests keep nothing alive).

    `live` holds the content lists and every list and dict inside the blocks; `snapshot` their copies
    (lists by their items, which compare by identity first, then by value: an item replaced by an equal
    value derives the same, and each held item's containers are in the snapshot too, so its value
    cannot drift under the comparison). `metadata` holds the metadata field dicts, `metadata_values` the
    values of the fields its table's derivation reads, compared by value. All None until the history is seen
    a second time."""

    __slots__ = ("live", "messages", "metadata", "metadata_values", "snapshot", "state")

    def __init__(self, messages: list[Message], state: S | None) -> None:
        self.messages = messages
        self.state = state
        self.live: list[Any] | None = None
        self.snapshot: list[Any] | None = None
        self.metadata: list[dict[str, Any]] | None = None
        self.metadata_values: list[tuple[Any, ...]] | None = None

    def unchanged(self, read: itemgetter[Any]) -> bool:
        return bool(self.live == self.snapshot and list(map(read, self.metadata or ())) == self.metadata_values)

    def watch(self, messages: list[Message], prior: _History[S] | None, read: itemgetter[Any]) -> None:
        """Snapshots the mutable parts of `messages`, extending `prior`'s when it is a held prefix."""
        if prior is not None and prior.live is not None:
            start = len(prior.messages)
            live, frozen = list(prior.live), list(prior.snapshot or ())
            metadata, values = list(prior.metadata or ()), list(prior.metadata_values or ())
        else:
            start, live, frozen, metadata, values = 0, [], [], [], []
        for message in messages[start:]:
            parts: list[Any] = [message.content]
            for block in message.content:
                if isinstance(block, BaseModel):
                    _watch(block, parts)
            live.extend(parts)
            frozen.extend(list(part) if type(part) is list else deepcopy(part) for part in parts)
            field_dict = message.metadata.__dict__
            metadata.append(field_dict)
            values.append(deepcopy(read(field_dict)))
        self.live, self.snapshot, self.metadata, self.metadata_values = live, frozen, metadata, values


class Identity:
    """A context part that compares by identity and is held (so its id is not reused): for frozen values
    such as model capabilities, the same object call after call, whose own hash walks every field."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return type(other) is Identity and other.value is self.value


class HistoryTable(dict[int, _History[S]], Generic[S]):
    """The histories held for one context, by their first message's id; `read` gets the metadata field
    values its derivation reads from a message's field dict."""

    __slots__ = ("read",)

    def __init__(self, read: itemgetter[Any]) -> None:
        super().__init__()
        self.read = read


class HistoryMemo(Generic[S]):
    """One kind of derived state, a table per context (any hashable key the derivation reads), and the
    metadata fields that derivation reads (a change to one of them derives the history afresh)."""

    __slots__ = ("_read", "_tables")

    def __init__(self, read_metadata: tuple[str, ...] = READ_METADATA) -> None:
        self._tables: dict[Hashable, HistoryTable[S]] = {}
        self._read = itemgetter(*read_metadata)

    def table(self, context: Hashable) -> HistoryTable[S]:
        table = self._tables.get(context)
        if table is None:
            if len(self._tables) >= CONTEXT_LIMIT:
                self._tables.clear()
            table = self._tables[context] = HistoryTable(self._read)
        return table

    def clear(self) -> None:
        self._tables.clear()


def recall(table: HistoryTable[S], messages: list[Message]) -> tuple[int, S] | None:
    """(how many messages it covers, the state kept at their end) for the longest history held that
    `messages` starts with, while nothing inside those messages changed; else None."""
    if not messages:
        return None
    held = table.get(id(messages[0]))
    if held is None or held.live is None:
        return None
    count = len(held.messages)
    if len(messages) < count or messages[:count] != held.messages or not held.unchanged(table.read):
        return None
    return count, held.state  # type: ignore[return-value]  # not None once `live` is


def resumed_wire(table: HistoryTable[Any], messages: list[Message], wire_id: RequestToolIds,
                 dropped: list[DroppedBlock]) -> tuple[int, Any]:
    """`recall` for a request builder's wire state, whose last two parts are the tool ids (`UsedIds`)
    it used and the lossy drops it made: (how many messages it covers, the state) while every one of those
    ids still goes out the same (the request's id map decides), its drops recorded again; else (0, None)."""
    resumed = recall(table, messages)
    if resumed is None or not wire_id.all_same(resumed[1][-2]):
        return 0, None
    record_drops_again(dropped, resumed[1][-1])
    return resumed


def first_sight(table: HistoryTable[S], messages: list[Message]) -> bool:
    """Whether the table has not met this history before (then its first message is held, nothing more:
    the caller derives it plainly, so a one-off request pays no bookkeeping)."""
    if not messages:
        return True
    key = id(messages[0])
    if key in table:  # a held message keeps its id from being reused by another
        return False
    if len(table) >= LIMIT:
        table.clear()
    table[key] = _History(messages[:1], None)
    return True


def keep(table: HistoryTable[S], messages: list[Message], state: S, resumed: int) -> None:
    """Holds `state`, derived at the end of `messages` (resuming after the first `resumed` of them)."""
    if not messages:
        return
    key = id(messages[0])
    held = table.get(key)
    if held is None:
        if len(table) >= LIMIT:
            table.clear()
        table[key] = _History(messages[:1], None)  # first sight: its first message held, nothing more
        return
    if resumed and resumed == len(messages) and held.state is state:
        return  # the same history again: nothing new to hold
    if not resumed and held.live is not None:
        # The held history did not match (changed inside, or another one starting alike): start over
        # from a mark, so a history that never matches (one repaired into new objects every call) is
        # not copied on every request.
        table[key] = _History(messages[:1], None)
        return
    entry = _History(list(messages), state)
    try:
        entry.watch(messages, held if resumed and resumed == len(held.messages) else None, table.read)
    except Exception:  # something inside that deepcopy cannot copy: this history is derived afresh each time
        table.pop(key, None)
        return
    table[key] = entry
