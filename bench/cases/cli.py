"""The command line's cold start: `metis --help` beside `llm --help`, each in a fresh process.

What a person waits for before anything happens: interpreter start, imports, parsing the command
line and printing the help. The floor is the same interpreter doing nothing (`python -c pass`).
Commands take turns run by run so they share the machine's noise; figures are medians in ms.
`llm` is installed in bench/.venv only (bench/requirements.txt), never as metis-core's dependency.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

from bench.context import RunContext
from bench.figures import METIS, Figure, Target, paired_spread, with_floor
from bench.timing import median

HELP_TARGET = Target("max", 150.0)
"""The target: `metis --help` within 150 ms, cold."""
INTERPRETER = "python -c pass (floor)"
ROW = "command line cold start: `--help`"


def commands(python: str) -> dict[str, list[str]]:
    """Implementation -> the command it runs; a command line not installed beside `python` is left out."""
    bin_dir = Path(python).parent
    found = {INTERPRETER: [python, "-c", "pass"], METIS: [str(bin_dir / "metis"), "--help"]}
    if (bin_dir / "llm").exists():
        found["llm"] = [str(bin_dir / "llm"), "--help"]
    return found


def timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, timeout=60, check=False)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.decode(errors='replace')[-400:]}")
    return elapsed


def run(ctx: RunContext) -> list[Figure]:
    impls = commands(ctx.python)
    if "llm" not in impls:
        ctx.missing["llm"] = "the llm command is not installed beside this interpreter (bench/.venv has it)"
    scratch = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    env = {**os.environ, "LLM_USER_PATH": str(scratch / "llm"), "METIS_HOME": str(scratch / "metis")}
    names = list(impls)
    results: dict[str, list[float]] = {name: [] for name in names}
    for name in names:  # one unmeasured run each: the page cache holds the files, as after any earlier use
        timed(impls[name], env)
    for run_index in range(ctx.sizes.cold_runs):
        turn = names[run_index % len(names):] + names[: run_index % len(names)]
        for name in turn:
            results[name].append(timed(impls[name], env))
    floor = results[INTERPRETER]
    figures = [Figure("cli", ROW, name, median(values), "ms", len(values),
                      note=" ".join(impls[name][-1:]) if name != INTERPRETER else "interpreter start only",
                      spread=paired_spread(values, floor) if name != INTERPRETER else None)
               for name, values in results.items()]
    return with_floor(figures, HELP_TARGET, floor_impl=INTERPRETER)
