"""Instructions per 2,000-event stream, whole and by stage, counted by callgrind (unmoved by load).

    bench/.venv/bin/python -m bench.stream_instructions [--provider anthropic,openai] [--streams N]

The stream rows (bench/cases/streaming.py) time wall clock, which this shared machine moves by
±20 %; instruction counts do not. Each subject runs in its own interpreter under valgrind's
callgrind (`--instr-atstart=no`, switched on around the counted streams after 3 warm-up streams)
against one local server (bench/server.py, not counted): the floor (raw httpx, a minimal line
reader, one orjson parse per event), metis-core's whole `ModelClient.stream`, and its stages run
on their own over the body the server sends, captured once as the HTTP chunks it arrived in:
`frame` (SSE / NDJSON framing into WireChunks) and `translate` (framing plus the provider's
translator and the message assembler, up to the final Message). The rest of the whole stream is
request building, the HTTP exchange and the first-content gate. Needs `valgrind` on PATH.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable
from typing import Any

from bench.callgrind import against_budget, count_after_warmup, instructions_per

WARMUP = 3
TARGET_RATIO = 0.85
"""The stream rows' target: metis-core's events/s at least 0.85x the floor's, i.e. at most 1/0.85
(1.18x) the floor's instructions per stream."""
STAGES = ("frame", "translate")
PROVIDERS = ("anthropic", "openai", "openai_responses", "gemini", "ollama", "openrouter")


def _stage_action(server: str, provider: str, stage: str) -> Callable[[], Any]:
    """One stage of a metis-core stream as a function repeating exactly that stage's work."""
    from bench.peers.metis import MetisCaller, options_for
    from metis_core.adapters._common.tool_ids import ToolIdMap

    caller = MetisCaller(server)
    client = caller.client
    call = client._prepare(caller.messages, None, caller.tools, options_for(provider, stream=True), ToolIdMap(),
                           "", None, None, True)
    with client._wire(call).stream(call.request.method, call.url, call.body, client._headers(call),
                                   provider=provider) as wire:
        raw = list(wire.iter_raw())
    adapter = call.adapter

    def frame() -> None:
        decoder = adapter.chunk_decoder()
        for piece in raw:
            decoder.feed(piece)
        decoder.finish()

    def translate() -> None:
        call.context.tool_ids = ToolIdMap()  # as a fresh stream has: the answer's tool ids are new to it
        decoder = adapter.chunk_decoder()
        translator = adapter.stream_translator(call.context)
        for piece in raw:
            for chunk in decoder.feed(piece):
                translator.feed(chunk)
        for chunk in decoder.finish():
            translator.feed(chunk)
        translator.finish()

    return frame if stage == "frame" else translate


def _counted(server: str, subject: str, provider: str, streams: int) -> None:
    """Runs inside valgrind: `streams` repetitions of the subject, counted after the warm-up."""
    if subject in STAGES:
        action = _stage_action(server, provider, subject)
    else:
        if subject == "metis-core":
            from bench.peers.metis import MetisCaller

            caller: Any = MetisCaller(server)
        else:
            from bench.peers.floor import FloorCaller

            caller = FloorCaller(server)
        action = lambda: caller.stream(provider)  # noqa: E731 - the one action the loop repeats
    count_after_warmup(action, WARMUP, streams)


def count(server: str, subject: str, provider: str, streams: int) -> float:
    """Instructions per stream of `subject`, from a callgrind run of its own."""
    return instructions_per("bench.stream_instructions", ["--inside", subject, "--server", server,
                                                          "--provider", provider, "--streams", str(streams)], streams)


def report(provider: str, counts: dict[str, float], floor_name: str) -> list[str]:
    """One provider's table: each subject's instructions per stream and its ratio to the floor."""
    floor = counts[floor_name]
    lines = [f"stream of 2,000 events · {provider}", f"  {'subject':<20}{'instructions/stream':>22}{'vs floor':>10}"]
    for name, value in counts.items():
        lines.append(f"  {name:<20}{value:>22,.0f}{value / floor:>9.2f}x")
    if "metis-core" in counts:
        budget = floor / TARGET_RATIO
        verdict = against_budget(counts["metis-core"], budget)
        lines.append(f"  metis-core is {verdict} the floor/{TARGET_RATIO:g} budget ({budget:,.0f})")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stream_instructions", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--provider", default=",".join(PROVIDERS), help="comma-separated providers")
    parser.add_argument("--streams", type=int, default=10)
    parser.add_argument("--no-stages", action="store_true", help="count only the floor and the whole stream")
    parser.add_argument("--inside", default="", help=argparse.SUPPRESS)
    parser.add_argument("--server", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    from bench import environment

    environment.prepare_process_environment()
    if args.inside:
        _counted(args.server, args.inside, args.provider, args.streams)
        return 0
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    from bench.figures import FLOOR
    from bench.server import serve_in_process

    providers = [p.strip() for p in args.provider.split(",") if p.strip()]
    unknown = sorted(set(providers) - set(PROVIDERS))
    if unknown:
        parser.error(f"unknown provider(s) {', '.join(unknown)}; choose from {', '.join(PROVIDERS)}")
    subjects = [FLOOR, "metis-core", *(() if args.no_stages else STAGES)]
    with serve_in_process() as server:
        for provider in providers:
            counts = {subject: count(server, subject, provider, args.streams) for subject in subjects}
            print("\n".join(report(provider, counts, FLOOR)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
