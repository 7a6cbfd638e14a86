"""Instruction counts under valgrind's callgrind, for the bench's drivers that count by stage.

A driver re-runs itself as `python -m <module> <args>` inside valgrind with counting off
(`--instr-atstart=no`); inside, it warms up, then turns counting on and off around the counted
repeats with `switch`. `instructions_per` runs that and divides the `totals:` line by the repeats.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path


def switch(state: str) -> None:
    """Turn callgrind's counting `on` or `off` for this process."""
    subprocess.run(["callgrind_control", "-i", state, str(os.getpid())], check=True, capture_output=True)


def count_after_warmup(action: Callable[[], object], warmup: int, repeats: int) -> None:
    """Runs `action` `warmup` times uncounted, then `repeats` times with callgrind counting on."""
    for index in range(warmup + repeats):
        if index == warmup:
            switch("on")
        action()
    switch("off")


async def acount_after_warmup(action: Callable[[], Awaitable[object]], warmup: int, repeats: int) -> None:
    """`count_after_warmup` for an async action, awaited each time in the running loop."""
    for index in range(warmup + repeats):
        if index == warmup:
            switch("on")
        await action()
    switch("off")


def instructions_per(module: str, args: list[str], repeats: int) -> float:
    """Instructions per counted repeat of `python -m module args`, run under callgrind in its own process."""
    out = Path(tempfile.mkdtemp(prefix="metis-callgrind-")) / "callgrind.out"
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
               sys.executable, "-m", module, *args]
    try:
        subprocess.run(command, check=True, capture_output=True)
        return totals_per_call(out.read_text(), repeats)
    finally:
        shutil.rmtree(out.parent, ignore_errors=True)


def totals_per_call(callgrind_out: str, calls: int) -> float:
    """The `totals:` line of a callgrind output file, per counted call."""
    line = next((x for x in callgrind_out.splitlines() if x.startswith("totals:")), "totals: 0")
    return int(line.split()[1]) / calls


def against_budget(instructions: float, budget: float) -> str:
    """`1,234 over` or `1,234 under`: how far metis-core's count is from its budget."""
    over = instructions - budget
    return f"{over:,.0f} over" if over > 0 else f"{-over:,.0f} under"
