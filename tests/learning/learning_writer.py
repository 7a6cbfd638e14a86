"""One process writing pattern outcomes and verdicts into a shared database (test_learning_postgres).

`python learning_writer.py URL TAG COUNT`: opens the learning tables at URL, prints `ready`, waits
for a line on stdin (so several writers start together), then records COUNT turns alternating two
fingerprints, appends a verdict after each, and prints each write's sample sizes as a JSON line.
Between writes it pauses 5 ms, so two writers started together take turns even when one is
scheduled late on a busy machine (without the pause a writer can finish before the other begins).
"""

from __future__ import annotations

import json
import sys
import time
from decimal import Decimal

from metis_core.ids import new_ulid
from metis_core.learning.database import LearningDatabase
from metis_core.learning.evaluator.verdicts import Verdict, VerdictStore
from metis_core.learning.patterns.fingerprint import fingerprint
from metis_core.learning.patterns.store import PatternStore

TEXTS = ("Summarize the meeting notes", "Prove that the square root of two is irrational")


def main(url: str, tag: str, count: int) -> None:
    db = LearningDatabase(url)
    patterns, verdicts = PatternStore(db), VerdictStore(db)
    prints = [fingerprint(text, estimated_tokens=10, has_images=False, workspace="", tools_used=()) for text in TEXTS]
    print("ready", flush=True)
    sys.stdin.readline()
    for n in range(count):
        turn = f"turn_{tag}_{n}"
        recorded = patterns.record(prints[n % 2], session_id=f"sess_{tag}", turn_id=turn, model="anthropic:m",
                                   score=0.9, cost_usd=Decimal("0.0015"), latency_ms=10, pricing_version="test")
        verdicts.append(Verdict(new_ulid(), "turn", turn, f"sess_{tag}", "turn-default", "1", "heuristic", None,
                                0.75, 0.4, Decimal("0.0001"), {"writer": tag}, "bus"))
        print(json.dumps({"fingerprint": recorded.fingerprint_id, "new": recorded.was_new,
                          "before": recorded.sample_size_before, "after": recorded.sample_size_after}), flush=True)
        time.sleep(0.005)
    db.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
