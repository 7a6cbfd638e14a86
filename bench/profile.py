"""Where metis-core's time goes on a benchmark row, sampled with pyinstrument.

A missed target should come with a profile; this is the command that makes one, on
exactly the work the suite times and against the same local server:

    python -m bench.profile call --provider openai [--async]   # the 40-message non-streaming call
    python -m bench.profile stream --provider gemini            # one 2,000-event stream
    python -m bench.profile startup                             # cold import + first answer

Prints pyinstrument's call tree (metis-core's frames; library internals collapsed) and writes an
HTML report to bench/results/profiles/. Runs under bench/.venv like the suite unless `--here`.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import environment

PROFILES_DIR = environment.REPO_ROOT / "bench" / "results" / "profiles"
INTERVAL_S = 0.0001
"""Sampling interval: 0.1 ms, fine enough for a call of a few hundred microseconds."""
TARGETS = ("call", "stream", "startup")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", choices=TARGETS)
    parser.add_argument("--provider", default="openai", help="wire format to call (default: openai)")
    parser.add_argument("--async", dest="use_async", action="store_true", help="profile acomplete / astream")
    parser.add_argument("--repeat", type=int, default=0, help="calls or streams to sample (default: 2000 / 20)")
    parser.add_argument("--here", action="store_true", help="run in the current interpreter")
    return parser.parse_args(argv)


def _repeat(args: argparse.Namespace) -> int:
    return args.repeat or (2000 if args.target == "call" else 20)


def profile_calls(server: str, args: argparse.Namespace) -> Any:
    """Profile the suite's timed call (or stream) `repeat` times, after a warm-up; returns the Profiler."""
    from pyinstrument import Profiler

    from bench.peers.metis import MetisCaller

    caller = MetisCaller(server)
    provider, repeat = args.provider, _repeat(args)
    streaming = args.target == "stream"
    profiler = Profiler(interval=INTERVAL_S)
    try:
        if args.use_async:
            async def run() -> None:
                action = caller.astream if streaming else caller.acomplete
                for _ in range(max(1, repeat // 10)):
                    await action(provider)
                profiler.start()
                for _ in range(repeat):
                    await action(provider)
                profiler.stop()

            asyncio.run(run())
        else:
            action = caller.stream if streaming else caller.complete
            for _ in range(max(1, repeat // 10)):
                action(provider)
            profiler.start()
            for _ in range(repeat):
                action(provider)
            profiler.stop()
    finally:
        caller.close()
    return profiler


def profile_startup(server: str) -> str:
    """pyinstrument over bench/coldstart.py's metis run, in a fresh interpreter; returns the text report."""
    from bench.scenarios import call_answer

    command = [sys.executable, "-m", "pyinstrument", "--interval", str(INTERVAL_S), "-r", "text",
               "-m", "bench.coldstart", "metis", server, call_answer().text]
    done = subprocess.run(command, cwd=environment.REPO_ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"profiling the cold start failed: {done.stderr.strip()[-400:]}")
    return done.stdout


def report_path(args: argparse.Namespace) -> Path:
    mode = "async" if args.use_async else "sync"
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    return PROFILES_DIR / f"{args.target}-{args.provider}-{mode}-{stamp}.html"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if not args.here and not environment.inside_bench_venv():
        environment.ensure_venv()
        environment.prepare_process_environment()
        python = str(environment.venv_python())
        return subprocess.call([python, "-m", "bench.profile", *argv], cwd=environment.REPO_ROOT)
    environment.prepare_process_environment()
    environment.compile_bytecode()
    from bench.server import serve_in_process

    with serve_in_process() as server:
        if args.target == "startup":
            print(profile_startup(server))
            return 0
        profiler = profile_calls(server, args)
    print(profiler.output_text(unicode=True, color=False))
    path = report_path(args)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(profiler.output_html())
    print(f"HTML report: {path.relative_to(environment.REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
