"""Payloads of the memory domain (spec §6.7): the agent changed MEMORY.md / USER.md, or entries
were evicted to respect the size cap.

Hashes and sizes only; the memory snapshotter (a batch subscriber) reads the files for diffs.
"""

from __future__ import annotations

from typing import Literal

from metis_core.events.envelope import Actor, Sensitivity
from metis_core.events.event_spec import EventSpec
from metis_core.events.payloads.fields import MemoryFile, NonNegativeInt, PayloadModel


class MemoryUpdatedPayload(PayloadModel):
    """A memory file was added to, replaced or consolidated."""

    file: MemoryFile
    operation: Literal["add", "replace", "consolidate"]
    before_hash: str
    after_hash: str
    before_size_bytes: NonNegativeInt
    after_size_bytes: NonNegativeInt


class MemoryEvictionPayload(PayloadModel):
    """Entries were removed from a memory file (size cap or manual)."""

    file: MemoryFile
    trigger: Literal["size_cap_exceeded", "manual"]
    entries_evicted: NonNegativeInt
    size_before_bytes: NonNegativeInt
    size_after_bytes: NonNegativeInt


SPECS = (
    EventSpec(
        "memory.updated",
        MemoryUpdatedPayload,
        Sensitivity.PRIVATE,
        (Actor.AGENT,),
        ("llm.call_completed",),
        phase="2",
    ),
    EventSpec(
        "memory.eviction",
        MemoryEvictionPayload,
        Sensitivity.PRIVATE,
        (Actor.SYSTEM,),
        ("memory.updated",),
        phase="2",
        audit=True,
    ),
)
