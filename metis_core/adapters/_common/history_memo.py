"""Memoizes the state a derivation reached at the end of a history (survey sums, wire messages), per
context (target, model, options it reads), for the next request whose history starts with the same
message objects. The mutable parts inside those frozen messages are compared with copies once per
request (the survey's check serves the mapping); a change a derivation reads and it derives the
history afresh. It does no sequence work itself.
The wire dicts a kept state holds go into the next request's body as they are: a built body is
read-only (copy a nested part before changing it).
"""

from __future__ import annotations

from collections.abc import Hashable
from copy import deepcopy
from operator import is_, itemgetter
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
WATCHED_METADATA: Final = ("status", *READ_METADATA)
"""Every metadata field a derivation held here may read (the survey reads `status`); a watch copies them all."""
CONTENT: Final = "content"
"""In a watch's changes: a content list, or a list or dict inside a block, is not what was copied."""
_NOTHING: Final[frozenset[str]] = frozenset()
_read_watched: Final = itemgetter(*WATCHED_METADATA)


class _Watch:
    """What the mutable parts of a run of messages (held) held when it was derived: one snapshot every table
    deriving from the same messages shares, and the changes the survey found at its last check, with the
    history list that check was made for (the list it hands on: the mapping of that request takes the verdict).

    `live` holds the content lists and every list and dict inside the blocks; `snapshot` their copies (lists
    by their items, which compare by identity first, then by value: an item replaced by an equal value derives
    the same, and each held item's containers are in the snapshot too, so its value cannot drift under the
    comparison). `metadata` holds the metadata field dicts, `values` copies of the watched fields' values."""

    __slots__ = ("checked_for", "live", "messages", "metadata", "snapshot", "values", "verdict")
    messages: list[Message]
    live: list[Any]
    snapshot: list[Any]
    metadata: list[dict[str, Any]]
    values: list[Any]

    def __init__(self, messages: list[Message], prior: _Watch | None) -> None:
        """Copies the mutable parts of `messages`, extending `prior`'s when it watches a prefix of them."""
        if prior is not None:
            start = len(prior.messages)
            live, frozen = list(prior.live), list(prior.snapshot)
            metadata, values = list(prior.metadata), list(prior.values)
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
            values.append(deepcopy(_read_watched(field_dict)))
        self.messages = list(messages)
        self.live, self.snapshot, self.metadata, self.values = live, frozen, metadata, values
        self.checked_for: object = None
        self.verdict = _NOTHING

    def changes(self, checked_as: object, record: bool) -> frozenset[str]:
        """The watched fields (and CONTENT) that differ from the copies now, found once per request: a check
        recorded for the same history list (`checked_as`, the list the client surveyed) is taken as it is.
        Only the survey records its check (`record`), for the list it made itself and hands on; the mapping
        takes it once (that list handed in again, maybe changed inside since, is checked again)."""
        if checked_as is not None and self.checked_for is checked_as:
            if not record:
                self.checked_for = None
            return self.verdict
        current = list(map(_read_watched, self.metadata))
        if self.live == self.snapshot and current == self.values:
            verdict = _NOTHING
        else:  # which of them: a table whose fields are all the same keeps its state
            changed = {field for index, field in enumerate(WATCHED_METADATA)
                       if [now[index] for now in current] != [then[index] for then in self.values]}
            if self.live != self.snapshot:
                changed.add(CONTENT)
            verdict = frozenset(changed)
        if record:
            self.checked_for, self.verdict = checked_as, verdict
        return verdict


class _History(Generic[S]):
    """A history's messages (held), the state derived at its end, and the watch on its mutable parts.
    A history seen once holds only its first message (one-off requests keep nothing alive); `watch` is None
    until it is seen a second time."""

    __slots__ = ("messages", "state", "watch")

    def __init__(self, messages: list[Message], state: S | None, watch: _Watch | None = None) -> None:
        self.messages = messages
        self.state = state
        self.watch = watch


_watches: dict[int, _Watch] = {}
"""The latest watch of each history, by its first message's id: a table keeping a state for the same messages
in the same request shares it (one check per request serves them all)."""


def _shared_watch(messages: list[Message], prior: _Watch | None, checked_as: object, record: bool) -> _Watch:
    """The watch made in this request for exactly these messages, found unchanged; else a new one."""
    key = id(messages[0])
    watch = _watches.get(key)
    if (watch is not None and checked_as is not None and watch.checked_for is checked_as and not watch.verdict
            and len(watch.messages) == len(messages) and all(map(is_, watch.messages, messages))):
        if not record:
            watch.checked_for = None  # taken once, as in `_Watch.changes`
        return watch
    watch = _Watch(messages, prior)
    if record:
        watch.checked_for = checked_as
    if len(_watches) >= LIMIT * 4:
        _watches.clear()
    _watches[key] = watch
    return watch


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
    """The histories held for one context, by their first message's id; `reads` are the metadata fields (and
    CONTENT) whose change derives a history afresh."""

    __slots__ = ("reads",)

    def __init__(self, read_metadata: tuple[str, ...]) -> None:
        super().__init__()
        unknown = set(read_metadata) - set(WATCHED_METADATA)
        if unknown:
            raise ValueError(f"metadata fields {sorted(unknown)} are not watched: add them to WATCHED_METADATA")
        self.reads = frozenset((*read_metadata, CONTENT))


class HistoryMemo(Generic[S]):
    """One kind of derived state, a table per context (any hashable key the derivation reads), and the
    metadata fields that derivation reads (a change to one of them derives the history afresh)."""

    __slots__ = ("_read_metadata", "_tables")

    def __init__(self, read_metadata: tuple[str, ...] = READ_METADATA) -> None:
        self._tables: dict[Hashable, HistoryTable[S]] = {}
        self._read_metadata = read_metadata

    def table(self, context: Hashable) -> HistoryTable[S]:
        table = self._tables.get(context)
        if table is None:
            if len(self._tables) >= CONTEXT_LIMIT:
                self._tables.clear()
            table = self._tables[context] = HistoryTable(self._read_metadata)
        return table

    def clear(self) -> None:
        self._tables.clear()


def recall(table: HistoryTable[S], messages: list[Message], checked_as: object = None,
           record: bool = False) -> tuple[int, S] | None:
    """(how many messages it covers, the state kept at their end) for the longest history held that
    `messages` starts with, while nothing its table reads inside those messages changed; else None.
    `checked_as`: the history list the caller got, whose check the survey recorded (`record`: this is the
    survey, the list one it made; see `_Watch.changes`)."""
    if not messages:
        return None
    held = table.get(id(messages[0]))
    if held is None or held.watch is None:
        return None
    count = len(held.messages)
    if len(messages) < count or messages[:count] != held.messages:
        return None
    if held.watch.changes(checked_as, record) & table.reads:
        return None
    return count, held.state  # type: ignore[return-value]  # not None once `watch` is


def resumed_wire(table: HistoryTable[Any], messages: list[Message], wire_id: RequestToolIds,
                 dropped: list[DroppedBlock], checked_as: object = None) -> tuple[int, Any]:
    """`recall` for a request builder's wire state, whose last two parts are the tool ids (`UsedIds`)
    it used and the lossy drops it made: (how many messages it covers, the state) while every one of those
    ids still goes out the same (the request's id map decides), its drops recorded again; else (0, None)."""
    resumed = recall(table, messages, checked_as)
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


def keep(table: HistoryTable[S], messages: list[Message], state: S, resumed: int, checked_as: object = None,
         record: bool = False) -> None:
    """Holds `state`, derived at the end of `messages` (resuming after the first `resumed` of them); its watch
    is the one another table made for the same messages in this request (`checked_as`), if there is one."""
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
    if not resumed and held.watch is not None:
        # The held history did not match (changed inside, or another one starting alike): start over
        # from a mark, so a history that never matches (one repaired into new objects every call) is
        # not copied on every request.
        table[key] = _History(messages[:1], None)
        return
    prior = held.watch if resumed and resumed == len(held.messages) else None
    if prior is not None and not all(map(is_, held.messages, messages)):
        # Resumed through an equal copy of a held message: the state's wire dicts share the original's parts and
        # the watch copied the original's, neither the copy's. Start over from a mark, as above.
        table[key] = _History(messages[:1], None)
        return
    if prior is not None and prior.verdict:  # a field this table does not read changed: copy every part afresh
        prior = None
    try:
        watch = _shared_watch(messages, prior, checked_as, record)
    except Exception:  # something inside that deepcopy cannot copy: this history is derived afresh each time
        table.pop(key, None)
        return
    table[key] = _History(watch.messages, state, watch)
