"""The hash chain of an event log v0.2 export: sealing entries, and verifying a log line by line.

`payload_hash` is SHA-256 of the payload's RFC 8785 bytes (SCHEMA.md v0.2). `entry_hash` is the
same over the envelope (payload_hash in, payload and entry_hash out), and `prev_hash` repeats the
previous `entry_hash` (64 zeros for the first), so an edited, dropped, inserted or reordered entry
breaks the chain where it happened. Cutting entries off the end is only visible against a head
hash kept elsewhere (ExportSummary.head_hash). Verification also holds every payload to its type's
SCHEMA.md schema. No format mapping here; see event_log_v02.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson
from jsonschema import Draft202012Validator, FormatChecker

from metis_core.export.event_log_schemas import ENTRY_SCHEMA, PAYLOAD_SCHEMAS
from metis_core.hashing import json_hash

SPEC_VERSION = "0.2"
GENESIS_HASH = "0" * 64
ENTRY_FIELDS = frozenset(ENTRY_SCHEMA["required"])


@dataclass(frozen=True)
class EntryDraft:
    """One log entry before it has a place in the chain."""

    event_type: str
    payload: dict[str, Any]
    event_id: str
    timestamp: str
    source_event_id: str | None
    turn_id: str | None


def entry_hash(entry: dict[str, Any]) -> str:
    """Over every envelope field but itself and the payload, which payload_hash already binds."""
    return json_hash({key: value for key, value in entry.items() if key not in ("entry_hash", "payload")})


def seal(drafts: Iterable[EntryDraft], session_id: str) -> list[dict[str, Any]]:
    """Number the drafts from 0 and chain them."""
    entries: list[dict[str, Any]] = []
    previous = GENESIS_HASH
    for sequence, draft in enumerate(drafts):
        entry: dict[str, Any] = {
            "spec_version": SPEC_VERSION, "event_id": draft.event_id, "session_id": session_id,
            "sequence": sequence, "timestamp": draft.timestamp, "event_type": draft.event_type,
            "source_event_id": draft.source_event_id, "turn_id": draft.turn_id, "payload": draft.payload,
            "payload_hash": json_hash(draft.payload), "prev_hash": previous,
        }
        entry["entry_hash"] = previous = entry_hash(entry)
        entries.append(entry)
    return entries


@dataclass(frozen=True)
class ChainBreak:
    line: int
    """1-based line number in the input (blank lines count)."""
    sequence: int | None
    reason: str


@dataclass(frozen=True)
class EventLogVerification:
    entries: int
    """Entries checked before the first break (all of them when the log is intact)."""
    head_hash: str | None
    """The last intact entry's entry_hash; compare with the one recorded at export time."""
    first_break: ChainBreak | None

    @property
    def ok(self) -> bool:
        return self.first_break is None


@functools.cache
def _validator(schema_key: str) -> Draft202012Validator:
    schema = ENTRY_SCHEMA if schema_key == "" else PAYLOAD_SCHEMAS[schema_key]
    return Draft202012Validator(schema, format_checker=FormatChecker())


def _schema_problem(entry: dict[str, Any]) -> str | None:
    """The first schema violation of the envelope, then of the payload, in words."""
    for key, document, what in (("", entry, "the envelope"), (str(entry["event_type"]), entry["payload"], None)):
        if key and key not in PAYLOAD_SCHEMAS:
            return None  # the envelope check already refused an unknown event_type
        error = next(iter(sorted(_validator(key).iter_errors(document), key=lambda e: list(e.path))), None)
        if error is not None:
            where = "/".join(str(part) for part in error.path) or "(top)"
            return f"{what or 'the ' + key + ' payload'} breaks SCHEMA.md v0.2 at {where}: {error.message}"
    return None


def _problem(entry: Any, expected_sequence: int, previous: str) -> str | None:
    if not isinstance(entry, dict):
        return "the line is not a JSON object"
    missing, unexpected = ENTRY_FIELDS - entry.keys(), entry.keys() - ENTRY_FIELDS
    if missing or unexpected:
        return f"not a v0.2 envelope (missing {sorted(missing)}, unexpected {sorted(unexpected)})"
    sequence = entry["sequence"]
    if isinstance(sequence, bool) or sequence != expected_sequence:
        return (f"sequence {sequence!r} where {expected_sequence} was expected "
                "(an entry was removed, inserted or reordered)")
    try:
        if entry["payload_hash"] != json_hash(entry["payload"]):
            return "payload_hash does not match the payload (the payload was altered)"
        if entry["prev_hash"] != previous:
            return "prev_hash does not match the previous entry's entry_hash (the chain is broken here)"
        if entry["entry_hash"] != entry_hash(entry):
            return "entry_hash does not match the entry (an envelope field was altered)"
    except (TypeError, ValueError) as error:  # rfc8785 refuses values JSON cannot carry exactly
        return f"the entry cannot be canonicalised for hashing: {error}"
    return _schema_problem(entry)


def verify_event_log(lines: Iterable[str | bytes]) -> EventLogVerification:
    """Recompute every payload and entry hash and the chain; report the first broken link.

    `lines` are the log's lines (an open file, or the content split on newlines); blank lines
    are ignored. Verification stops at the first break: what follows cannot be trusted either.
    """
    previous, expected, head = GENESIS_HASH, 0, None
    for number, line in enumerate(lines, start=1):
        raw = line.encode("utf-8", "surrogateescape") if isinstance(line, str) else line
        if not raw.strip():
            continue
        try:
            entry = orjson.loads(raw)
        except orjson.JSONDecodeError as error:
            return EventLogVerification(expected, head, ChainBreak(number, None, f"not valid JSON: {error}"))
        problem = _problem(entry, expected, previous)
        if problem is not None:
            sequence = entry.get("sequence") if isinstance(entry, dict) else None
            return EventLogVerification(expected, head, ChainBreak(
                number, sequence if isinstance(sequence, int) else None, problem))
        previous = head = entry["entry_hash"]
        expected += 1
    return EventLogVerification(expected, head, None)
