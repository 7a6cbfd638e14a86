"""metis-core's two CPU stages of a call, timed hot, after an idle pause, and inside real calls.

Around the HTTP exchange a call does two pieces of work of its own: building the request
(`ModelClient._prepare`: the history checks, the wire mapping, serialization) and parsing the
answer (`Adapter.from_wire_response`). Repeated back to back they look cheap; inside real calls
they run two to three times slower, because the wait for the server and httpx's own exchange
(h11, httpcore) push them out of the CPU caches. The call rows measure the in-call cost, so an
optimization counts only if the in-call column moves; a hot micro-benchmark can show a gain the
suite never sees. This prints each stage three ways, with the floor's and metis-core's whole call
from the same loop:

    python -m bench.stages [--provider openai] [--calls 2000]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from bench import environment

IDLE_S = 0.0003
"""About as long as the floor waits for the local server's answer."""
STAGES = ("request build", "response parse")


@contextlib.contextmanager
def _timed(owner: type, name: str, label: str, out: dict[str, list[float]]) -> Iterator[None]:
    """Record each call of `owner.name` under `label` while inside; the original is put back after."""
    original = owner.__dict__[name]
    clock = time.perf_counter

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = clock()
        try:
            return original(*args, **kwargs)
        finally:
            out[label].append(clock() - start)

    setattr(owner, name, timed)
    try:
        yield
    finally:
        setattr(owner, name, original)


def _repeat(stage: Callable[[], Any], runs: int, pause: float) -> list[float]:
    clock = time.perf_counter
    samples = []
    for _ in range(runs):
        if pause:
            time.sleep(pause)
        start = clock()
        stage()
        samples.append(clock() - start)
    return samples


def _in_calls(metis: Any, floor: Any, provider: str, calls: int) -> dict[str, list[float]]:
    """Stage and whole-call seconds inside `calls` real calls of each, interleaved as the suite runs them."""
    from metis_core.adapters.client import ModelClient

    samples: dict[str, list[float]] = {stage: [] for stage in STAGES} | {"floor": [], "metis": []}
    for _ in range(max(20, calls // 10)):  # warm-up, untimed
        floor.complete(provider)
        metis.complete(provider)
    adapter_class = type(metis.client.adapter(provider))
    clock = time.perf_counter
    with (
        _timed(ModelClient, "_prepare", STAGES[0], samples),
        _timed(adapter_class, "from_wire_response", STAGES[1], samples),
    ):
        for _ in range(calls):
            for name, caller in (("floor", floor), ("metis", metis)):
                start = clock()
                caller.complete(provider)
                samples[name].append(clock() - start)
    return samples


def _stages_alone(metis: Any, provider: str, runs: int) -> dict[str, Callable[[], Any]]:
    """Each stage as a function on the suite's conversation, and on one real answer of the server."""
    from bench.peers.metis import options_for
    from metis_core.adapters._common.tool_ids import ToolIdMap
    from metis_core.adapters.base import RequestContext

    client, options = metis.client, options_for(provider)
    adapter = client.adapter(provider)
    call = client._prepare(metis.messages, None, metis.tools, options, ToolIdMap(), "", None, None, False)
    response = client._transport.send(call.request.method, call.url, call.body, client._headers(call),
                                      provider=provider)
    # Fresh id maps and contexts for every run, as each real call makes them, made off the clock.
    maps = iter([ToolIdMap() for _ in range(2 * runs)])
    contexts = iter([RequestContext(model=call.context.model, tool_ids=ToolIdMap(), prices=call.context.prices)
                     for _ in range(2 * runs)])

    def build() -> Any:
        return client._prepare(metis.messages, None, metis.tools, options, next(maps), "", None, None, False)

    def parse() -> Any:
        return adapter.from_wire_response(response, next(contexts))

    return {STAGES[0]: build, STAGES[1]: parse}


def measure(server: str, provider: str, calls: int) -> dict[str, dict[str, float]]:
    """Median µs: {"hot" | "idle" | "in-call": {stage: µs}, "calls": {"floor": µs, "metis": µs}}."""
    from bench.peers.floor import FloorCaller
    from bench.peers.metis import MetisCaller

    metis, floor = MetisCaller(server), FloorCaller(server)
    try:
        in_calls = _in_calls(metis, floor, provider, calls)
        runs = max(50, calls // 2)
        stages = _stages_alone(metis, provider, runs)
        return {
            "hot": {name: _median_us(_repeat(stage, runs, 0.0)) for name, stage in stages.items()},
            "idle": {name: _median_us(_repeat(stage, runs, IDLE_S)) for name, stage in stages.items()},
            "in-call": {stage: _median_us(in_calls[stage]) for stage in STAGES},
            "calls": {name: _median_us(in_calls[name]) for name in ("floor", "metis")},
        }
    finally:
        metis.close()
        floor.close()


def _median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def render(provider: str, result: dict[str, dict[str, float]]) -> str:
    lines = [f"metis-core's own stages of one {provider} call (median µs)",
             f"{'stage':<16}{'hot':>9}{'idle':>9}{'in-call':>9}{'in-call / hot':>15}"]
    for stage in STAGES:
        hot, idle, in_call = (result[state][stage] for state in ("hot", "idle", "in-call"))
        lines.append(f"{stage:<16}{hot:>9.1f}{idle:>9.1f}{in_call:>9.1f}{in_call / hot:>14.2f}x")
    floor, metis = result["calls"]["floor"], result["calls"]["metis"]
    lines.append(f"whole call: floor {floor:.0f} µs, metis-core {metis:.0f} µs ({metis / floor:.2f}x of the floor)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m bench.stages", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--provider", default="openai", choices=("anthropic", "openai"))
    parser.add_argument("--calls", type=int, default=2000, help="calls of each, interleaved (default: 2000)")
    parser.add_argument("--here", action="store_true", help="run in the current interpreter")
    args = parser.parse_args(argv)
    if not args.here and not environment.inside_bench_venv():
        environment.ensure_venv()
        environment.prepare_process_environment()
        return subprocess.call([str(environment.venv_python()), "-m", "bench.stages", *argv],
                               cwd=environment.REPO_ROOT)
    environment.prepare_process_environment()
    from bench.server import serve_in_process

    with serve_in_process() as server:
        print(render(args.provider, measure(server, args.provider, args.calls)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
