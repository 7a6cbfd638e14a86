"""Loading a long session is fast enough to resume without a visible pause."""

from __future__ import annotations

import gc
import time
from pathlib import Path

from session_samples import simple_exchange

from metis_core.store import SessionStore


def test_a_10000_message_session_loads_in_under_half_a_second(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "metis.db") as store:
        session = store.create_session(tmp_path)
        messages = simple_exchange(session.id, 5_000)
        store.append_messages(messages)
        timings = []
        for _ in range(3):
            gc.collect()
            started = time.perf_counter()
            loaded = store.load_messages(session.id)
            timings.append(time.perf_counter() - started)
            assert len(loaded) == 10_000
            del loaded
        assert store.load_messages(session.id) == messages
        assert gc.isenabled()
    print(f"\n10,000-message load: best {min(timings):.3f}s, worst {max(timings):.3f}s")
    assert min(timings) < 0.5
