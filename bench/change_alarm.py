"""The model-wide change tests on a spread record: false alarms and detection on simulated scores.

`python -m bench.change_alarm [--runs N] [--fingerprints F] [--families K] [--outcomes N]` draws a
model's record over F fingerprints in K families (fingerprint i in family i mod K; half the families
suited: right 95 % of the time, the rest 55 %), each score 0.95 or 0.05 as the cold-start bench
scores, fingerprints drawn uniformly. It measures the per-fingerprint test alone (`regime_start`)
and with the held test beside it (`model_regime_start`, what routing runs). Without a drop: the
share of runs in which a change is found (a false alarm). With the suited families falling to 40 %
halfway: outcomes after the drop until a change starting at or after it is found. With
verification (learning.verification): after each outcome, while the fall statistic is at least
`suspicion`, up to `replays` replays of a suited fingerprint join the record, each right at the
model's rate then and judged by a judge right 90 % of the time; the same counts, in the model's own
outcomes, and the replays it took. Writes bench/results/change-alarm-<UTC>.json.
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from bench.report import keep_named
from metis_core.learning.patterns.evidence import falling_evidence, model_regime_start, regime_start
from metis_core.learning.settings import PatternSettings, VerificationSettings

SUITED, HARD, DROPPED = 0.95, 0.55, 0.4
JUDGE_ACCURACY = 0.9


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


def verified(rng: random.Random, stream: Stream, drop_at: int | None, fingerprints: int, families: int,
             settings: PatternSettings, verification: VerificationSettings) -> tuple[Stream, list[int], int]:
    """`stream` with verification replays after its outcomes: the record, each of the model's own
    outcomes' index in it, and the replays taken."""
    suited = [fp for fp in range(fingerprints) if fp % families < families // 2]
    out: Stream = []
    own: list[int] = []
    taken = 0
    for index, outcome in enumerate(stream):
        own.append(len(out))
        out.append(outcome)
        for _ in range(verification.replays):
            if falling_evidence(out, settings) < verification.suspicion:
                break
            fp = rng.choice(suited)
            right = rng.random() < (DROPPED if drop_at is not None and index >= drop_at else SUITED)
            judged = right if rng.random() < JUDGE_ACCURACY else not right
            out.append((f"fp{fp}", f"family{fp % families}", 0.95 if judged else 0.1))
            taken += 1
    return out, own, taken


def measure_verified(runs: int, fingerprints: int, families: int, outcomes: int) -> dict[str, Any]:
    """False alarms, drops found and replays taken with verification beside the tests routing runs."""
    settings, verification = PatternSettings(), VerificationSettings()
    half = outcomes // 2
    alarms, found, replays = 0, [], [0, 0]
    for seed in range(runs):
        base = record(random.Random(seed), fingerprints, families, outcomes, None)
        steady, _, taken = verified(random.Random(seed), base, None, fingerprints, families, settings, verification)
        alarms += model_regime_start(steady, settings) > 0
        replays[0] += taken
        base = record(random.Random(100_000 + seed), fingerprints, families, outcomes, half)
        dropped, own, taken = verified(random.Random(100_000 + seed), base, half, fingerprints, families, settings,
                                       verification)
        replays[1] += taken
        at = own[half]
        found_after = next((end - half for end in range(half + 1, outcomes + 1)
                            if model_regime_start(dropped[:own[end - 1] + 1], settings) >= at - 10), None)
        if found_after is not None:
            found.append(found_after)
    found.sort()
    return {"suspicion": verification.suspicion, "replays_in_a_row": verification.replays,
            "judge_accuracy": JUDGE_ACCURACY, "false_alarm_share_pct": round(100 * alarms / runs, 2),
            "drop_found_share_pct": round(100 * len(found) / runs, 1),
            "median_outcomes_to_find": statistics.median(found) if found else None,
            "p90_outcomes_to_find_among_found": found[int(0.9 * (len(found) - 1))] if found else None,
            "replays_per_run_without_drop": round(replays[0] / runs, 2),
            "replays_per_run_with_drop": round(replays[1] / runs, 2)}


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
    result["with_verification"] = measure_verified(runs, fingerprints, families, outcomes)
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
