"""The adapter engineers' own benchmarks (bench/bench_<provider>.py), run in-process, reported as they are.

Each script translates its provider's 2,000-event stream from bytes already in memory (no HTTP,
16 KiB reads) and checks the final message, and times to_wire against its own hand-written
mapping. Next to the HTTP stream rows, this separates translation cost from transport cost.
Figures are reported, not judged (the HTTP rows carry the targets). A script that is missing or
fails is listed with the reason instead.
"""

from __future__ import annotations

import contextlib
import importlib
import io
from typing import Any

from bench.context import RunContext
from bench.figures import HANDWRITTEN, METIS, Figure, Target, with_floor

SCRIPTS = {
    "anthropic": ("bench.bench_anthropic", "run"),
    "openai": ("bench.bench_openai_chat", "run"),
    "openai_responses": ("bench.bench_openai_responses", "main"),
    "gemini": ("bench.bench_gemini", "run"),
    "ollama": ("bench.bench_ollama", "run"),
}
REPORT = Target("report")


def _first(figures: dict[str, Any], *keys: str) -> float | None:
    for key in keys:
        if key in figures:
            return float(figures[key])
    return None


def run_script(ctx: RunContext, provider: str) -> list[Figure]:
    module_name, entry = SCRIPTS[provider]
    script = module_name.rsplit(".", 1)[1] + ".py"
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        return [Figure("adapters", f"in-process stream translation · {provider}", METIS, float("nan"), "events/s", 0,
                       target=REPORT, note=f"{script} not importable: {exc}")]
    if ctx.quick:
        for name, value in (("STREAM_RUNS", 3), ("WIRE_RUNS", 200)):
            if hasattr(module, name):
                setattr(module, name, value)
    with contextlib.redirect_stdout(io.StringIO()):
        figures: dict[str, Any] = getattr(module, entry)()  # each script checks the message it translated
    out: list[Figure] = []
    rate = _first(figures, "stream_sse_events_per_s", "stream_lines_per_s")
    if rate is not None:
        out.append(Figure("adapters", f"in-process stream translation, no HTTP · {provider}", METIS, rate,
                          "events/s", 0, target=REPORT, note=script, higher_is_better=True))
    ours = _first(figures, "to_wire_40_messages_median_us", "to_wire_median_us")
    theirs = _first(figures, "hand_written_40_messages_median_us", "hand_written_median_us")
    if ours is not None and theirs is not None:
        row = f"to_wire vs the script's own hand-written mapping · {provider}"
        pair = [Figure("adapters", row, METIS, ours, "µs", 0, note=script),
                Figure("adapters", row, HANDWRITTEN, theirs, "µs", 0, note=script)]
        out += with_floor(pair, REPORT, HANDWRITTEN)
    return out


def run(ctx: RunContext) -> list[Figure]:
    figures: list[Figure] = []
    for provider in SCRIPTS:
        figures += run_script(ctx, provider)
    return figures
