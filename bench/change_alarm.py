"""The model-wide change test on a spread record: false alarms and detection on simulated scores.

`python -m bench.change_alarm [--runs N] [--fingerprints F] [--families K] [--outcomes N]` draws a
model's record over F fingerprints in K kinds (half of them suited: right 95 % of the time, the rest
55 %), each score 0.95 or 0.05 as the cold-start bench scores, fingerprints drawn uniformly. Without a
drop: the share of runs in which `regime_start` finds a change (a false alarm). With the suited kinds
falling to 40 % halfway: outcomes after the drop until a change starting at or after it is found.
Writes bench/results/change-alarm-<UTC>.json.
"""

from __future__ import annotations

import argparse
import random
import statistics
from datetime import UTC, datetime
from typing import Any

from bench.report import keep_named
from metis_core.learning.patterns.evidence import regime_start
from metis_core.learning.settings import PatternSettings

SUITED, HARD, DROPPED = 0.95, 0.55, 0.4


def record(rng: random.Random, fingerprints: int, families: int, outcomes: int,
           drop_at: int | None) -> list[tuple[str, float]]:
    """One model's scores, oldest first, each with its fingerprint."""
    stream = []
    for index in range(outcomes):
        fp = rng.randrange(fingerprints)
        suited = fp % families < families // 2
        rate = (DROPPED if drop_at is not None and index >= drop_at else SUITED) if suited else HARD
        stream.append((f"fp{fp}", 0.95 if rng.random() < rate else 0.05))
    return stream


def detected_after(stream: list[tuple[str, float]], drop_at: int, settings: PatternSettings) -> int | None:
    """Outcomes after the drop until the test finds a change that began no earlier than 10 before it."""
    for end in range(drop_at + 1, len(stream) + 1):
        if regime_start(stream[:end], settings) >= drop_at - 10:
            return end - drop_at
    return None


def measure(runs: int, fingerprints: int, families: int, outcomes: int) -> dict[str, Any]:
    settings = PatternSettings()
    half = outcomes // 2
    alarms = sum(regime_start(record(random.Random(seed), fingerprints, families, outcomes, None), settings) > 0
                 for seed in range(runs))
    delays = [detected_after(record(random.Random(100_000 + seed), fingerprints, families, outcomes, half),
                             half, settings) for seed in range(runs)]
    found = sorted(d for d in delays if d is not None)
    return {
        "bench": "change-alarm", "when": datetime.now(UTC).isoformat(timespec="seconds"), "runs": runs,
        "fingerprints": fingerprints, "families": families, "outcomes": outcomes,
        "rates": {"suited": SUITED, "hard": HARD, "suited_after_drop": DROPPED},
        "false_alarm_share_pct": round(100 * alarms / runs, 2),
        "drop_found_share_pct": round(100 * len(found) / runs, 1),
        "median_outcomes_to_find": statistics.median(found) if found else None,
        "p90_outcomes_to_find_among_found": found[int(0.9 * (len(found) - 1))] if found else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--fingerprints", type=int, default=26)
    parser.add_argument("--families", type=int, default=8)
    parser.add_argument("--outcomes", type=int, default=200)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    result = measure(args.runs, args.fingerprints, args.families, args.outcomes)
    keep_named("change-alarm", result, save=not args.no_save)


if __name__ == "__main__":
    main()
