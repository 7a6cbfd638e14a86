"""First call of a fresh process in CPU time, metis-core against the floor, for a loaded machine.

`python -m bench.first_call_cpu [--runs 21]` runs bench/coldstart.py's `floor` (httpx posting a
prebuilt body) and `metis` (ModelClient.complete) in turns, each in a fresh interpreter against one
local server, and prints the median CPU time (user + system) of each and their difference: of the
whole process (getrusage of the finished child), and split by the child into the imports a call
needs and the first call after them (setup and one call). CPU time, unlike wall time, barely moves
when other processes share the cores, so it measures the first-call target (first call <= 10 ms over
the floor) where the suite's wall-clock row cannot.

It measures with bench/.venv's interpreter, as the suite does (built on first use): a virtualenv
holding metis-core, its runtime dependencies and the peers. Not the development .venv: selenium (for
the web-view tests) brings trio into it, and httpcore imports trio whenever it is installed, which
tripled the floor's first call (~120 ms of CPU for creating an httpx client) in a run made there.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess

from bench import environment
from bench.scenarios import call_answer
from bench.server import REPO_ROOT, serve_in_process

IMPLS = ("floor", "metis")


ROWS = {"process": "whole process (interpreter, imports, setup, call)", "cpu_import_ms": "imports a call needs",
        "cpu_call_ms": "first call (setup + one call, after the imports)"}


def child_cpu_ms(python: str, impl: str, server: str, expected: str, env: dict[str, str]) -> dict[str, float]:
    """One fresh process: its whole CPU time (getrusage of the child) and coldstart's own import/call split."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([python, "-m", "bench.coldstart", impl, server, expected], cwd=REPO_ROOT, env=env,
                          check=True, capture_output=True, text=True, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    split = json.loads(done.stdout.strip().splitlines()[-1])
    process = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1000
    return {"process": process, "cpu_import_ms": split["cpu_import_ms"], "cpu_call_ms": split["cpu_call_ms"]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.first_call_cpu", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=21, help="fresh processes per implementation (default 21)")
    parser.add_argument("--python", default=None, help="interpreter to measure (default: bench/.venv's)")
    args = parser.parse_args(argv)
    if args.python is None:
        environment.ensure_venv()
        args.python = str(environment.venv_python())
    expected = call_answer().text
    environment.compile_bytecode()  # as the suite does: an installed copy never compiles from source
    environment.prepare_process_environment()  # the suite's settings and an empty METIS_HOME
    env = dict(os.environ)
    samples: dict[str, list[dict[str, float]]] = {impl: [] for impl in IMPLS}
    with serve_in_process(args.python) as server:
        for impl in IMPLS:  # warm-up: page cache, prepared data, bytecode
            child_cpu_ms(args.python, impl, server, expected, env)
        for index in range(args.runs):
            for impl in IMPLS[index % 2:] + IMPLS[: index % 2]:
                samples[impl].append(child_cpu_ms(args.python, impl, server, expected, env))
    print(f"CPU ms, median of {args.runs} fresh processes each (min-max):")
    for key, label in ROWS.items():
        medians = {}
        for impl in IMPLS:
            values = [run[key] for run in samples[impl]]
            medians[impl] = statistics.median(values)
            print(f"  {label:50} {impl:6} {medians[impl]:7.1f}  ({min(values):.1f}-{max(values):.1f})")
        print(f"  {'':50} {'over':6} {medians['metis'] - medians['floor']:7.1f}")


if __name__ == "__main__":
    main()
