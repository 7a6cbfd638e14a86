"""No conversation text in any export unless asked for, and never an API key or the workspace path."""

from __future__ import annotations

import io

import pytest
from support_servers import API_KEYS

from metis_core.export import EXPORT_FORMATS, ExportOptions
from metis_core.store.sessions import SessionStore
from metis_core.trace.store import TraceStore

from .conftest import USER_TEXTS, RecordedSession, conversation_texts


def export_bytes(fmt: str, recorded: RecordedSession, stores: tuple[SessionStore, TraceStore],
                 include_content: bool) -> str:
    out = io.BytesIO()
    EXPORT_FORMATS[fmt](recorded.session_id, *stores, out, ExportOptions(include_content=include_content))
    return out.getvalue().decode("utf-8")


@pytest.mark.parametrize("fmt", sorted(EXPORT_FORMATS))
def test_by_default_no_conversation_text_leaves_the_store(
    fmt: str, recorded: RecordedSession, stores: tuple[SessionStore, TraceStore]
) -> None:
    texts = conversation_texts(recorded.messages)
    assert {*USER_TEXTS, "Paris", "Paris: 73°F, clear"} <= texts
    output = export_bytes(fmt, recorded, stores, include_content=False)
    leaked = sorted(text for text in texts if text in output)
    assert leaked == []


@pytest.mark.parametrize("fmt", sorted(set(EXPORT_FORMATS) - {"otel-metrics"}))  # metrics carry no content
def test_include_content_puts_the_conversation_in_the_export(
    fmt: str, recorded: RecordedSession, stores: tuple[SessionStore, TraceStore]
) -> None:
    output = export_bytes(fmt, recorded, stores, include_content=True)
    assert USER_TEXTS[0] in output and "Paris: 73°F, clear" in output


@pytest.mark.parametrize("fmt", sorted(EXPORT_FORMATS))
@pytest.mark.parametrize("include_content", [False, True])
def test_no_api_key_or_workspace_path_appears_in_any_export(
    fmt: str, include_content: bool, recorded: RecordedSession, stores: tuple[SessionStore, TraceStore]
) -> None:
    output = export_bytes(fmt, recorded, stores, include_content=include_content)
    assert [key for key in API_KEYS.values() if key in output] == []
    assert "test-key-" not in output
    workspace = stores[0].get_session(recorded.session_id).workspace_path
    assert workspace not in output
