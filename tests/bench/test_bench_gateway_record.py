"""`python -m bench.gateway_record` replays captured gateway calls' records in batches and every one is stored."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_the_replayed_records_are_all_stored_and_their_threads_cpu_is_reported() -> None:
    done = subprocess.run([sys.executable, "-m", "bench.gateway_record", "--calls", "40", "--batch", "8"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"record writer thread +\d+\.\d µs per call", done.stdout)
    assert re.search(r"bus thread +\d+\.\d µs per call", done.stdout)
    assert "recorded: 340 turns, 340 sessions" in done.stdout
    assert "not stored" not in done.stderr
