"""Instructions per library call, whole and by stage, counted by callgrind: the call rows' figure load does not move.

    bench/.venv/bin/python -m bench.call_instructions [--provider openai] [--async] [--calls N]

The call rows time the 40-message tool conversation in wall time, which this shared machine moves
by ±10 %; instruction counts do not. Each subject runs in its own interpreter under valgrind's
callgrind (`--instr-atstart=no`, switched on around the counted calls after 200 warm-up calls)
against one local server (bench/server.py, not counted): the floor (raw httpx, or raw aiohttp with
`--async`), metis-core's whole call, and the stages of that call run on their own (history survey,
canonical -> wire, body serialization, the HTTP exchange, the answer's parsing; with `--async` the
exchange is the aiohttp one, so the table shows how much of an async call is the transport's), and
bench/handwritten.py's mapping of the same conversation as a reference row beside canonical -> wire
(with `--async`, also the floor's own exchange without its parse, beside `asend`).
The stages add up to about the whole call; compare trees with this, confirm with the suite.
Needs `valgrind` on PATH; run it in bench/.venv, the suite's environment (about two minutes).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from collections.abc import Callable
from typing import Any

from bench.callgrind import acount_after_warmup, against_budget, count_after_warmup, instructions_per

WARMUP = 200
TARGET_RATIO = 1.25
"""The call rows' target (bench/cases/calls.py): metis-core's call at most 1.25x the floor's."""
STAGES = ("survey", "to_wire", "body", "send", "parse")
"""The parts of a sync call, as `ModelClient._prepare`, `complete` and `parse_response_checked` run them."""
ASYNC_STAGES = ("survey", "to_wire", "body", "asend", "parse")
"""The parts of an async call: the same CPU stages around the aiohttp exchange (`HttpTransport.asend`)."""
EXCHANGE = "aiohttp exchange"
"""A reference row, not a stage, with `--async`: the floor's own aiohttp post and read without its
answer's parse, the least `asend` (metis's aiohttp exchange) can cost; `asend` compares with it."""
HANDWRITTEN = "handwritten"
"""A reference row, not a stage: bench/handwritten.py's mapping of the same conversation, the least a
library that keeps a canonical conversation does per call; `to_wire` compares with it."""


def _stage_actions(server: str, provider: str) -> dict[str, Callable[[], Any]]:
    """Each stage of one sync metis-core call as a function repeating exactly that stage's work."""
    from bench.handwritten import MAPPINGS
    from bench.peers.metis import MetisCaller, options_for
    from metis_core.adapters._common.token_estimate import surveyed_history
    from metis_core.adapters._common.tool_ids import ToolIdMap
    from metis_core.adapters.parse_guard import parse_response_checked

    caller = MetisCaller(server)
    client, messages, tools, options = caller.client, caller.messages, caller.tools, options_for(provider)
    for _ in range(3):  # prepared as every call of a chat after its first two is: the history sent before
        call = client._prepare(messages, None, tools, options, ToolIdMap(), "", None, None, False)
    headers, wire, adapter = client._headers(call), client._wire(call), call.adapter
    response = wire.send(call.request.method, call.url, call.body, headers, provider=provider)
    history = surveyed_history(messages, tools)[0]

    def parse() -> Any:
        call.context.tool_ids = ToolIdMap()  # as a fresh call has: the answer's tool ids are new to it
        return parse_response_checked(adapter, response, call.context)

    return {
        "survey": lambda: surveyed_history(messages, tools),
        "to_wire": lambda: adapter.to_wire(history, tools, options, ToolIdMap()),
        "body": call.request.body_json,
        "send": lambda: wire.send(call.request.method, call.url, call.body, headers, provider=provider),
        "asend": lambda: wire.asend(call.request.method, call.url, call.body, headers, provider=provider),
        "parse": parse,
        HANDWRITTEN: lambda: MAPPINGS[provider](messages),
    }


def _floor_exchange(server: str, provider: str) -> Callable[[], Any]:
    """The async floor's post and read of the answer's bytes, unparsed, on one session made on first use."""
    import aiohttp

    from bench.peers.aiohttp_floor import AiohttpFloorCaller

    floor = AiohttpFloorCaller(server)
    url, body, headers = floor.urls[provider], floor.bodies[provider], floor.headers[provider]

    async def exchange() -> bytes:
        if floor.session is None:
            floor.session = aiohttp.ClientSession()
        async with floor.session.post(url, data=body, headers=headers) as response:
            response.raise_for_status()
            return await response.read()

    return exchange


def _counted(server: str, subject: str, provider: str, use_async: bool, calls: int) -> None:
    """Runs inside valgrind: `calls` repetitions of the subject, counted after the warm-up."""
    if subject in ("asend", EXCHANGE):
        exchange = (_floor_exchange(server, provider) if subject == EXCHANGE
                    else _stage_actions(server, provider)[subject])

        asyncio.run(acount_after_warmup(exchange, WARMUP, calls))
        return
    if subject in STAGES or subject == HANDWRITTEN:
        action = _stage_actions(server, provider)[subject]
        caller: Any = None
    elif subject == "metis-core":
        from bench.peers.metis import MetisCaller

        caller = MetisCaller(server)
    elif use_async:
        from bench.peers.aiohttp_floor import AiohttpFloorCaller

        caller = AiohttpFloorCaller(server)
    else:
        from bench.peers.floor import FloorCaller

        caller = FloorCaller(server)
    if use_async and caller is not None:  # a CPU stage runs as in a sync call
        async def run() -> None:
            await acount_after_warmup(lambda: caller.acomplete(provider), WARMUP, calls)
            await caller.aclose()

        asyncio.run(run())
        return
    if caller is not None:
        action = lambda: caller.complete(provider)  # noqa: E731 - the one action the loop repeats
    count_after_warmup(action, WARMUP, calls)


def count(server: str, subject: str, provider: str, use_async: bool, calls: int) -> float:
    """Instructions per call of `subject`, from a callgrind run of its own."""
    return instructions_per("bench.call_instructions", ["--inside", subject, "--server", server, "--provider", provider,
                                                        "--calls", str(calls), *(["--async"] if use_async else [])],
                            calls)


def report(counts: dict[str, float], floor_name: str) -> list[str]:
    """The table: each subject's instructions per call and its ratio to the floor; the stages' sum."""
    floor = counts[floor_name]
    lines = [f"{'subject':<22}{'instructions/call':>20}{'vs floor':>10}"]
    for name, value in counts.items():
        lines.append(f"{name:<22}{value:>20,.0f}{value / floor:>9.2f}x")
    staged = [counts[s] for s in (*STAGES, "asend") if s in counts]
    if staged:
        lines.append(f"{'stages, summed':<22}{sum(staged):>20,.0f}")
    if HANDWRITTEN in counts:
        least = floor + counts[HANDWRITTEN]
        lines.append(f"floor + hand-written mapping {least:,.0f} ({least / floor:.2f}x): a per-call mapping's least")
    if staged and "metis-core" in counts:
        beyond = counts["metis-core"] - sum(staged)
        lines.append(f"metis-core outside its stages {beyond:,.0f} ({beyond / floor:.2f}x): orchestration, preparation")
    if EXCHANGE in counts and "asend" in counts:
        asend, least = counts["asend"], counts[EXCHANGE]
        lines.append(f"asend is {asend - least:,.0f} ({asend / least:.2f}x) beside the floor's own exchange")
    if "metis-core" in counts:
        verdict = against_budget(counts["metis-core"], TARGET_RATIO * floor)
        lines.append(f"metis-core is {verdict} {TARGET_RATIO:g}x the floor's instructions")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.call_instructions", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--provider", default="openai", choices=("anthropic", "openai"))
    parser.add_argument("--async", dest="use_async", action="store_true", help="acomplete against raw aiohttp")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--inside", default="", help=argparse.SUPPRESS)
    parser.add_argument("--server", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    from bench import environment

    environment.prepare_process_environment()
    if args.inside:
        _counted(args.server, args.inside, args.provider, args.use_async, args.calls)
        return 0
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    from bench.figures import AIOHTTP_FLOOR, FLOOR
    from bench.server import serve_in_process

    floor_name = AIOHTTP_FLOOR if args.use_async else FLOOR
    subjects = [floor_name, "metis-core", *(ASYNC_STAGES if args.use_async else STAGES), HANDWRITTEN,
                *([EXCHANGE] if args.use_async else [])]
    counts: dict[str, float] = {}
    with serve_in_process() as server:
        for subject in subjects:
            counts[subject] = count(server, subject, args.provider, args.use_async, args.calls)
    mode = "async" if args.use_async else "sync"
    print(f"non-streaming call · {args.provider} · {mode}, {args.calls} calls per subject")
    print("\n".join(report(counts, floor_name)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
