"""docs/performance.md, generated from bench/results/latest.json: method, versions, meanings, figures.

Everything on the page comes from the JSON or from the fixed text below; edit this module (not
the page) to change the wording. It does not measure anything and does not judge peers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.history import RowHistory, judged_rows, same_code_runs, tree_of
from bench.report import format_ratio, format_value, verdict

DOC = Path(__file__).resolve().parent.parent / "docs" / "performance.md"
CASE_ORDER = ("startup", "cli", "call", "stream", "translate", "cost", "store", "chain", "learning", "gateway",
              "structured", "serve")

METHOD = """\
Run it with `make bench` (the same as `.venv/bin/python -m bench`). The first run builds
`bench/.venv` from `bench/requirements.txt` (the peers are never metis-core dependencies) and
re-runs itself there. `python -m bench --only stream,translate` runs a subset (it replaces those
cases in `latest.json`); `--quick` is a smoke run with small sizes whose results are not published.

- **No real provider is called.** A local HTTP/1.1 server on 127.0.0.1 (`bench/server.py`,
  keep-alive, its own process so it never competes for the measured process's GIL) answers in
  each provider's exact wire format: Anthropic Messages, OpenAI Chat Completions and Responses,
  Gemini `generateContent` / `streamGenerateContent?alt=sse`, Ollama `/api/chat` NDJSON and
  OpenRouter. Every response is prebuilt; streams go out as one HTTP chunk per event.
- **Every implementation sends the same conversation**: 40 messages (system prompt, nine cycles
  of question / text + tool call / tool result / answer, then a last question, call and result)
  with three tools, each in its own library's types. Peers are pointed at the server with their
  base-URL option.
- **Every result is checked**: the parsed text, the tool call's name and arguments and the token
  usage of every timed call, stream and cost, peers included. A wrong answer voids the case.
- **Noise**: implementations compared on one row run in alternating blocks; each call is timed
  alone and the figure is the median. Ratios are to the floor measured in the same run. Where
  runs pair up (calls: each round of blocks; cold start: each round of fresh interpreters), the
  ratio is followed by the quartiles of the round-by-round ratios, e.g. `1.44x (1.38–1.52)`: the
  middle half of what the machine's state did to it during the run. Targets are judged on the
  median ratio alone. Every run is kept with the git tree of `metis_core/` it measured; "Run to
  run" below sets the latest runs of the same code side by side, for the rows that missed in any.
- **The floor** is what the work costs with nothing but the HTTP client and orjson: a prebuilt request
  body posted with raw httpx (sync calls) or raw aiohttp (async calls) and the answer read straight
  out of the JSON (calls); a minimal SSE / NDJSON line reader with one JSON parse per event
  (streams); a hand-written dict mapping of the same conversation (translation); `import httpx,
  orjson` (cold start).
- **The peers**, each called the way its documentation shows: the official `openai` SDK
  (`chat.completions.create`, `.stream()` helper) and `anthropic` SDK (`messages.create`,
  `messages.stream()`); LiteLLM `completion` / `acompletion` with OpenAI-format messages, streams
  assembled with `stream_chunk_builder`; Pydantic AI's direct model API (`model_request`,
  `model_request_stream_sync`), not an Agent, which would run the tool and call the model again.
  LiteLLM is installed with `--no-deps` (its certifi pin cannot be met on this registry; see
  `bench/requirements.txt`) and reads its bundled price map, never the remote one.
- **Bytecode**: before a run the suite byte-compiles `metis_core` (`compileall`), as `pip install`
  does for every installed package, peers included; the editable checkout would otherwise be
  recompiled from source on each cold start (~40 ms) where `PYTHONDONTWRITEBYTECODE=1` is set.
- **Cold start, read with its reference line**: "floor + pydantic (reference)" is `import httpx,
  orjson, pydantic` and one model class, the least any client typed with pydantic models can
  cost (pydantic imports its schema machinery, `importlib.metadata` for plugins, `zoneinfo`,
  `annotated_types` ...). metis-core's own share is the distance from that line to its row: its
  own modules, pydantic models and dataclasses. Kept cheap by default factories that are Python
  functions (pydantic inspects each factory's signature; a builtin's costs a tokenizer compile),
  runtime annotations in the model modules (no string evaluation), plain slotted classes for
  internal records and error patterns compiled on first error. Nothing is deferred past import
  that a call needs, so the first-answer row moves with the import row.
- **First call, in CPU time** (target: at most 10 ms over the floor's): the startup case's row
  "first call after the imports, CPU" (target `<= floor + 10 ms`), and in more detail
  `python -m bench.first_call_cpu`, which runs the floor and metis-core's `ModelClient.complete` in
  turns, each in a fresh interpreter against one local server, and reports median process CPU time
  (unmoved by other processes on the cores, unlike wall time), whole and split into the imports and
  the first call after them. Both run in bench/.venv. Never measure it in the development `.venv`:
  selenium brings trio there, httpcore imports trio whenever it is installed, and the floor's first
  call (creating an httpx client) tripled to ~120 ms of CPU in a run made there.
  The first call does only what it uses: the bundled models.yaml and prices.yaml are checked once
  and then built from their checked prepared form without validating (`prepared_data.load_checked`);
  prices and registry entries are plain immutable values (`plain_values.PlainValue`: a frozen
  dataclass's equality, hash and repr without compiling methods at import), and their pydantic
  schemas (`models/price_schema.py`, `models/registry_schema.py`) load only to validate a user's
  `prices:` or `models:`; a price is made on its model's first lookup; named-provider DSN parsing
  (`provider_dsn.py`) loads only for a name that is not built in; config and ModelInfo models build
  their schemas on first validation (`defer_build`), and a missing or empty config.yaml validates
  nothing; config's agent sections (MCP, delegation, memory, skills) load only when the file has
  them. tests/test_cold_start.py checks that a first call imports none of the modules it does not
  use (YAML, difflib, the agent, stores, the price and registry schemas ...) and builds none of
  those schemas.
- **Calls, read with their reference line**: "floor + per-call mapping (reference)" posts with the
  floor's client but builds the body on every call from the canonical messages with the hand-written
  mapping, the least any library that keeps a canonical conversation must do per turn. Work done
  after each network wait costs more when the machine is busy (its caches are cold, the floor's
  wait is not), so this line moves with the machine's state during the run: on this machine it
  has measured from 1.05x to 1.39x of the floor. metis-core's distance from it is its checks (history
  repair, context-window fit, tool-id mapping, lossy-drop log) and its bookkeeping (usage, cost,
  validated Message). `python -m bench.stages` times those two stages (request build, response
  parse) hot, after an idle pause and inside the calls: inside, each costs two to three times its
  hot figure, so a change is judged by the in-call column. `python -m bench.call_instructions`
  counts the instructions of the floor's call, metis-core's and each of its stages under callgrind,
  a figure the machine's load does not move, with the distance to the 1.25x budget.
- **metis-core's HTTP path** is httpx, used with two savings the floor does not make: each URL is
  parsed once and reused, and the cookie jar runs only for responses that set a cookie (httpx
  otherwise copies every response's headers into an email message to look for one). Together
  ~100 µs a call on this machine (`metis_core/transport/clients.py`, `transport/http.py`);
  translation and parsing are measured on their own in the translate case.
- Only metis-core's figures are judged against the targets in bench/figures.py; peers are shown for scale.
"""

MEANINGS = {
    "startup": "Cold start. *Import*: wall time of the imports a call needs, in a fresh interpreter "
               "(metis-core: the client plus the Anthropic and OpenAI adapters); its target is the "
               "\"floor + pydantic (reference)\" line of the same run. *First answer*: from the first "
               "import to the checked answer of one call, so work deferred past import still counts. "
               "*RSS*: resident memory after those imports, client setup and one checked call (so lazily "
               "loaded parts count).",
    "cli": "The command line's cold start: wall time of `metis --help` and `llm --help` in fresh processes, "
           "against the interpreter starting and doing nothing; target: `metis --help` <= 150 ms.",
    "call": "One non-streaming call with the 40-message tool conversation to the local server, median "
            "per call over 200 calls in alternating blocks of 20, after 15 warm-up calls (a peer slower than "
            "8 s per row stops early, with at least 3 calls); Anthropic and OpenAI wire, sync and async. "
            "The sync rows' floor posts with raw httpx; the async rows' floor posts the same body with raw "
            "aiohttp, the client metis-core's own async calls ride (docs/transport.md), and the raw httpx "
            "AsyncClient stays beside it for comparison. Target: <= 1.25x the row's floor.",
    "stream": "A 2,000-event stream (text fragments, a tool call whose JSON arrives in 200 pieces, usage) "
              "consumed into events and a final message; wire events per second (2,000 / median seconds of "
              "10 streams, after one warm-up; a peer slower than 12 s stops at 3). Gemini and Ollama send the "
              "call whole. Peers use their own stream accumulators (SDK stream helpers, LiteLLM "
              "`stream_chunk_builder`, Pydantic AI's streamed response).",
    "translate": "Canonical -> wire request body for the 40-message conversation (`adapter.to_wire`), "
                 "against a hand-written mapping of the same messages (`bench/handwritten.py`).",
    "cost": "Pricing one response's usage. The shared row checks every library returns $0.012207 for "
            "1,234 input and 567 output tokens of claude-sonnet-4-5.",
    "store": "Trace store insert p95 (one event per committed transaction), events/s from the bus into "
             "the trace store, the bus alone, and loading a 10,000-message session from SQLite "
             "(WAL, synchronous=NORMAL).",
    "chain": "What a FallbackChain adds to a call whose first member answers: difference of medians, "
             "both over an in-process httpx MockTransport so the socket's noise does not swamp it; a few "
             "microseconds either way (even below zero) means the overhead is lost in the noise.",
    "learning": "Pattern routing against always the strong and always the cheap model: 200 scripted "
                "sessions after 50 of history, through the real runtime, routing, agent loop and learning "
                "layer over an in-process transport; target: within 5 points of strong's success rate at "
                "<= 60 % of its cost (bench/cases/learning.py).",
    "gateway": "The same upstream reached directly, through the pass-through floor (the gateway's own "
               "Starlette/uvicorn stack forwarding bytes with aiohttp, as the gateway's upstream calls go), "
               "through `metis gateway` and through the LiteLLM proxy, each its own process: added latency "
               "p50/p99 per call and added time to first byte (sequential, alternating blocks), requests/s at "
               "64 concurrent clients from an aiohttp load generator (bench/load.py; the servers' windows "
               "alternate, four rounds each, and each server's figure is its median round; the gateway's "
               "calls count once answered and recorded: each of its windows runs until its record has caught "
               "up), and each server's CPU per request over its windows (from /proc); targets: p50 <= floor + 1 ms, "
               "throughput >= 0.5x the floor's and >= 3x LiteLLM's.",
    "structured": "Validating a 2 KB structured answer (`metis_core.structured.validation.validate_answer`) "
                  "against pydantic's own `model_validate_json` on the same answer; recovery rows (fence and "
                  "prose, json-repair) are reported, not judged.",
    "serve": "Events/s from the bus into the trace store while `metis serve` runs on 127.0.0.1, with no "
             "WebSocket client and with one that subscribes to every event and never reads (dropped once "
             "its 1,000-event queue is full); bursts of 5,000 events, flushed after each.",
}


def _table(figures: list[dict[str, Any]]) -> list[str]:
    lines = ["| row | implementation | value | vs floor | target | result |", "|---|---|---:|---:|---|:---:|"]
    previous = None
    for figure in figures:
        row = figure["row"] if figure["row"] != previous else ""
        previous = figure["row"]
        impl = f"**{figure['impl']}**" if figure["impl"] == "metis-core" else figure["impl"]
        target = figure["target"] or "" if figure["impl"] == "metis-core" else ""
        ratio = format_ratio(figure["ratio"], figure.get("spread"))
        lines.append(f"| {row} | {impl} | {format_value(figure['value'], figure['unit'])} | "
                     f"{ratio} | {target} | {verdict(figure['passed'])} |")
    return lines


def _run_to_run(runs: list[dict[str, Any]]) -> list[str]:
    """The judged rows that missed in any of these runs, run by run, with the median across them."""
    rows = judged_rows(runs)
    wavering = [row for row in rows if row.met < len(row.runs)]
    stamps = [run["timestamp"] for run in runs]
    lines = [
        "## Run to run",
        "",
        f"The last {len(runs)} runs of this metis-core code (git tree `{(tree_of(runs[-1]) or '')[:10]}` of "
        "`metis_core/`, no uncommitted edits), each figure from its own run and judged there (a miss in bold), "
        "with the median across the runs. Rows that met their target in every one of these runs: "
        f"{len(rows) - len(wavering)} of {len(rows)}.",
        "",
    ]
    if not wavering:
        return lines
    shown = [stamp[5:16].replace("T", " ") for stamp in stamps]  # MM-DD HH:MM, UTC
    lines += [f"| row | target | {' | '.join(shown)} | median | met |",
              f"|---|---|{'---:|' * len(stamps)}---:|---:|"]
    for row in wavering:
        cells = dict.fromkeys(stamps, "")
        for stamp, figure, passed in row.runs:
            text = _figure_text(row, figure)
            cells[stamp] = text if passed else f"**{text}**"
        lines.append(f"| {row.row} | {row.target} | {' | '.join(cells.values())} | "
                     f"{_figure_text(row, row.median)} | {row.met} of {len(row.runs)} |")
    return [*lines, ""]


def _figure_text(row: RowHistory, figure: float) -> str:
    return format_ratio(figure) if row.judged_on_ratio else format_value(figure, row.unit)


def render(result: dict[str, Any], runs: list[dict[str, Any]] | None = None) -> str:
    """The page for `result`; `runs` (oldest first, `result` last) adds the run-to-run section."""
    figures = sorted(result["figures"], key=lambda f: CASE_ORDER.index(f["case"]) if f["case"] in CASE_ORDER else 99)
    judged = [f for f in figures if f["passed"] is not None]
    missed = [f for f in judged if not f["passed"]]
    machine = result["machine"]
    out = [
        "# Performance",
        "",
        "<!-- Generated by `python -m bench` from bench/results/latest.json; edit bench/performance_doc.py. -->",
        "",
        f"Figures from {result['timestamp']} on {machine['cpus']} cores ({machine['platform']}, "
        f"Python {machine['python']}); the run took {result['duration_s']:.0f} s. "
        f"{len(judged) - len(missed)} of {len(judged)} metis-core targets met.",
        "",
        "## Method",
        "",
        METHOD,
        "## Versions",
        "",
        "| package | version |",
        "|---|---|",
        *[f"| {name} | {value} |" for name, value in result["versions"].items()],
        "",
        "## What each figure means",
        "",
        *[f"- **{case}** — {MEANINGS[case]}" for case in CASE_ORDER if any(f["case"] == case for f in figures)],
        "",
        "## Figures",
        "",
        *_table(figures),
        "",
    ]
    if missed:
        out += ["## Targets missed", ""]
        out += [f"- {f['row']}: {format_value(f['value'], f['unit'])} "
                f"({format_ratio(f['ratio'], f.get('spread'))}), target {f['target']}" for f in missed]
        out.append("")
    if runs and len(runs) > 1:
        out += _run_to_run(runs)
    if result.get("failures"):
        out += ["## Cases that failed in this run", ""]
        out += [f"- {f['case']}: {f['error']}" for f in result["failures"]]
        out.append("")
    if result.get("missing"):
        out += ["## Left out", ""]
        out += [f"- {name}: {reason}" for name, reason in result["missing"].items()]
        out.append("")
    return "\n".join(out)


def write(latest: Path, doc: Path = DOC) -> Path:
    """Regenerate the page from latest.json and the kept runs beside it."""
    result = json.loads(latest.read_text())
    doc.write_text(render(result, same_code_runs(result, latest.parent)))
    return doc
