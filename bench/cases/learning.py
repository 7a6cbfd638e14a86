"""Pattern routing against "always the strong model" and "always the cheap model".

Scripted sessions with known outcomes, run through the real stack in-process (Runtime, routing,
the agent loop, the learning layer) over an httpx MockTransport that answers Anthropic's stream
wire format with usage sized to the task. Five task kinds, one message each, in the proportions
of MIX (80 % simple); the cheap model (claude-haiku-4-5) succeeds on the three simple kinds
nearly as often as the strong one (claude-opus-4-6) and rarely on the other two. Success is
drawn once per session (same draws for every policy); the scripted user says /good or /bad
accordingly, which is what the evaluator scores.

History: 50 sessions where the user alternated the two models (@model per message). Then each
policy runs the same evaluation sessions: always strong, always cheap, and pattern routing
(default strong, the pattern slot choosing once confident, still learning as it goes).
Target: pattern routing within 5 points of strong's success rate at <= 60 % of its cost.
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import tempfile
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import httpx

from bench.context import RunContext
from bench.figures import METIS, Figure, Target
from metis_core.adapters.client import ModelClient
from metis_core.agent.runtime import Runtime
from metis_core.events.bus import EventBus
from metis_core.learning.loop import LearningLoop
from metis_core.transport.retry import RetryPolicy

STRONG, CHEAP = "anthropic:claude-opus-4-6", "anthropic:claude-haiku-4-5"
HISTORY_SESSIONS = 50
KINDS = {
    # kind: (prompts, output tokens, P(success | strong), P(success | cheap)); frequencies in MIX
    "summary": (["Summarize these meeting notes in three bullets", "Summarize the release notes for users",
                 "Summarize this thread briefly"], 180, 0.96, 0.93),
    "translation": (["Translate this paragraph into French", "Translate the error message into German",
                     "Translate the menu labels into Spanish"], 220, 0.97, 0.95),
    "listing": (["List the files a Python package needs", "List five test cases for a date parser",
                 "List the steps to rotate a key"], 150, 0.98, 0.96),
    "proof": (["Prove that the sum of two even numbers is even", "Prove the loop invariant of binary search",
               "Prove that the algorithm terminates"], 700, 0.9, 0.25),
    "refactor": (["Refactor this module to remove the global state", "Refactor the parser into a class",
                  "Refactor the retry logic to be testable"], 900, 0.88, 0.2),
}
MIX = {"summary": 3, "translation": 2, "listing": 3, "proof": 1, "refactor": 1}
"""How often each kind comes up: most interactive requests are the simple kinds (80 % here)."""


@dataclass
class Tally:
    sessions: int = 0
    successes: int = 0
    cost: Decimal = Decimal(0)

    @property
    def success_rate(self) -> float:
        return 100.0 * self.successes / self.sessions if self.sessions else 0.0


def _stream(output_tokens: int, input_tokens: int) -> bytes:
    events = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_bench", "type": "message", "role": "assistant", "model": "bench", "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "Here is the result."}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": output_tokens}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def _transport() -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        text = json.dumps(body["messages"])
        kind = next(k for k, (prompts, *_) in KINDS.items() if any(p in text for p in prompts))
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=_stream(KINDS[kind][1], 400 + len(text) // 4))
    return httpx.MockTransport(answer)


def _runtime(home: Path, learning: bool) -> Runtime:
    transport = _transport()
    client = ModelClient(http_client=httpx.Client(transport=transport),
                         async_http_client=httpx.AsyncClient(transport=transport),
                         base_urls={"anthropic": "http://bench.local"}, api_keys={"anthropic": "sk-bench-not-a-key"},
                         retry=RetryPolicy(max_retries=0))
    runtime = Runtime(home=home, client=client, bus=EventBus(mode="strict"), configured_providers={"anthropic"})
    if learning:
        LearningLoop.attach(runtime)
    return runtime


def _plan(count: int, seed: int) -> list[tuple[str, str, float]]:
    """(kind, prompt, luck) per session; luck < P(success | model) means the answer was right."""
    rng = random.Random(seed)
    kinds = rng.choices(list(MIX), weights=list(MIX.values()), k=count)
    return [(kind, rng.choice(KINDS[kind][0]), rng.random()) for kind in kinds]


async def _session(runtime: Runtime, workspace: Path, plan: tuple[str, str, float], *, model: str | None,
                   override: str | None, tally: Tally) -> None:
    kind, prompt, luck = plan
    session = runtime.sessions.create(workspace, model=model)
    result = await runtime.turns.run(session, prompt, override=override)
    if result.error:
        raise RuntimeError(f"bench turn failed: {result.error}")
    served = result.model or ""
    chance = KINDS[kind][2] if served == STRONG else KINDS[kind][3]
    success = luck < chance
    if runtime.learning is not None:
        runtime.learning.feedback.rate(session.id, "up" if success else "down")
    runtime.sessions.end(session)
    runtime.bus.flush()
    tally.sessions += 1
    tally.successes += success
    tally.cost += result.cost_usd


async def _run_policy(home: Path, workspace: Path, plans: list[tuple[str, str, float]], policy: str) -> Tally:
    runtime = _runtime(home, learning=policy == "pattern")
    tally = Tally()
    try:
        for plan in plans:
            model = {"strong": STRONG, "cheap": CHEAP}.get(policy)
            await _session(runtime, workspace, plan, model=model, override=None, tally=tally)
    finally:
        runtime.close()
    return tally


async def measure(evaluation_sessions: int) -> dict[str, Tally]:
    root = Path(tempfile.mkdtemp(prefix="metis-bench-learning-"))
    try:
        workspace = root / "workspace"
        workspace.mkdir()
        seeded = root / "seeded"
        seeded.mkdir()
        (seeded / "routing.yaml").write_text(f"default: {STRONG}\n")
        runtime = _runtime(seeded, learning=True)
        try:
            for index, plan in enumerate(_plan(HISTORY_SESSIONS, seed=20)):
                await _session(runtime, workspace, plan, model=None, override=CHEAP if index % 2 else STRONG,
                               tally=Tally())
        finally:
            runtime.close()
        plans = _plan(evaluation_sessions, seed=2026)
        results: dict[str, Tally] = {}
        for policy in ("strong", "cheap", "pattern"):
            home = root / policy
            shutil.copytree(seeded, home)
            results[policy] = await _run_policy(home, workspace, plans, policy)
        return results
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(ctx: RunContext) -> list[Figure]:
    count = 20 if ctx.quick else 200
    results = asyncio.run(measure(count))
    strong = results["strong"]
    names = {"strong": f"always strong ({STRONG})", "cheap": f"always cheap ({CHEAP})", "pattern": METIS}
    figures: list[Figure] = []
    for policy, tally in results.items():
        success = Figure("learning", f"success rate · {count} sessions after {HISTORY_SESSIONS} of history",
                         names[policy], tally.success_rate, "%", tally.sessions, higher_is_better=True)
        cost = Figure("learning", f"total cost · {count} sessions after {HISTORY_SESSIONS} of history",
                      names[policy], float(tally.cost), "USD", tally.sessions)
        if policy == "pattern":
            success.target = Target("min", round(strong.success_rate - 5.0, 2))
            cost.target = Target("max", round(float(strong.cost) * 0.6, 6))
            share = float(tally.cost / strong.cost) * 100 if strong.cost else 0.0
            cost.note = f"{share:.0f} % of always-strong"
        figures += [success, cost]
    return figures
