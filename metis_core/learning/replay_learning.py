"""`metis learn`: learn from stored turns by replaying a sample of them on cheaper candidate models.

A plan picks, per task kind (stored fingerprint), the most recent turns users ran and, per
candidate with too little evidence there, replays them with the `metis replay` machinery (tools
answered from the recording). The evaluator judges each replayed answer (its rubric and the LLM
judge: a judge model is required) and the pattern recorder stores the outcome; an outcome of a
replay session reads back as source "learned". Its score is put on the user's scale: the judge's
own score against an original the user was happy with, else (pairwise) the user's score of the
original moved by the judge's difference between the two answers. Replays
go round the kinds in turn, and a (kind, candidate) already settled (routing picks it there, or
it is hopeless) is not replayed further. Each replay's cost (the original turn's tokens at the
candidate's price, plus two judge calls) is estimated before anything runs; the run stops before
a replay whose estimate would take the spend past the budget.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from metis_core.errors import LearningError, MetisError
from metis_core.learning.patterns.evidence import DECIDED_Z, ModelEvidence
from metis_core.learning.patterns.store import Outcome, _now_us
from metis_core.replay.session_replay import replay_session

if TYPE_CHECKING:
    from metis_core.agent.runtime import Runtime
    from metis_core.learning.loop import LearningLoop

JUDGE_PROMPT_TOKENS = 600
"""The judge's instructions and rubric, on top of the turn it reads."""
JUDGE_ANSWER_TOKENS = 200
HOPELESS_AFTER = 2
"""Replays a candidate gets on a kind before it can be given up (one judged failure may be noise)."""


class LearnPlanError(LearningError):
    """`metis learn` cannot run as asked (no judge model, no candidate, nothing stored to learn from)."""


@dataclass(frozen=True)
class PlannedReplay:
    session_id: str
    turn_index: int
    """1-based position of the turn in its session (what `metis replay --turns` takes)."""
    turn_id: str
    fingerprint_id: str
    original_model: str
    candidate: str
    estimated_usd: Decimal
    original_score: float | None = None


@dataclass
class LearnPlan:
    replays: list[PlannedReplay]
    unpriced: list[str] = field(default_factory=list)
    """Candidates left out: the price table has no price for them, so no cost could be estimated."""

    @property
    def estimated_usd(self) -> Decimal:
        return sum((r.estimated_usd for r in self.replays), Decimal(0))


@dataclass(frozen=True)
class CandidateEstimate:
    model: str
    outcomes: int
    learned: int
    mean_score: float
    """The decayed mean of its scores (what routing compares)."""
    success: float
    """The Beta posterior's mean: the success estimate, with `interval` its 90 % interval."""
    interval: tuple[float, float]
    mean_cost_usd: float
    chosen: bool
    """Whether routing would now choose it for this kind."""
    saving_per_turn_usd: float
    """Against the model users ran this kind on (mean cost difference; 0 unless chosen)."""


@dataclass(frozen=True)
class KindReport:
    fingerprint_id: str
    features: dict[str, Any]
    turns: int
    """Observed turns of this kind in the store."""
    models: list[CandidateEstimate]

    @property
    def expected_saving_usd(self) -> float:
        """What routing would have saved over the observed turns of this kind."""
        return sum(m.saving_per_turn_usd for m in self.models) * self.turns

    def to_json(self) -> dict[str, Any]:
        return {"fingerprint_id": self.fingerprint_id, "features": self.features, "turns": self.turns,
                "expected_saving_usd": round(self.expected_saving_usd, 6),
                "models": [{"model": m.model, "outcomes": m.outcomes, "learned": m.learned,
                            "mean_score": round(m.mean_score, 4), "success": round(m.success, 4),
                            "interval": [round(x, 4) for x in m.interval],
                            "mean_cost_usd": round(m.mean_cost_usd, 6), "chosen": m.chosen,
                            "saving_per_turn_usd": round(m.saving_per_turn_usd, 6)} for m in self.models]}


@dataclass
class LearnReport:
    plan: LearnPlan
    budget_usd: Decimal
    dry_run: bool
    replayed: int = 0
    failed: int = 0
    stopped_at_budget: int = 0
    """Planned replays not run because their estimate would have passed the budget."""
    settled: int = 0
    """Planned replays not run because the candidate's estimate on that kind was already clear."""
    spent_usd: Decimal = Decimal(0)
    """Replay calls plus judge calls, as priced when they ran."""
    kinds: list[KindReport] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "budget_usd": str(self.budget_usd),
                "estimated_usd": str(self.plan.estimated_usd), "planned": len(self.plan.replays),
                "replayed": self.replayed, "failed": self.failed, "stopped_at_budget": self.stopped_at_budget,
                "settled": self.settled, "spent_usd": str(self.spent_usd), "unpriced_candidates": self.plan.unpriced,
                "kinds": [k.to_json() for k in self.kinds]}


class ReplayLearner:
    def __init__(self, loop: LearningLoop) -> None:
        self.loop = loop
        self.runtime: Runtime = loop.runtime

    def plan(self, candidates: list[str], *, per_kind: int = 5, limit: int = 50) -> LearnPlan:
        """Up to `per_kind` replays per (kind, candidate) still short of that much (decayed) evidence,
        at most `limit` in all, the most recent observed turns first."""
        if not candidates:
            raise LearnPlanError("name the models to learn about: --candidates MODEL[,MODEL] "
                                 "(or learning.exploration.candidates in config.yaml)")
        judge = self.loop.settings.judge_model
        if judge is None:
            raise LearnPlanError("metis learn needs a judge to score the replayed answers: set learning.judge_model "
                                 "in config.yaml (e.g. anthropic:claude-haiku-4-5)")
        canonical = [self.runtime.registry.canonical_id(c) for c in candidates]
        unpriced = [c for c in canonical if self.loop.estimate_cost(c, 1, 1) is None]
        priced = [c for c in canonical if c not in unpriced]
        stored = self.loop.patterns.fingerprints()
        outcomes = self.loop.patterns.outcomes([f.id for f in stored])
        by_kind: dict[str, list[Outcome]] = defaultdict(list)
        for o in outcomes:
            by_kind[o.fingerprint_id].append(o)
        per_pair: list[list[PlannedReplay]] = []
        for fp in stored:  # most recently seen kinds first
            rows = by_kind.get(fp.id, [])
            observed = sorted((o for o in rows if o.source == "observed"), key=lambda o: o.recorded_at_us,
                              reverse=True)
            evidence = self.loop.advisor.tally(rows, {fp.id: 0.0})
            for candidate in priced:
                # decayed evidence: after a change point or a long while, a candidate is worth replaying again
                have = round(evidence[candidate].evidence) if candidate in evidence else 0
                done = self._replayed_sources(rows, candidate)
                sources = [o for o in observed if o.model != candidate and o.score is not None
                           and o.session_id not in done]
                planned = [p for o in sources[: max(0, per_kind - have)]
                           if (p := self.planned_replay(o, candidate, judge))]
                per_pair.append(planned)
        rounds = [pair[i] for i in range(max(map(len, per_pair), default=0)) for pair in per_pair if i < len(pair)]
        return LearnPlan(rounds[:limit], unpriced)

    def _replayed_sources(self, rows: list[Outcome], candidate: str) -> set[str]:
        """The stored sessions already replayed on `candidate` for this kind (their learned outcomes)."""
        done = set()
        for o in rows:
            if o.source == "learned" and o.model == candidate:
                with contextlib.suppress(MetisError):
                    source = self.runtime.store.get_session(o.session_id).replay_of
                    if source:
                        done.add(source)
        return done

    def planned_replay(self, o: Outcome, candidate: str, judge: str) -> PlannedReplay | None:
        """The replay of stored turn `o` on `candidate`, judged by `judge`, with its estimated cost; None when
        the trace of that turn was pruned (`metis learn` plans with it, and so does verification by replay)."""
        events = self.runtime.trace.events(session_id=o.session_id)
        starts = [e.turn_id for e in events if e.type == "turn.started"]
        if o.turn_id not in starts:
            return None  # the trace of that turn was pruned: nothing to replay
        calls = [e for e in events if e.turn_id == o.turn_id and e.type == "llm.call_completed"]
        tokens_in = sum(int(e.payload.get("input_tokens", 0)) for e in calls)
        tokens_out = sum(int(e.payload.get("output_tokens", 0)) for e in calls)
        replay = self.loop.estimate_cost(candidate, tokens_in, tokens_out) or Decimal(0)
        judged = self.loop.estimate_cost(judge, JUDGE_PROMPT_TOKENS + tokens_out, JUDGE_ANSWER_TOKENS) or Decimal(0)
        return PlannedReplay(o.session_id, starts.index(o.turn_id) + 1, o.turn_id, o.fingerprint_id, o.model,
                             candidate, replay + 2 * judged, o.score)

    async def run(self, plan: LearnPlan, budget_usd: Decimal, *, dry_run: bool = False,
                  on_replay: Callable[[PlannedReplay, Decimal], None] | None = None) -> LearnReport:
        report = LearnReport(plan, budget_usd, dry_run)
        if not dry_run:
            evaluator = self.loop.evaluator.settings
            cap = evaluator.judge_daily_cap_usd
            midnight = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
            # the budget is the user's consent to this much judging today, on top of what was spent
            evaluator.judge_daily_cap_usd = max(cap, self.loop.verdicts.judge_spend_since(midnight) + budget_usd)
            try:
                await self._replay_all(plan, report, on_replay)
            finally:
                evaluator.judge_daily_cap_usd = cap
        report.kinds = self.kinds({r.fingerprint_id for r in plan.replays})
        return report

    async def _replay_all(self, plan: LearnPlan, report: LearnReport,
                          on_replay: Callable[[PlannedReplay, Decimal], None] | None) -> None:
        originals: dict[str, float] = {}
        for index, planned in enumerate(plan.replays):
            if self._settled(planned):
                report.settled += 1
                continue
            if report.spent_usd + planned.estimated_usd > report.budget_usd:
                report.stopped_at_budget = len(plan.replays) - index
                return
            try:
                replayed = await replay_session(self.runtime, planned.session_id, planned.candidate,
                                                turns=(planned.turn_index, planned.turn_index))
            except MetisError:
                report.failed += 1
                continue
            self.loop.settle()  # judged at turn.completed, recorded at session.ended
            turn = replayed.turns[0]
            verdict = self.loop.verdicts.latest("turn", turn.replay_turn_id)
            spent = (turn.replay.cost_usd or Decimal(0)) + (verdict.judge_cost_usd if verdict else Decimal(0))
            llm_score = verdict.signals.get("llm_score") if verdict is not None else None
            if llm_score is not None and planned.original_score is not None:
                learned, judge_cost = self._learned_score(planned, turn, float(llm_score), originals)
                spent += judge_cost
                if learned is not None:
                    self.loop.patterns.rescore(turn.replay_turn_id, round(learned, 4))
            report.spent_usd += spent
            report.replayed += 1
            if turn.replay.error:
                report.failed += 1
            if on_replay is not None:
                on_replay(planned, spent)

    def _learned_score(self, planned: PlannedReplay, turn: Any, llm_score: float,
                       originals: dict[str, float]) -> tuple[float | None, Decimal]:
        """(the learned score, the extra judge cost). Against an original the user was happy with
        (score ≥ 0.5), the judge's own score of the replay, on the same 0..1 scale as the user's;
        otherwise pairwise: the user's score of the original moved by the judge's difference
        between the two answers (None when the judge could not score the original)."""
        assert planned.original_score is not None
        if planned.original_score >= 0.5:
            return llm_score, Decimal(0)
        cost = Decimal(0)
        if planned.turn_id not in originals:
            originals[planned.turn_id], cost = self._judge_original(turn.user_text, turn.original.answer)
        original = originals[planned.turn_id]
        if original < 0:
            return None, cost
        return min(1.0, max(0.0, planned.original_score + llm_score - original)), cost

    def _judge_original(self, user_text: str, answer: str) -> tuple[float, Decimal]:
        """(the judge's score of the original answer, its cost); (-1, 0) when the judge failed."""
        judge = self.loop.evaluator.judge
        if judge is None:
            return -1.0, Decimal(0)
        try:
            verdict = judge.judge(self.loop.rubrics.for_subject("turn"), user_text, answer)
        except MetisError:
            return -1.0, Decimal(0)
        return verdict.answer.score, verdict.cost_usd

    def _settled(self, planned: PlannedReplay) -> bool:
        """Whether more replays of this (kind, candidate) would change nothing: routing already
        chooses the candidate there, or (after HOPELESS_AFTER replays) its 98 % interval lies wholly
        below the best other model's mean less the score tolerance."""
        s = self.loop.settings.patterns
        rows = self.loop.patterns.outcomes([planned.fingerprint_id])
        tallies = self.loop.advisor.tally(rows, {planned.fingerprint_id: 0.0})
        mine = tallies.get(planned.candidate)
        others = [t.mean for m, t in tallies.items() if m != planned.candidate and t.count >= s.min_samples]
        if mine is None or not others:
            return False
        chosen = self.loop.advisor.choose(tallies)
        hopeless = mine.learned >= HOPELESS_AFTER and mine.interval(DECIDED_Z)[1] < max(others) - s.score_tolerance
        return hopeless or (chosen is not None and chosen.model == planned.candidate)

    def kinds(self, fingerprint_ids: set[str]) -> list[KindReport]:
        """Per kind: each model's success estimate (decayed Beta posterior, 90 % interval), whether
        routing would choose it, and what it would save over the observed turns."""
        reports = []
        now = _now_us()
        for fp in self.loop.patterns.fingerprints():
            if fp.id not in fingerprint_ids:
                continue
            rows = self.loop.patterns.outcomes([fp.id])
            tallies = self.loop.advisor.tally(rows, {fp.id: 0.0}, now)
            chosen = self.loop.advisor.choose(tallies)
            observed = [o for o in rows if o.source == "observed"]
            baseline = _mean_cost([o for o in observed if chosen is None or o.model != chosen.model])
            models = [_estimate(t, chosen, baseline) for t in sorted(tallies.values(), key=lambda t: -t.mean)]
            reports.append(KindReport(fp.id, fp.fingerprint.features, len(observed), models))
        return reports


def _mean_cost(rows: list[Outcome]) -> float:
    return sum(float(o.cost_usd) for o in rows) / len(rows) if rows else 0.0


def _estimate(t: ModelEvidence, chosen: ModelEvidence | None, baseline: float) -> CandidateEstimate:
    picked = chosen is not None and chosen.model == t.model
    saving = max(0.0, baseline - t.mean_cost) if picked and baseline else 0.0
    return CandidateEstimate(t.model, t.count, t.learned, t.mean, t.posterior_mean, t.interval(), t.mean_cost, picked,
                             saving)


def learn(loop: LearningLoop, candidates: list[str], budget_usd: Decimal, *, per_kind: int = 5, limit: int = 50,
          dry_run: bool = False) -> LearnReport:
    """The library call behind `metis learn` (blocking; from async code use `ReplayLearner` directly)."""
    learner = ReplayLearner(loop)
    plan = learner.plan(candidates, per_kind=per_kind, limit=limit)
    return asyncio.run(learner.run(plan, budget_usd, dry_run=dry_run))
