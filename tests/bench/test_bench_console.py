"""bench.console's store is one the sessions page reads whole: a few hundred sessions built the
bench's way page through every session once, and every timed query runs."""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.console import build_store, measure, measure_metrics  # noqa: E402
from metis_core.store.session_page import SessionQuery  # noqa: E402
from metis_core.store.sessions import SessionStore  # noqa: E402
from metis_core.trace.store import TraceStore  # noqa: E402


def test_the_bench_store_pages_through_every_session_and_every_query_runs(tmp_path: Path) -> None:
    build_store(tmp_path / "metis.db", 240)
    with SessionStore(tmp_path / "metis.db") as store:
        seen: list[str] = []
        cursor = None
        while True:
            page = store.session_page(SessionQuery(sort="started", limit=50, cursor=cursor))
            seen += [row.id for row in page.rows]
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert len(seen) == len(set(seen)) == 240
        assert [row.tools for row in store.session_page(SessionQuery(tool="run_shell")).rows] == [["run_shell"]] * 12
        figures = measure(store, runs=1)
    with TraceStore(tmp_path / "metis.db") as trace:
        figures.update(measure_metrics(trace, runs=1))
    assert len(figures) == 12 and all(f["best_ms"] >= 0 for f in figures.values())
