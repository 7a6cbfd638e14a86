"""A long session loads back whole. How fast it loads is measured in bench/ (bench/cases/storage.py,
"load a 10,000-message session"), not asserted here: a timed unit test fails on a loaded machine."""

from __future__ import annotations

from pathlib import Path

from session_samples import simple_exchange

from metis_core.store import SessionStore


def test_a_10000_message_session_loads_back_whole_and_in_order(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "metis.db") as store:
        session = store.create_session(tmp_path)
        messages = simple_exchange(session.id, 5_000)
        store.append_messages(messages)
        loaded = store.load_messages(session.id)
        assert len(loaded) == 10_000
        assert loaded == messages
