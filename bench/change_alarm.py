"""The model-wide change tests on a spread record: false alarms and detection on simulated scores.

`python -m bench.change_alarm [--runs N] [--fingerprints F] [--families K] [--outcomes N]` draws a
model's record over F fingerprints in K families (fingerprint i in family i mod K; half the families
suited: right 95 % of the time, the rest 55 %), each score 0.95 or 0.05 as the cold-start bench
scores, fingerprints drawn uniformly. It measures the per-fingerprint test alone (`regime_start`)
and with the held test beside it (`model_regime_start`, what routing runs). Without a drop: the
share of runs in which a change is found (a false alarm). With the suited families falling to 40 %
halfway: outcomes after the drop until a change starting at or after it is found.
Writes bench/results/change-alarm-<UTC>.json.
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from bench.report import keep_named
from metis_core.learning.patterns.evidence import model_regime_start, regime_start
from metis_core.learning.settings import PatternSettings

SUITED, HARD, DROPPED = 0.95, 0.55, 0.4


Stream = list[tuple[str, str, float]]
TESTS: dict[str, Callable[[Stream, PatternSettings], int]] = {
    "per_fingerprint": lambda stream, settings: regime_start([(fp, score) for fp, _, score in stream], settings),
    "with_held": model_regime_start,
}
"""The per-fingerprint test alone, and beside it the held test on the families (what routing runs)."""


def record(rng: random.Random, fingerprints: int, families: int, outcomes: int, drop_at: int | None) -> Stream:
    """One model's scores, oldest first, each with its fingerprint and family."""
    stream = []
    for index in range(outcomes):
        fp = rng.randrange(fingerprints)
        suited = fp % families < families // 2
        rate = (DROPPED if drop_at is not None and index >= drop_at else SUITED) if suited else HARD
        stream.append((f"fp{fp}", f"family{fp % families}", 0.95 if rng.random() < rate else 0.05))
    return stream


def detected_after(stream: Stream, drop_at: int, settings: PatternSettings,
                   test: Callable[[Stream, PatternSettings], int]) -> int | None:
    """Outcomes after the drop until `test` finds a change that began no earlier than 10 before it."""
    for end in range(drop_at + 1, len(stream) + 1):
        if test(stream[:end], settings) >= drop_at - 10:
            return end - drop_at
    return None


def measure(runs: int, fingerprints: int, families: int, outcomes: int) -> dict[str, Any]:
    settings = PatternSettings()
    half = outcomes // 2
    steady = [record(random.Random(seed), fingerprints, families, outcomes, None) for seed in range(runs)]
    dropped = [record(random.Random(100_000 + seed), fingerprints, families, outcomes, half) for seed in range(runs)]
    result: dict[str, Any] = {
        "bench": "change-alarm", "when": datetime.now(UTC).isoformat(timespec="seconds"), "runs": runs,
        "fingerprints": fingerprints, "families": families, "outcomes": outcomes,
        "rates": {"suited": SUITED, "hard": HARD, "suited_after_drop": DROPPED},
    }
    for name, test in TESTS.items():
        alarms = sum(test(stream, settings) > 0 for stream in steady)
        found = sorted(d for d in (detected_after(stream, half, settings, test) for stream in dropped) if d is not None)
        result[name] = {
            "false_alarm_share_pct": round(100 * alarms / runs, 2),
            "drop_found_share_pct": round(100 * len(found) / runs, 1),
            "median_outcomes_to_find": statistics.median(found) if found else None,
            "p90_outcomes_to_find_among_found": found[int(0.9 * (len(found) - 1))] if found else None,
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--fingerprints", type=int, default=26)
    parser.add_argument("--families", type=int, default=8)
    parser.add_argument("--outcomes", type=int, default=200)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    result = measure(args.runs, args.fingerprints, args.families, args.outcomes)
    keep_named("change-alarm", result, save=not args.no_save)


if __name__ == "__main__":
    main()
