"""How long the console's sessions page and search take on a SQLite store of 100,000 sessions.

`python -m bench.console [--sessions N] [--runs N] [--out FILE]` writes a store in a temp directory
(each session: a user question, a priced answer, an llm.call_completed event with a gateway key,
user and team; every tenth a tool call; a session in twelve ended with an error), then times
`SessionStore.session_page` (what GET /api/console/sessions runs) for the first page, a deep page
reached through the keyset cursor, other sorts, filters and the message search, and the usage and
gateway figures over the calls of the last 30 days. Reports the median
and best of --runs per query (milliseconds). Writes the JSON to --out (default
bench/results/console-<UTC time>.json).
"""

from __future__ import annotations

import argparse
import json
import platform
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from metis_core.ids import new_ulid
from metis_core.server.console_metrics import gateway_operations, usage_over_time
from metis_core.store.records import to_us
from metis_core.store.session_page import SessionQuery
from metis_core.store.sessions import SessionStore
from metis_core.trace.call_rows import call_rows
from metis_core.trace.store import TraceStore

MODELS = ("anthropic:claude-haiku-4-5", "openai:gpt-4o", "google:gemini-2.5-flash")
WORDS = ("invoice", "weather", "refactor", "summary", "translate", "schedule", "budget", "poem")


def _rows(count: int, start: datetime) -> Iterator[tuple[list[Any], list[Any], list[Any], list[Any]]]:
    for n in range(count):
        when = to_us(start + timedelta(seconds=n * 30))
        sid = f"sess_{new_ulid()}"
        model = MODELS[n % len(MODELS)]
        word = WORDS[n % len(WORDS)]
        rare = " zanzibar" if n % 10_000 == 7 else ""
        cost = f"{(n % 97) / 10_000:.4f}"
        session = [sid, "/bench", model, "{}", f"{word} task {n}", 2, when, when + 5_000_000, cost, 0, 120, 40]
        question = [new_ulid(), sid, "user", orjson.dumps([{"type": "text", "text": f"please {word} item {n}{rare}"}])
                    .decode(), "{}", when, 2]
        metadata = {"model": model, "usage": {"input_tokens": 120, "output_tokens": 40, "cost_usd": cost}}
        answer = [new_ulid(), sid, "assistant", orjson.dumps([{"type": "text", "text": f"done: {word} {n}"}]).decode(),
                  orjson.dumps(metadata).decode(), when + 1_000_000, 2]
        payload = {"model": model, "provider": model.split(":")[0], "input_tokens": 120, "output_tokens": 40,
                   "cost_usd": float(cost), "pricing_version": "2026-05-01", "latency_ms": 500 + n % 900,
                   "gateway_key_id": f"key_{n % 20}", "user_id": f"user{n % 50}", "team_id": f"team{n % 5}"}
        event = [new_ulid(), when + 900_000, sid, None, None, "llm.call_completed", "agent", "pseudonymous",
                 orjson.dumps(payload).decode()]
        tool = [f"tu_{new_ulid()}", sid, answer[0], None, "get_weather" if n % 20 else "run_shell", "succeeded",
                None, None, when, None] if n % 10 == 0 else []
        yield session, question + answer, event, tool


def build_store(path: Path, sessions: int) -> None:
    SessionStore(path).close()  # the schema, migrated
    conn = sqlite3.connect(path)
    start = datetime.now(UTC) - timedelta(seconds=sessions * 30)
    rows = list(_rows(sessions, start))
    with conn:
        conn.executemany(
            "INSERT INTO sessions (id, workspace_path, active_model, tool_id_map_json, title, schema_version, "
            "created_at, updated_at, total_cost_usd, unpriced_message_count, total_input_tokens, total_output_tokens) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (r[0] for r in rows))
        conn.executemany("INSERT INTO messages (id, session_id, role, content_json, metadata_json, created_at, "
                         "schema_version) VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (m for r in rows for m in (r[1][:7], r[1][7:])))
        conn.executemany("INSERT INTO events (id, timestamp_us, session_id, turn_id, parent_event_id, type, actor, "
                         "sensitivity, payload_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", (r[2] for r in rows))
        conn.executemany("INSERT INTO tool_calls (id, session_id, message_id, result_message_id, name, status, "
                         "provider_id, provider, created_at, completed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (r[3] for r in rows if r[3]))
        conn.execute("UPDATE sessions SET disposition = CASE WHEN rowid % 12 = 0 THEN 'error' ELSE 'completed' END")
    conn.execute("ANALYZE")
    conn.close()


def _timed(runs: int, work: Callable[[], object]) -> dict[str, float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return {"median_ms": round(statistics.median(times), 2), "best_ms": round(min(times), 2)}


def measure(store: SessionStore, runs: int) -> dict[str, dict[str, float]]:
    cursor: str | None = None
    for _ in range(20):  # page 21 of 50 rows: a cursor a thousand rows in
        cursor = store.session_page(SessionQuery(cursor=cursor)).next_cursor
    week_ago = datetime.now(UTC) - timedelta(days=7)
    queries = {
        "first page (last activity)": SessionQuery(),
        "page 21 via cursor": SessionQuery(cursor=cursor),
        "sort by start": SessionQuery(sort="started"),
        "sort by cost": SessionQuery(sort="cost"),
        "status error": SessionQuery(status="error"),
        "user filter (events)": SessionQuery(user="user7"),
        "tool filter (rare)": SessionQuery(tool="run_shell"),
        "last 7 days": SessionQuery(since=week_ago),
        "search common word": SessionQuery(q="weather"),
        "search rare word": SessionQuery(q="zanzibar"),
    }
    return {name: _timed(runs, partial(store.session_page, query)) for name, query in queries.items()}


def measure_metrics(trace: TraceStore, runs: int) -> dict[str, dict[str, float]]:
    """What GET /api/console/usage and /gateway run over the last 30 days (reading and summing the events)."""
    since = datetime.now(UTC) - timedelta(days=30)

    def usage() -> object:
        return usage_over_time(call_rows(trace, ("llm.call_completed",), since, None), "day", "model")

    def gateway() -> object:
        return gateway_operations(call_rows(trace, ("llm.call_completed", "llm.call_failed"), since, None), [],
                                  "hour", False)

    return {"usage by model per day (30 days)": _timed(runs, usage),
            "gateway ops per hour (30 days)": _timed(runs, gateway)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "metis.db"
        started = time.perf_counter()
        build_store(path, args.sessions)
        built = time.perf_counter() - started
        with SessionStore(path) as store:
            figures = measure(store, args.runs)
        with TraceStore(path) as trace:
            figures.update(measure_metrics(trace, args.runs))
    result = {"bench": "console", "sessions": args.sessions, "runs": args.runs, "build_s": round(built, 1),
              "python": platform.python_version(), "sqlite": sqlite3.sqlite_version, "queries": figures}
    out = args.out or Path(__file__).parent / "results" / f"console-{stamp}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    for name, figure in figures.items():
        print(f"{name:32} median {figure['median_ms']:8.1f} ms   best {figure['best_ms']:8.1f} ms")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
