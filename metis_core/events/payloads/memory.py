"""Payloads of the memory domain (spec §6.7): the agent changed MEMORY.md / USER.md, entries
were evicted to respect the size cap, or a conversation's context was compacted.

Hashes, sizes and counts only; the memory snapshotter (a batch subscriber) reads the files for diffs.
"""

from __future__ import annotations

from typing import Literal

from metis_core.events.envelope import Actor, Sensitivity
from metis_core.events.event_spec import EventSpec
from metis_core.events.payloads.fields import MemoryFile, NonNegativeFloat, NonNegativeInt, PayloadModel


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


class MemoryCompactedPayload(PayloadModel):
    """What the model is sent was made smaller (docs/context.md); the stored messages are unchanged."""

    method: Literal["trim_tool_results", "summary", "provider"]
    """Old tool results cut short (no model call), older turns summarised by a model, or the provider
    compacted the conversation itself (its cost is inside that call's usage: `pricing_version` in_call)."""
    trigger: Literal["threshold", "manual", "model_swap"]
    model: str | None
    """The summarising model (None for a trim)."""
    window_tokens: NonNegativeInt
    """The context window of the model the request goes to."""
    tokens_before: NonNegativeInt
    tokens_after: NonNegativeInt
    messages_summarised: NonNegativeInt
    messages_kept: NonNegativeInt
    tool_results_trimmed: NonNegativeInt
    compaction_message_id: str | None
    """The stored message holding the compaction block (None for a trim: nothing is stored)."""
    cost_usd: NonNegativeFloat
    pricing_version: str


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
    EventSpec(
        "memory.compacted",
        MemoryCompactedPayload,
        Sensitivity.PSEUDONYMOUS,
        (Actor.AGENT, Actor.USER),
        ("turn.started", "llm.call_completed"),
        phase="2",
    ),
)
