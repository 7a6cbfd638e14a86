"""Event log hash chain: an exported log verifies; any tampering is reported at the entry it touched."""

from __future__ import annotations

import io

import orjson
import pytest

from metis_core.export import SessionRecording, event_log_entries, export_event_log, verify_event_log
from metis_core.export.event_log_chain import GENESIS_HASH, entry_hash
from metis_core.export.output import jsonl_bytes
from metis_core.hashing import json_hash
from metis_core.store.sessions import SessionStore
from metis_core.trace.store import TraceStore

from .conftest import RecordedSession


@pytest.fixture
def log_lines(recording: SessionRecording) -> list[bytes]:
    entries, _ = event_log_entries(recording)
    return jsonl_bytes(entries).split(b"\n")[:-1]


def test_an_exported_log_verifies_and_its_head_is_the_summary_head_hash(
    recorded: RecordedSession, stores: tuple[SessionStore, TraceStore]
) -> None:
    out = io.BytesIO()
    summary = export_event_log(recorded.session_id, *stores, out)
    lines = out.getvalue().split(b"\n")
    result = verify_event_log(lines)
    assert result.ok and result.first_break is None
    assert result.entries == summary.documents == 31
    assert result.head_hash == summary.head_hash
    first, second = orjson.loads(lines[0]), orjson.loads(lines[1])
    assert first["prev_hash"] == GENESIS_HASH and second["prev_hash"] == first["entry_hash"]
    assert first["payload_hash"] == json_hash(first["payload"])


def test_text_lines_from_an_open_file_verify_too(log_lines: list[bytes]) -> None:
    text = io.StringIO(b"\n".join(log_lines).decode("utf-8") + "\n\n")
    assert verify_event_log(text).ok


def test_flipping_any_single_byte_of_an_entry_is_reported_at_that_entry(log_lines: list[bytes]) -> None:
    target = 3  # a MODEL_RESPONSE: payload strings, numbers, nested objects and all envelope fields
    line = log_lines[target]
    assert b'"MODEL_RESPONSE"' in line
    for offset in range(len(line)):
        tampered = bytearray(line)
        tampered[offset] ^= 0x01
        result = verify_event_log([*log_lines[:target], bytes(tampered), *log_lines[target + 1:]])
        assert not result.ok, f"flip at byte {offset} ({chr(line[offset])!r}) went unnoticed"
        assert result.first_break is not None and result.first_break.line == target + 1
        assert result.entries == target


def test_a_recomputed_payload_hash_still_breaks_the_entry_hash_and_a_rehashed_entry_breaks_the_next(
    log_lines: list[bytes],
) -> None:
    entry = orjson.loads(log_lines[3])
    entry["payload"]["usage"]["completion_tokens"] = 1
    entry["payload_hash"] = json_hash(entry["payload"])
    edited = [*log_lines[:3], orjson.dumps(entry), *log_lines[4:]]
    broken = verify_event_log(edited).first_break
    assert broken is not None and broken.line == 4 and "entry_hash" in broken.reason

    entry["entry_hash"] = entry_hash(entry)
    rehashed = [*log_lines[:3], orjson.dumps(entry), *log_lines[4:]]
    broken = verify_event_log(rehashed).first_break
    assert broken is not None and broken.line == 5 and "prev_hash" in broken.reason


def test_a_removed_or_reordered_entry_breaks_the_sequence(log_lines: list[bytes]) -> None:
    removed = verify_event_log([*log_lines[:5], *log_lines[6:]]).first_break
    assert removed is not None and removed.line == 6 and removed.sequence == 6 and "removed" in removed.reason
    swapped = [*log_lines[:5], log_lines[6], log_lines[5], *log_lines[7:]]
    broken = verify_event_log(swapped).first_break
    assert broken is not None and broken.line == 6 and broken.sequence == 6


def test_cutting_the_tail_is_only_visible_against_the_recorded_head_hash(
    recording: SessionRecording, log_lines: list[bytes]
) -> None:
    _, summary = event_log_entries(recording)
    result = verify_event_log(log_lines[:-1])
    assert result.ok and result.entries == len(log_lines) - 1
    assert result.head_hash != summary.head_hash


@pytest.mark.parametrize(("line", "reason"), [
    (b"not json", "not valid JSON"),
    (b"[1, 2]", "not a JSON object"),
    (b'{"sequence": 0}', "not a v0.2 envelope"),
])
def test_lines_that_are_not_entries_are_reported(line: bytes, reason: str) -> None:
    broken = verify_event_log([line]).first_break
    assert broken is not None and broken.line == 1 and reason in broken.reason


def test_an_empty_log_verifies_with_no_head() -> None:
    result = verify_event_log([])
    assert result.ok and result.entries == 0 and result.head_hash is None
