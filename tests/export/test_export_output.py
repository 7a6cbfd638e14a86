"""The export functions: paths and streams, summaries that account for every event, error paths."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from metis_core.errors import ExportError, SessionNotFoundError
from metis_core.export import EXPORT_FORMATS, ExportOptions, verify_event_log
from metis_core.store.sessions import SessionStore
from metis_core.trace.store import TraceStore

from .conftest import RecordedSession

STORES = tuple[SessionStore, TraceStore]


def test_the_cli_formats_are_otel_traces_and_metrics_openwop_and_eventlog() -> None:
    assert sorted(EXPORT_FORMATS) == ["eventlog", "openwop", "otel", "otel-metrics"]


@pytest.mark.parametrize("fmt", sorted(EXPORT_FORMATS))
def test_an_export_to_a_path_writes_the_file_and_reports_it(
    fmt: str, recorded: RecordedSession, stores: STORES, tmp_path: Path
) -> None:
    target = tmp_path / f"trace.{fmt}"
    summary = EXPORT_FORMATS[fmt](recorded.session_id, *stores, target, None)
    assert summary.path == str(target) and summary.format == fmt and summary.session_id == recorded.session_id
    assert summary.events_read == len(recorded.events)
    assert summary.exported + summary.skipped_total == summary.events_read
    content = target.read_text(encoding="utf-8")
    if fmt == "otel":
        spans = json.loads(content)["resourceSpans"][0]["scopeSpans"][0]["spans"]
        assert len(spans) == summary.documents
    elif fmt == "otel-metrics":
        metrics = json.loads(content)["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]
        points = [p for m in metrics for p in (m.get("histogram") or m["sum"])["dataPoints"]]
        assert len(points) == summary.documents > 0
    else:
        assert len(content.splitlines()) == summary.documents
    if fmt == "eventlog":
        assert verify_event_log(target.open("rb")).head_hash == summary.head_hash
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # no temporary file left behind


@pytest.mark.parametrize("fmt", sorted(EXPORT_FORMATS))
def test_text_and_binary_streams_receive_the_same_document(fmt: str, recorded: RecordedSession, stores: STORES) -> None:
    text, binary = io.StringIO(), io.BytesIO()
    assert EXPORT_FORMATS[fmt](recorded.session_id, *stores, text, None).path is None
    EXPORT_FORMATS[fmt](recorded.session_id, *stores, binary, None)
    assert text.getvalue().encode("utf-8") == binary.getvalue()


def test_an_unknown_session_is_refused_with_the_store_error(stores: STORES) -> None:
    with pytest.raises(SessionNotFoundError, match="sess_missing"):
        EXPORT_FORMATS["otel"]("sess_missing", *stores, io.BytesIO(), None)


def test_an_unwritable_target_raises_an_export_error_naming_it(
    recorded: RecordedSession, stores: STORES, tmp_path: Path
) -> None:
    target = tmp_path / "no" / "such" / "folder" / "trace.jsonl"
    with pytest.raises(ExportError, match="no/such/folder") as caught:
        EXPORT_FORMATS["eventlog"](recorded.session_id, *stores, target, None)
    assert "check the folder exists" in str(caught.value)
    assert not (tmp_path / "no").exists()


def test_an_existing_file_is_replaced_whole(recorded: RecordedSession, stores: STORES, tmp_path: Path) -> None:
    target = tmp_path / "trace.jsonl"
    target.write_text("old content that is much longer than nothing\n" * 1000)
    summary = EXPORT_FORMATS["openwop"](recorded.session_id, *stores, target, None)
    assert "old content" not in target.read_text() and len(target.read_text().splitlines()) == summary.documents


def test_an_agent_name_openwop_cannot_carry_is_refused_up_front() -> None:
    with pytest.raises(ExportError, match="3 to 256 characters"):
        ExportOptions(agent_name="mx")
