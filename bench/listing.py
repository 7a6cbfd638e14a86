"""How long the listing commands take on a store of 1,000 sessions, as a user runs them.

`python -m bench.listing [--sessions N] [--runs N] [--out FILE]` builds a METIS_HOME in a temp
directory (each session: a user message and a priced answer; plus 20 gateway keys and 20 users),
then runs each listing command as a fresh `metis` process with stdout piped and reports the median
and best wall time per command (milliseconds), the CPU time it used (less sensitive to a busy
machine), and whether its best run is within the 300 ms bar. The process start and imports count:
that is what a person waits for; `metis --version` is the floor. Bytecode is cached as in an
installed package (PYTHONDONTWRITEBYTECODE is dropped, one unmeasured run first). Writes the JSON to
--out (default bench/results/listing-<UTC time>.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

BAR_MS = 300
MODEL = "anthropic:claude-sonnet-4-6"
COMMANDS = (
    ("--version",),  # the floor: interpreter, typer and the command table, nothing listed
    ("sessions", "list"), ("sessions", "list", "--limit", "1000"), ("models",), ("aliases", "list"),
    ("keys", "list"), ("templates", "list"), ("gateway", "keys", "list"), ("skills", "list"), ("users", "list"),
    ("cost",), ("patterns", "list"), ("memory", "history"), ("db", "status"),
)  # fmt: skip


def build_store(home: Path, sessions: int, keys: int) -> None:
    from metis_core.events.bus import EventBus
    from metis_core.gateway.keys import KeyService, KeyTerms, new_subject_id
    from metis_core.messages import Message, MessageMetadata, TextBlock, Usage
    from metis_core.messages.metadata import RoutingDecisionRecord
    from metis_core.store.gateway_keys import open_gateway_key_store
    from metis_core.store.sessions import SessionStore
    from metis_core.store.users import UserStore

    home.mkdir(parents=True, exist_ok=True)
    routing = RoutingDecisionRecord(mode="manual", chosen_model=MODEL, reason="bench")
    with SessionStore(home / "metis.db") as store:
        for n in range(sessions):
            record = store.create_session(home, active_model=None, title=f"bench session {n}")
            store.append_messages([
                Message(role="user", session_id=record.id, content=[TextBlock(text=f"question {n}")]),
                Message(role="assistant", session_id=record.id, content=[TextBlock(text=f"answer {n}")],
                        metadata=MessageMetadata(model=MODEL, provider="anthropic", routing=routing,
                                                 usage=Usage(input_tokens=120, output_tokens=40,
                                                             cost_usd=Decimal("0.00096")))),
            ])
    with UserStore(home / "metis.db") as users:
        for n in range(keys):
            users.create(new_subject_id("user"), name=f"bench user {n}", email=None, team_id=None)
    key_store = open_gateway_key_store(home / "metis.db")
    bus = EventBus()
    try:
        service = KeyService(key_store, bus)
        for n in range(keys):
            service.issue(KeyTerms(name=f"bench-{n}"))
    finally:
        bus.shutdown(drain=True)
        key_store.close()


def time_command(metis: Path, args: tuple[str, ...], env: dict[str, str], runs: int) -> dict[str, object]:
    times, cpu = [], []
    subprocess.run([str(metis), *args], env=env, capture_output=True, check=False)  # bytecode and page cache
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run([str(metis), *args], env=env, capture_output=True, text=True, check=False)
        times.append((time.perf_counter() - started) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
        if done.returncode != 0:
            raise SystemExit(f"metis {' '.join(args)} failed: {done.stderr.strip()}")
    median = statistics.median(times)
    return {"command": "metis " + " ".join(args), "median_ms": round(median, 1), "best_ms": round(min(times), 1),
            "cpu_median_ms": round(statistics.median(cpu), 1), "runs": runs, "within_bar": min(times) <= BAR_MS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--keys", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path)
    options = parser.parse_args()
    metis = Path(sys.executable).with_name("metis")
    with tempfile.TemporaryDirectory(prefix="metis-bench-listing-") as scratch:
        home = Path(scratch) / "home"
        build_store(home, options.sessions, options.keys)
        env = {k: v for k, v in os.environ.items() if k not in ("METIS_DATABASE_URL", "PYTHONDONTWRITEBYTECODE")}
        env.update(METIS_HOME=str(home), NO_COLOR="1")
        rows = [time_command(metis, args, env, options.runs) for args in COMMANDS]
    python_start = [time_command(Path(sys.executable), ("-c", "pass"), {}, options.runs)]
    result = {
        "bench": "listing", "when": datetime.now(UTC).isoformat(timespec="seconds"), "sessions": options.sessions,
        "gateway_keys": options.keys, "bar_ms": BAR_MS, "python": platform.python_version(),
        "cpus": os.cpu_count(), "load_average": list(os.getloadavg()),
        "python_start_ms": python_start[0]["median_ms"], "commands": rows,
    }
    out = options.out or Path(__file__).parent / "results" / f"listing-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    for row in rows:
        print(f"{row['command']:<40} median {row['median_ms']:>7} ms  best {row['best_ms']:>7} ms"
              f"  cpu {row['cpu_median_ms']:>7} ms"
              f"  {'ok' if row['within_bar'] else 'OVER ' + str(BAR_MS) + ' ms'}")
    print(f"(python -c pass: {result['python_start_ms']} ms; load average {result['load_average']}) -> {out}")


if __name__ == "__main__":
    main()
