"""Cold start: import time of what a call needs, and resident memory after setting up and calling once.

Each run is a fresh interpreter (bench/coldstart.py); implementations take turns run by run so
the machine's noise is shared. A reference line, the floor plus pydantic's import and first model,
shows how much of any pydantic-typed client's cold start is pydantic itself. Figures are medians:
import wall time in ms (floor: httpx + orjson), wall time from the first import to the checked
answer of one call (what a CLI user waits for, so a library that only defers work past import
gains nothing there), and RSS in MB after import, client setup and that call to the local server.
"""

from __future__ import annotations

import json
import os
import subprocess

from bench.context import RunContext
from bench.figures import FLOOR, Figure, Target, paired_spread, with_floor, with_reference
from bench.scenarios import call_answer
from bench.server import REPO_ROOT
from bench.timing import median

PYDANTIC_REFERENCE = "floor + pydantic (reference)"
"""Not a peer: httpx + orjson + pydantic's import and first model, the least a pydantic-typed client costs."""
IMPORT_TARGET = Target("reference_max", reference=PYDANTIC_REFERENCE)
"""The target: metis-core's cold import costs no more than the floor plus pydantic's own import, in the same run."""
RSS_TARGET = Target("ratio_max", 1.3)
FIRST_CALL_TARGET = Target("over_max", 10.0)
"""The target: the first call of a process (client setup and one call, after the imports it needs) costs
at most 10 ms of CPU more than the floor's. CPU time, which other processes on the cores barely move."""
REPORT = Target("report")
COLDSTART_KEYS = {
    FLOOR: "floor",
    "metis-core": "metis",
    "openai SDK": "openai",
    "anthropic SDK": "anthropic",
    "litellm": "litellm",
    "pydantic-ai": "pydantic-ai",
}
WHAT = {
    "floor": "httpx + orjson",
    "floor+pydantic": "httpx + orjson + pydantic, one model",
    "metis": "client + anthropic and openai adapters",
    "openai": "import openai",
    "anthropic": "import anthropic",
    "litellm": "import litellm",
    "pydantic-ai": "direct API + anthropic and openai models",
}


def cold_run(ctx: RunContext, impl: str) -> dict[str, float]:
    done = subprocess.run(
        [ctx.python, "-m", "bench.coldstart", impl, ctx.server, call_answer().text],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, env=os.environ.copy(), check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"cold start of {impl} failed: {done.stderr.strip()[-400:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def run(ctx: RunContext) -> list[Figure]:
    impls = {ctx.display_name(k): COLDSTART_KEYS[k] for k in ctx.modules if k in COLDSTART_KEYS}
    if FLOOR in impls:  # shown right after the floor: how much of a cold start is pydantic's
        impls = {FLOOR: impls.pop(FLOOR), PYDANTIC_REFERENCE: "floor+pydantic", **impls}
    results: dict[str, list[dict[str, float]]] = {name: [] for name in impls}
    names = list(impls)
    for run_index in range(ctx.sizes.cold_runs):
        turn = names[run_index % len(names):] + names[: run_index % len(names)]  # rotate who goes first
        for name in turn:
            results[name].append(cold_run(ctx, impls[name]))
    def figures(row: str, key: str) -> list[Figure]:
        floor = [r[key] for r in results.get(FLOOR, [])]
        return [Figure("startup", row, name, median(values), "MB" if key == "rss_mb" else "ms", len(values),
                       note=WHAT[impls[name]] if key == "import_ms" else "",
                       spread=paired_spread(values, floor) if name != FLOOR else None)
                for name, values in ((name, [r[key] for r in runs]) for name, runs in results.items())]

    imports = figures("cold import of what a call needs", "import_ms")
    first_answers = figures("cold start to first answer (import, setup, one call)", "first_answer_ms")
    first_calls = figures("first call after the imports, CPU (client setup and one call)", "cpu_call_ms")
    memory = figures("RSS after import, client setup and one call", "rss_mb")
    imports = with_reference(with_floor(imports, IMPORT_TARGET), PYDANTIC_REFERENCE)
    return (imports + with_floor(first_answers, REPORT)
            + with_floor(first_calls, FIRST_CALL_TARGET) + with_floor(memory, RSS_TARGET))
