"""Causal chains (spec §4.3): walk an event's parent pointers back to the root, and arrange a set
of events into the tree their parent pointers describe, for trace display.

Works over anything that can look an event up by id (an in-memory list, the trace store); it
never queries storage itself. A missing link is an error when walking, a flag when building.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from metis_core.errors import BrokenCausalChainError
from metis_core.events.envelope import Event

EventLookup = Callable[[str], Event | None]


def walk_to_root(event_id: str, lookup: EventLookup) -> list[Event]:
    """The event and its ancestors, nearest first, ending at an event with no parent.

    Raises BrokenCausalChainError if the event or any ancestor cannot be found (the partial chain
    is on the error as `walked`), or if the parent pointers loop.
    """
    chain: list[Event] = []
    seen: set[str] = set()
    next_id: str | None = event_id
    while next_id is not None:
        if next_id in seen:
            raise BrokenCausalChainError(
                f"causal chain from {event_id} loops back to {next_id}; the trace is corrupt",
                missing_event_id=next_id,
                walked=chain,
            )
        event = lookup(next_id)
        if event is None:
            where = f"parent of {chain[-1].type} {chain[-1].id}" if chain else "the starting event"
            raise BrokenCausalChainError(
                f"causal chain from {event_id} is broken: event {next_id} ({where}) was not found; "
                "it may not be persisted yet (flush the bus) or was pruned",
                missing_event_id=next_id,
                walked=chain,
            )
        seen.add(next_id)
        chain.append(event)
        next_id = event.parent_event_id
    return chain


@dataclass
class CausalNode:
    event: Event
    children: list[CausalNode] = field(default_factory=list)
    parent_missing: bool = False
    """True when the event names a parent that is not among the events given."""


@dataclass
class CausalTree:
    roots: list[CausalNode]
    missing_parents: dict[str, str]
    """event id -> the parent id it names that was not among the events given."""

    @property
    def complete(self) -> bool:
        return not self.missing_parents

    def walk(self) -> Iterator[tuple[int, CausalNode]]:
        """Depth-first (depth, node) pairs in id order, for indented display."""
        stack = [(0, root) for root in reversed(self.roots)]
        while stack:
            depth, node = stack.pop()
            yield depth, node
            stack.extend((depth + 1, child) for child in reversed(node.children))


def build_tree(events: Iterable[Event]) -> CausalTree:
    """Arrange events by parent pointer. Events whose parent is absent become flagged roots;
    siblings are ordered by id (creation order)."""
    ordered = sorted(events, key=lambda e: e.id)
    nodes = {event.id: CausalNode(event) for event in ordered}
    roots: list[CausalNode] = []
    missing: dict[str, str] = {}
    for event in ordered:
        node = nodes[event.id]
        parent_id = event.parent_event_id
        if parent_id is None:
            roots.append(node)
        elif parent_id in nodes and parent_id != event.id:
            nodes[parent_id].children.append(node)
        else:
            node.parent_missing = True
            missing[event.id] = parent_id
            roots.append(node)
    return CausalTree(roots=roots, missing_parents=missing)
