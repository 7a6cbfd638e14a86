"""`python -m bench`: run the suite (or part of it) and print, store and publish the figures.

Re-executes itself inside bench/.venv (building it on first use) unless `--here` is given, starts
the local provider server in its own process, loads metis-core, the floor and every installed
peer, runs the chosen cases in order, and writes bench/results/ and docs/performance.md. A case
that fails (including a wrong answer from any implementation) is reported and the run goes on.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import logging
import platform
import sys
import time
import traceback
import warnings
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from bench import environment

CASES = ("startup", "cli", "call", "stream", "translate", "cost", "store", "chain", "learning", "gateway",
         "structured", "serve")
CASE_MODULES = {
    "startup": "bench.cases.startup",
    "cli": "bench.cases.cli",
    "call": "bench.cases.calls",
    "stream": "bench.cases.streaming",
    "translate": "bench.cases.translation",
    "cost": "bench.cases.cost",
    "store": "bench.cases.storage",
    "chain": "bench.cases.chain",
    "learning": "bench.cases.learning",
    "gateway": "bench.cases.gateway",
    "structured": "bench.cases.structured",
    "serve": "bench.cases.serve",
}
VERSIONED = ("metis-core", "httpx", "orjson", "pydantic", "pydantic-core", "openai", "anthropic", "litellm",
             "pydantic-ai-slim", "genai-prices", "httpx2", "aiohttp", "rich", "llm", "typer")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--only", default="", help=f"comma-separated cases to run, from: {', '.join(CASES)}")
    parser.add_argument("--quick", action="store_true", help="small sizes, for smoke testing (results not published)")
    parser.add_argument("--here", action="store_true",
                        help="run in the current interpreter (peers that are not installed are left out)")
    parser.add_argument("--no-docs", action="store_true", help="do not regenerate docs/performance.md")
    args = parser.parse_args(argv)
    chosen = [c.strip() for c in args.only.split(",") if c.strip()]
    unknown = sorted(set(chosen) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(CASES)}")
    args.cases = [c for c in CASES if c in chosen] if chosen else list(CASES)
    return args


def package_versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def quiet_libraries() -> None:
    warnings.filterwarnings("ignore")
    for name in ("LiteLLM", "litellm", "httpx", "openai", "anthropic", "pydantic_ai", "metis_core"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def run_cases(args: argparse.Namespace) -> dict[str, Any]:
    from bench.context import RunContext
    from bench.server import serve_in_process

    started = time.perf_counter()
    figures: list[dict[str, Any]] = []
    failures: list[dict[str, str]] = []
    with serve_in_process() as server:
        ctx = RunContext(server=server, quick=args.quick)
        ctx.load_peers()
        for case in args.cases:
            print(f"running {case}...", flush=True)
            case_started = time.perf_counter()
            try:
                module = importlib.import_module(CASE_MODULES[case])
                figures += [f.to_json() for f in module.run(ctx)]
            except Exception as error:  # one broken case must not cost the others their figures
                failures.append({"case": case, "error": f"{type(error).__name__}: {error}",
                                 "traceback": traceback.format_exc()})
            print(f"  {case} took {time.perf_counter() - case_started:.1f} s", flush=True)
    return {
        "timestamp": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "quick": args.quick,
        "only": args.cases != list(CASES),
        "cases": args.cases,
        "duration_s": time.perf_counter() - started,
        "machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                    "cpus": __import__("os").cpu_count()},
        "versions": package_versions(),
        "code": environment.code_identity(),
        "missing": ctx.missing,
        "failures": failures,
        "figures": figures,
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if not args.here and not environment.inside_bench_venv():
        environment.reexec_in_venv(argv)  # does not return
    environment.prepare_process_environment()
    environment.compile_bytecode()
    quiet_libraries()
    from bench import performance_doc, report

    result = run_cases(args)
    report.print_table(result)
    path = report.write_json(result)
    print(f"results written to {path.relative_to(environment.REPO_ROOT)}")
    if not args.quick and not args.no_docs:
        page = performance_doc.write(report.RESULTS_DIR / "latest.json")
        print(f"{page.relative_to(environment.REPO_ROOT)} regenerated from bench/results/latest.json")
    return 1 if result["failures"] else 0
