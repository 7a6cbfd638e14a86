"""Learning from a cold start: a store that only ever saw the strong model, `metis learn`, then routing.

`python -m bench.learning_cold [--sessions N] [--budget-usd X] [--seeds S,..] [--scenario project,mt-bench]`
runs, in-process over an httpx MockTransport (Anthropic's wire format, usage sized to the task):

1. history: N sessions on the strong model only, each answer rated /good or /bad by the scripted user;
2. `metis learn` (the library call) on the cheap model, capped by --budget-usd, an LLM judge (the
   cheap model, right 90 % of the time) scoring each replayed answer;
3. N sessions with pattern routing, exploration and verification by replay on (the cheap model
   judging), against the same N always on the strong model and the same N each sent to the model
   that suits its kind (the floor routing could reach); the routing cost includes learning's and
   verification's;
4. the same routing run again, with the cheap model's success on the kinds it suits dropping to
   DROPPED_SUCCESS halfway through: how many sessions until routing stops choosing it for them.

Whether an answer is right is drawn per session (the same draws for every policy), or, in a scenario
of recorded outcomes (mt-bench), is the model's recorded verdict on that question until the drop; it
shows in the answer's text, which is what the user and the judge read. The sessions hold the
scenario's mix exactly, in random order (--iid-mix draws each kind independently instead): with
independent draws the share of hard sessions in 200 wanders by several points from seed to seed,
and so does the cost of even perfect per-kind routing (56.6 % of always-strong at the project mix,
59-62 % on the draws of seeds 2026, 1, 2, 3), which measured the dice rather than the policy.
Scenarios: bench/learning_scenarios.py. Writes bench/results/learning-cold-<UTC>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx

from bench.learning_scenarios import Scenario, load_scenario
from bench.report import keep_named
from metis_core.adapters.client import ModelClient
from metis_core.agent.runtime import Runtime
from metis_core.events.bus import EventBus
from metis_core.learning.loop import LearningLoop
from metis_core.learning.replay_learning import ReplayLearner
from metis_core.learning.settings import LearningSettings
from metis_core.transport.retry import RetryPolicy

RIGHT, WRONG = "Here is the result.", "Here is a result with a mistake."
DROPPED_SUCCESS = 0.4
"""The cheap model's success on the kinds it suits after its quality drops."""
JUDGE_ACCURACY = 0.9


class Model:
    """The scripted provider: answers right or wrong by the session's draw, and judges answers."""

    def __init__(self, seed: int, scenario: Scenario) -> None:
        self.scenario = scenario
        self.luck = 0.0
        self.dropped = False
        self.rng = random.Random(seed)
        self.last_right = False

    def chance(self, kind: str, model: str) -> float:
        task = self.scenario.kinds[kind]
        if model == self.scenario.strong:
            return task.strong_success
        return DROPPED_SUCCESS if self.dropped and kind in self.scenario.suited else task.cheap_success

    def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        text = json.dumps(body["messages"]) + json.dumps(body.get("system", ""))
        if "You grade one exchange" in text:
            right = f"<assistant_answer>\\n{RIGHT}" in text
            agrees = self.rng.random() < JUDGE_ACCURACY
            score = 0.95 if right == agrees else 0.1
            verdict = json.dumps({"score": score, "confidence": 0.9, "rationale": "graded", "criteria": {}})
            return httpx.Response(200, json=_message(verdict, 700 + len(text) // 4, 40))
        kind = self.scenario.kind_of(text)
        model = body["model"].split(":")[-1]
        bare = self.scenario.strong.split(":")[-1]  # the adapter may send a dated snapshot of it
        full = self.scenario.strong if model.startswith(bare) or bare.startswith(model) else self.scenario.cheap
        luck = self.luck if self.luck >= 0 else self.rng.random()  # replays draw their own
        dropped = self.dropped and full == self.scenario.cheap and kind in self.scenario.suited
        recorded = None if dropped else self.scenario.recorded_right(kind, text, full == self.scenario.strong)
        self.last_right = recorded if recorded is not None else luck < self.chance(kind, full)
        answer = RIGHT if self.last_right else WRONG
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=_stream(answer, self.scenario.kinds[kind].output_tokens, 400 + len(text) // 4))


def _message(text: str, tokens_in: int, tokens_out: int) -> dict[str, Any]:
    return {"id": "msg_bench", "type": "message", "role": "assistant", "model": "bench", "stop_reason": "end_turn",
            "stop_sequence": None, "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out}}


def _stream(text: str, output_tokens: int, input_tokens: int) -> bytes:
    start = _message("", input_tokens, 1)
    start["content"], start["stop_reason"] = [], None
    events = [
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": text}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": output_tokens}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def _runtime(home: Path, model: Model, settings: LearningSettings | None) -> Runtime:
    transport = httpx.MockTransport(model.handle)
    client = ModelClient(http_client=httpx.Client(transport=transport),
                         async_http_client=httpx.AsyncClient(transport=transport),
                         base_urls={"anthropic": "http://bench.local"}, api_keys={"anthropic": "sk-bench-not-a-key"},
                         retry=RetryPolicy(max_retries=0))
    runtime = Runtime(home=home, client=client, bus=EventBus(mode="strict"), configured_providers={"anthropic"})
    if settings is not None:
        LearningLoop.attach(runtime, settings)
    return runtime


@dataclass
class Run:
    sessions: int = 0
    successes: int = 0
    cost: Decimal = Decimal(0)
    served: list[tuple[str, str, bool]] = field(default_factory=list)
    """(kind, model, explored) per session."""
    verified: int = 0
    """Verification replays the loop ran (learning.verification)."""
    verify_cost: Decimal = Decimal(0)
    """Their replay and judge calls."""

    @property
    def success_rate(self) -> float:
        return 100.0 * self.successes / self.sessions if self.sessions else 0.0


async def _sessions(runtime: Runtime, workspace: Path, model: Model, plans: list[tuple[str, str, float]], *,
                    pinned: str | None = None, drop_at: int | None = None, by_kind: bool = False) -> Run:
    run = Run()
    for index, (kind, prompt, luck) in enumerate(plans):
        model.dropped = drop_at is not None and index >= drop_at
        model.luck = luck
        scenario = model.scenario
        chosen = (scenario.cheap if kind in scenario.suited else scenario.strong) if by_kind else pinned
        session = runtime.sessions.create(workspace, model=chosen)
        result = await runtime.turns.run(session, prompt)
        if result.error:
            raise RuntimeError(f"bench turn failed: {result.error}")
        right = model.last_right
        model.luck = -1.0  # a verification replay after the session draws its own
        if runtime.learning is not None:
            runtime.learning.feedback.rate(session.id, "up" if right else "down")
        runtime.sessions.end(session)
        if runtime.learning is not None:
            runtime.learning.settle()  # a verification's replays are recorded before the next session
        else:
            runtime.bus.flush()
        explored = False
        if chosen is None:
            decided = runtime.trace.events(session_id=session.id, types=("route.decided",))
            explored = bool(decided) and any(v.get("exploration") for v in decided[0].payload["chain"])
        run.sessions += 1
        run.successes += right
        run.cost += result.cost_usd
        run.served.append((kind, result.model or "", explored))
    if runtime.learning is not None:
        run.verified, run.verify_cost = runtime.learning.verifier.replayed, runtime.learning.verifier.spent_usd
    return run


def _cheap_share(served: list[tuple[str, str, bool]], scenario: Scenario) -> float | None:
    """Of the sessions of kinds the cheap model suits, the share (in %) routing chose it for (not exploring)."""
    simple = [(model, explored) for kind, model, explored in served if kind in scenario.suited]
    return (round(100.0 * sum(1 for m, e in simple if m == scenario.cheap and not e) / len(simple), 1)
            if simple else None)


def _moved_back(run: Run, drop_at: int, scenario: Scenario) -> int | None:
    """Sessions after the drop until routing last chose the cheap model (not exploring) for a kind it suited."""
    last = None
    for index, (kind, served, explored) in enumerate(run.served[drop_at:]):
        if kind in scenario.suited and served == scenario.cheap and not explored:
            last = index + 1
    return last


def _switches_away(run: Run, scenario: Scenario) -> int:
    """Times routing, having chosen the cheap model for a kind it suits, chose the strong one for the next
    session of that kind (neither explored). In a run where nothing changed, each is a spurious switch."""
    last: dict[str, str] = {}
    count = 0
    for kind, served, explored in run.served:
        if kind not in scenario.suited or explored:
            continue
        count += last.get(kind) == scenario.cheap and served == scenario.strong
        last[kind] = served
    return count


async def measure(count: int, budget: Decimal, seed: int, patterns: dict[str, Any] | None = None,
                  scenario: Scenario | None = None, stratified: bool = True) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="metis-bench-learning-cold-"))
    scenario = scenario or load_scenario("project")
    model = Model(seed, scenario)
    strong, cheap = scenario.strong, scenario.cheap
    routing = LearningSettings.model_validate({"exploration": {"share": 0.1, "usd_per_day": "0.50",
                                                               "candidates": [cheap], "seed": seed},
                                               "verification": {"judge_model": cheap},
                                               "patterns": patterns or {}})
    try:
        workspace = root / "workspace"
        workspace.mkdir()
        seeded = root / "seeded"
        seeded.mkdir()
        (seeded / "routing.yaml").write_text(f"default: {strong}\n")
        runtime = _runtime(seeded, model, LearningSettings())
        try:
            history = await _sessions(runtime, workspace, model, scenario.plan(count, seed + 1, stratified=stratified))
        finally:
            runtime.close()
        runtime = _runtime(seeded, model, LearningSettings(judge_model=cheap))
        try:
            model.luck = -1.0
            learner = ReplayLearner(runtime.learning)
            plan = learner.plan([cheap], per_kind=5)
            learned = await learner.run(plan, budget)
        finally:
            runtime.close()
        plans = scenario.plan(count, seed + 2, stratified=stratified)
        results: dict[str, Any] = {}
        for policy in ("strong", "oracle", "routing", "drop"):
            home = root / policy
            shutil.copytree(seeded, home)
            runtime = _runtime(home, model, routing if policy in ("routing", "drop") else LearningSettings())
            try:
                results[policy] = await _sessions(runtime, workspace, model, plans,
                                                  pinned=strong if policy == "strong" else None,
                                                  by_kind=policy == "oracle",
                                                  drop_at=count // 2 if policy == "drop" else None)
            finally:
                runtime.close()
        return _summary(count, budget, seed, history, learned, results, scenario, stratified)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _summary(count: int, budget: Decimal, seed: int, history: Run, learned: Any, results: dict[str, Run],
             scenario: Scenario, stratified: bool) -> dict[str, Any]:
    strong, routing, drop = results["strong"], results["routing"], results["drop"]
    learn_cost = learned.spent_usd
    moved_back = _moved_back(drop, count // 2, scenario)
    share = float((routing.cost + learn_cost + routing.verify_cost) / strong.cost) * 100

    def served(run: Run) -> dict[str, dict[str, int]]:
        table: dict[str, dict[str, int]] = {k: {} for k in scenario.kinds}
        for kind, model, explored in run.served:
            key = f"{model} (explored)" if explored else model
            table[kind][key] = table[kind].get(key, 0) + 1
        return table

    return {
        "bench": "learning-cold", "when": datetime.now(UTC).isoformat(timespec="seconds"), "seed": seed,
        "sessions": count, "scenario": scenario.to_json(), "stratified_mix": stratified,
        "history": {"sessions": history.sessions, "success_rate": round(history.success_rate, 2),
                    "cost_usd": str(history.cost)},
        "learn": {"budget_usd": str(budget), "estimated_usd": str(learned.plan.estimated_usd),
                  "planned": len(learned.plan.replays), "replayed": learned.replayed,
                  "stopped_at_budget": learned.stopped_at_budget, "spent_usd": str(learn_cost),
                  "kinds": [k.to_json() for k in learned.kinds]},
        "always_strong": {"success_rate": round(strong.success_rate, 2), "cost_usd": str(strong.cost)},
        "by_kind_oracle": {"success_rate": round(results["oracle"].success_rate, 2),
                           "cost_usd": str(results["oracle"].cost),
                           "share_of_strong_cost_pct": round(float(results["oracle"].cost / strong.cost) * 100, 1)},
        "routing": {"success_rate": round(routing.success_rate, 2), "cost_usd": str(routing.cost),
                    "cost_with_learning_usd": str(routing.cost + learn_cost + routing.verify_cost),
                    "verification_replays": routing.verified, "verification_usd": str(routing.verify_cost),
                    "share_of_strong_cost_pct": round(share, 1),
                    "explored_sessions": sum(1 for *_, e in routing.served if e),
                    "spurious_switches": _switches_away(routing, scenario),
                    "switches_before_drop": _switches_away(Run(served=drop.served[: count // 2]), scenario),
                    "served": served(routing)},
        "drop": {"at_session": count // 2, "cheap_success_after": DROPPED_SUCCESS,
                 "success_rate": round(drop.success_rate, 2), "cost_usd": str(drop.cost),
                 "verification_replays": drop.verified, "verification_usd": str(drop.verify_cost),
                 "sessions_until_moved_back": moved_back,
                 "suited_kind_cheap_share_after_30_sessions_pct": _cheap_share(drop.served[count // 2 + 30:], scenario),
                 "suited_kind_sessions_routed_to_cheap": [
                     i + 1 for i, (kind, model, explored) in enumerate(drop.served[count // 2:])
                     if kind in scenario.suited and model == scenario.cheap and not explored],
                 "served_after_drop": served(Run(served=drop.served[count // 2:]))},
        "targets": {"success_within_points": 5.0, "cost_share_max_pct": 60.0, "moved_back_within_sessions": 30,
                    "met": (routing.success_rate >= strong.success_rate - 5.0 and share <= 60.0
                            and (moved_back or 0) <= 30)},
    }


def _line(run: dict[str, Any]) -> dict[str, Any]:
    drop = run["drop"]
    return {"scenario": run["scenario"]["name"], "seed": run["seed"],
            "strong_success": run["always_strong"]["success_rate"],
            "routing_success": run["routing"]["success_rate"], "learn_usd": run["learn"]["spent_usd"],
            "verify_usd": run["routing"]["verification_usd"], "verify_replays": run["routing"]["verification_replays"],
            "drop_verify_replays": drop["verification_replays"],
            "cost_share_pct": run["routing"]["share_of_strong_cost_pct"],
            "oracle_share_pct": run["by_kind_oracle"]["share_of_strong_cost_pct"],
            "moved_back_after": drop["sessions_until_moved_back"],
            "cheap_share_after_30_pct": drop["suited_kind_cheap_share_after_30_sessions_pct"],
            "spurious_switches": run["routing"]["spurious_switches"],
            "met": run["targets"]["met"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--budget-usd", default="0.25")
    parser.add_argument("--seeds", "--seed", default="2026", help="comma-separated; one run per seed")
    parser.add_argument("--scenario", default="project",
                        help="project, mt-bench, or a JSON file (bench/learning_scenarios.py); comma-separated: each")
    parser.add_argument("--iid-mix", action="store_true",
                        help="draw each session's kind independently (the mix then varies by seed) instead of "
                             "holding it at the scenario's")
    parser.add_argument("--half-life-outcomes", type=float, default=None,
                        help="learning.patterns.half_life_outcomes for the routing runs (default: the setting's)")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    patterns = {"half_life_outcomes": args.half_life_outcomes} if args.half_life_outcomes is not None else {}
    runs = [asyncio.run(measure(args.sessions, Decimal(args.budget_usd), int(seed), patterns,
                                load_scenario(name), stratified=not args.iid_mix))
            for name in args.scenario.split(",") for seed in args.seeds.split(",")]
    result = {"bench": "learning-cold", "when": runs[0]["when"], "sessions": args.sessions,
              "budget_usd": args.budget_usd, "patterns": patterns, "stratified_mix": not args.iid_mix,
              "summary": [_line(r) for r in runs], "runs": runs}
    keep_named("learning-cold", result, save=not args.no_save)


if __name__ == "__main__":
    main()
