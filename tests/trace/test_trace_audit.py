"""Audit export: only audit-flagged events, filtered by time and type, as JSONL or stable CSV."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta
from pathlib import Path

import pytest
from store_backends import scalar_on
from trace_samples import NOW, event

from metis_core.errors import StoreError
from metis_core.trace import CSV_COLUMNS, TraceStore, export_audit


@pytest.fixture
def db(tmp_path: Path, db_location: Path | str) -> Path | str:
    path = db_location
    with TraceStore(path) as store:
        store.append_many(
            [
                event(type="gateway.key_issued", at=NOW - timedelta(days=3), payload={"gateway_key_id": "k1"}),
                event(type="tool.called", at=NOW - timedelta(days=2)),
                event(type="gateway.key_revoked", at=NOW - timedelta(days=1), payload={"gateway_key_id": "k1", "b": 2}),
                event(type="trace.swept", at=NOW, turn_id=None),
            ]
        )
    return path


def test_jsonl_holds_only_audit_events_in_order(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "audit.jsonl"
    assert export_audit(db, out) == 3
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["type"] for r in records] == ["gateway.key_issued", "gateway.key_revoked", "trace.swept"]
    assert records[1]["payload"] == {"gateway_key_id": "k1", "b": 2}
    assert records[0]["timestamp"] == (NOW - timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_filters_by_time_range_and_type(db: Path) -> None:
    buffer = io.StringIO()
    count = export_audit(db, buffer, since=NOW - timedelta(days=2), until=NOW)
    assert count == 1 and json.loads(buffer.getvalue())["type"] == "gateway.key_revoked"
    buffer = io.StringIO()
    assert export_audit(db, buffer, types=["trace.swept", "gateway.key_issued"]) == 2


def test_csv_has_stable_columns_and_payload_as_json(db: Path) -> None:
    buffer = io.StringIO()
    export_audit(db, buffer, format="csv")
    rows = list(csv.reader(io.StringIO(buffer.getvalue())))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert len(rows) == 4
    revoked = dict(zip(CSV_COLUMNS, rows[2], strict=True))
    assert json.loads(revoked["payload"]) == {"b": 2, "gateway_key_id": "k1"}
    assert revoked["turn_id"] == "" and revoked["type"] == "gateway.key_revoked"


def test_non_audit_types_and_unknown_formats_are_refused(db: Path) -> None:
    with pytest.raises(StoreError, match=r"not audit event types: tool\.called"):
        export_audit(db, io.StringIO(), types=["tool.called"])
    with pytest.raises(StoreError, match="not supported"):
        export_audit(db, io.StringIO(), format="xml")  # type: ignore[arg-type]


def _fingerprint(db: Path | str) -> object:
    if isinstance(db, Path):
        return db.read_bytes()
    return scalar_on(db, "SELECT string_agg(id || payload_json::text, ',' ORDER BY id) FROM events")


def test_export_does_not_modify_the_database(db: Path | str, tmp_path: Path) -> None:
    before = _fingerprint(db)
    export_audit(db, tmp_path / "a.csv", format="csv")
    assert _fingerprint(db) == before
