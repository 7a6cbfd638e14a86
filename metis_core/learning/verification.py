"""Verify by replay: when a model's fall statistic on the kinds it holds rises, replay its recent
successful turns there on it, judged by the verification judge, one at a time, until the change
test confirms the fall, successes clear the suspicion, or the budget ends it. Evidence then arrives
at the rate the test needs, not at the rate routing sends the model turns. Not on the routing
path: a bus subscriber decides, a thread of its own replays (replay_thread.py). docs/learning.md.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING

from metis_core.errors import MetisError
from metis_core.events.bus import EventFilter, Subscription
from metis_core.events.envelope import Event
from metis_core.learning.evaluator.evaluator import Evaluator, EvaluatorSettings
from metis_core.learning.evaluator.llm_judge import LlmJudge
from metis_core.learning.evaluator.rubrics import Rubric, RubricBook, SubjectKind
from metis_core.learning.patterns.evidence import falling_evidence, model_regime_start
from metis_core.learning.patterns.store import Outcome
from metis_core.learning.replay_learning import PlannedReplay, ReplayLearner
from metis_core.learning.replay_thread import CLOSE_GRACE_SECONDS, ReplayThread
from metis_core.replay.session_replay import replay_session
from metis_core.secret_scrub import scrub_secrets

if TYPE_CHECKING:
    from metis_core.learning.loop import LearningLoop

log = logging.getLogger("metis_core.learning")
SUBSCRIPTION_NAME = "learning-verifier"


class _JudgedByLlm(RubricBook):
    """The rubrics, with the judge's own score as the verdict (no heuristic blend: a replay has
    no feedback, so the heuristic part would only pull every score towards its neutral 0.75)."""

    def for_subject(self, subject: SubjectKind) -> Rubric:
        return super().for_subject(subject).model_copy(update={"judge": "llm"})


@dataclass(frozen=True)
class Suspicion:
    """A model under verification: the regime its suspicion arose in, and the families it held then."""

    began_us: int
    held: frozenset[str]


class Verifier:
    def __init__(self, loop: LearningLoop) -> None:
        self.loop = loop
        self.settings = loop.settings.verification
        self.judge_model = self.settings.judge_model or loop.settings.judge_model
        runtime = loop.runtime
        self.evaluator: Evaluator | None = None
        self.unavailable: str | None = None
        """Why verification is off although configured, when it is (also logged once)."""
        if self.judge_model is not None and runtime.client.async_client_bound_to_one_loop:
            self.unavailable = ("the ModelClient's async_http_client pools network connections, which serve "
                                "one event loop, and verification replays run on a thread of their own; pass "
                                "no async_http_client (metis's own async clients serve every loop)")
            if self.settings.usd_per_day > 0:
                log.warning("verification by replay is off: %s", self.unavailable)
        elif self.judge_model is not None:
            self.evaluator = Evaluator(runtime.bus, loop.evaluator.reader, loop.verdicts,
                                       _JudgedByLlm(loop.rubrics.user_dir, loop.rubrics.shipped_dir),
                                       LlmJudge(runtime.client, self.judge_model),
                                       EvaluatorSettings(Decimal(0), loop.settings.capture_rationale))
        self.spent_usd = Decimal(0)
        """Replay and judge calls of every verification so far (this process)."""
        self.replayed = 0
        self.failed = 0
        """Replays that ended without a verdict (an error, a failed turn, cancelled at close): nothing learned."""
        self.close_grace_seconds = CLOSE_GRACE_SECONDS
        """How long `close` waits for a replay under way before cancelling it."""
        self._spent_today = Decimal(0)
        self._day = datetime.now(UTC).date()
        # the lock guards what other threads read or write: the replay sessions (the skip hooks of
        # other subscribers read them), the spend, the counters and `_in_flight`
        self._sessions: set[str] = set()  # verification replay sessions, owned from their creation
        self._streak: dict[str, int] = defaultdict(int)  # model → replays since its last observed outcome
        self._replayed_turns: dict[str, set[str]] = defaultdict(set)  # model → turns replayed this suspicion
        self._suspicions: dict[str, Suspicion] = {}
        self._lock = threading.Lock()
        self._in_flight = False
        """A replay started and its session not yet judged: the next waits for its outcome."""
        self._thread: ReplayThread | None = None
        self._closed = False

    @property
    def enabled(self) -> bool:
        s = self.loop.settings.patterns
        return (self.evaluator is not None and self.settings.usd_per_day > 0 and s.change_threshold > 0
                and s.change_margin > 0 and s.recent_outcomes > 0)

    def subscription(self) -> Subscription:
        return Subscription(filter=EventFilter(event_types={"pattern.recorded", "session.ended"}),
                            handler=self.handle, name=SUBSCRIPTION_NAME)

    def owns(self, session_id: str) -> bool:
        """Whether `session_id` is a verification replay (its turn is judged and recorded here, not
        by the evaluation triggers and the pattern recorder)."""
        with self._lock:
            return session_id in self._sessions

    def handle(self, event: Event) -> None:
        try:
            if event.type == "session.ended":
                self.judge_and_record(event)
            elif self.enabled:
                self.consider(str(event.payload["primary_model"]), event.session_id)
        except MetisError as error:  # verification is best effort: routing goes on without it
            log.warning("verification after %s %s failed: %s", event.type, event.id, scrub_secrets(str(error)))

    def consider(self, model: str, session_id: str) -> PlannedReplay | None:
        """Check `model` after an outcome of it was recorded (in session `session_id`); when it is
        suspect and no replay is under way, start replaying one of its turns. The replay started, or None."""
        if not self.owns(session_id):
            self._streak[model] = 0  # an observed outcome: a new suspicion may replay again
        with self._lock:
            if self._in_flight or self._closed:
                return None  # its outcome, once recorded, brings the check back here
        turn = self.suspect_turn(model)
        if model not in self._suspicions:
            self._replayed_turns.pop(model, None)
        if turn is None:
            return None
        if self._streak[model] >= self.settings.replays:
            return None
        assert self.judge_model is not None
        planned = ReplayLearner(self.loop).planned_replay(turn, model, self.judge_model)
        if planned is None or not self._affordable(planned.estimated_usd):
            return None
        self._replayed_turns[model].add(turn.turn_id)
        self._streak[model] += 1
        with self._lock:
            if self._closed:
                return None
            self._in_flight = True
            if self._thread is None:  # a replay flushes the bus, so it runs on a thread of its own
                self._thread = ReplayThread("metis-verifier")
            self._thread.submit(lambda: self._run(planned))
        return planned

    def wait(self, timeout: float | None = 30.0) -> bool:
        """Wait for the replays under way, if any; whether one was (LearningLoop.settle)."""
        thread = self._thread
        return thread is not None and thread.wait(timeout)

    def close(self) -> None:
        """Start no more replays, drop queued ones, give the one under way `close_grace_seconds`,
        then cancel it (its session ends as `error`, nothing learned): closing never waits long."""
        with self._lock:
            self._closed = True
            thread, self._thread = self._thread, None
        if thread is not None:
            stopped = thread.stop(self.close_grace_seconds, self.loop.runtime.client.aclose)
            if stopped in ("cancelled", "left"):
                log.info("closing: a verification replay under way was %s", stopped)

    async def _run(self, planned: PlannedReplay) -> None:
        created: list[str] = []
        try:
            await self._replay(planned, created)
        except Exception as error:  # never let a replay take verification down: the next suspicion tries again
            if not created:  # no session: no session.ended will count it and clear the way
                with self._lock:
                    self.failed += 1
                    self._in_flight = False
            log.warning("verification replay of session %s on %s failed: %s", planned.session_id,
                        planned.candidate, scrub_secrets(f"{type(error).__name__}: {error}"))

    def latest(self, model: str) -> tuple[list[Outcome], list[tuple[str, str, float]], Mapping[str, str]]:
        """`model`'s latest scored outcomes (oldest first), as the change test's stream, and the families."""
        newest_first = self.loop.patterns.latest_outcomes(model, self.loop.settings.patterns.recent_outcomes)
        family_of = self.loop.advisor.families({o.fingerprint_id for o in newest_first})
        oldest_first = [o for o in reversed(newest_first) if o.score is not None]
        return oldest_first, [(o.fingerprint_id, family_of.get(o.fingerprint_id, o.fingerprint_id), o.score or 0.0)
                              for o in oldest_first], family_of

    def fall_evidence(self, model: str) -> float:
        """The model's fall statistic now, as a share of the change threshold (`metis patterns explain`)."""
        return falling_evidence(self.latest(model)[1], self.loop.settings.patterns)

    def suspect_turn(self, model: str) -> Outcome | None:
        """The turn to replay when `model` is suspect (its newest observed success not yet replayed
        in this suspicion, on a family it held when the suspicion began), else None."""
        s = self.loop.settings.patterns
        oldest_first, stream, family_of = self.latest(model)
        regime = oldest_first[model_regime_start(stream, s):]
        if not regime:
            return None
        began = regime[0].recorded_at_us
        suspicion = self._suspicions.get(model)
        if suspicion is not None and suspicion.began_us != began:  # the change test found it: confirmed
            self._suspicions.pop(model)
            return None
        held = suspicion.held if suspicion is not None else _held_families(regime, family_of, s.change_baseline,
                                                                             s.success_floor)
        if not held or falling_evidence(stream, s) < self.settings.suspicion:
            self._suspicions.pop(model, None)  # cleared (or nothing held to lose)
            return None
        on_held = [o for o in regime if family_of.get(o.fingerprint_id) in held]
        if not self._pricier_model_served(model, on_held):
            return None
        if suspicion is None:
            self._suspicions[model] = Suspicion(began, frozenset(held))
        done = self._replayed_turns[model]
        return next((o for o in reversed(on_held) if o.source == "observed" and (o.score or 0.0) >= 0.5
                     and o.turn_id not in done), None)

    def _pricier_model_served(self, model: str, outcomes: list[Outcome]) -> bool:
        """Whether another model costs more on these turns' fingerprints: only then would a change
        move a route (a fall of the priciest model leaves nothing cheaper to fall back on)."""
        rows = self.loop.patterns.outcomes(sorted({o.fingerprint_id for o in outcomes}))
        costs: dict[str, list[float]] = defaultdict(list)
        for o in rows:
            costs[o.model].append(float(o.cost_usd))
        mine = costs.get(model)
        if not mine:
            return False
        own = sum(mine) / len(mine)
        return any(sum(c) / len(c) > own for m, c in costs.items() if m != model)

    def _affordable(self, estimate: Decimal) -> bool:
        return estimate <= self._left_today()

    def _left_today(self) -> Decimal:
        """What is left of today's verification budget (a new UTC day starts a new one)."""
        with self._lock:
            self._new_day()
            return max(Decimal(0), self.settings.usd_per_day - self._spent_today)

    def _new_day(self) -> None:
        today = datetime.now(UTC).date()
        if today != self._day:
            self._day, self._spent_today = today, Decimal(0)

    async def _replay(self, planned: PlannedReplay, created: list[str]) -> None:
        def own(session_id: str) -> None:  # owned from its creation: no event of it is another's
            created.append(session_id)
            with self._lock:
                self._sessions.add(session_id)

        report = await replay_session(self.loop.runtime, planned.session_id, planned.candidate,
                                      turns=(planned.turn_index, planned.turn_index), on_session=own)
        self._spend(sum((t.replay.cost_usd or Decimal(0) for t in report.turns), Decimal(0)))
        with self._lock:
            self.replayed += 1

    def _spend(self, usd: Decimal) -> None:
        with self._lock:
            self._new_day()
            self.spent_usd += usd
            self._spent_today += usd

    def judge_and_record(self, ended: Event) -> None:
        """A verification replay ended: its turn judged by the verification judge alone, then
        recorded as a pattern outcome (nothing recorded when the judge could not score it)."""
        if self.evaluator is None or not self.owns(ended.session_id):
            return
        with self._lock:
            self._in_flight = False
        closed = self.loop.runtime.trace.events(session_id=ended.session_id,
                                                types=("turn.completed", "turn.cancelled"))
        why = _no_verdict(ended, closed)
        if why is not None:
            with self._lock:
                self.failed += 1
            log.warning("verification replay %s ended without a verdict (%s): nothing learned", ended.session_id, why)
            return
        turns = [e.turn_id for e in closed if e.turn_id]
        if not turns:
            return
        self.evaluator.settings.judge_daily_cap_usd = self._judge_cap()
        verdict = self.evaluator.evaluate("turn", turns[-1], trigger="bus", parent=ended)
        if verdict is None:
            return
        self._spend(verdict.judge_cost_usd)
        if "llm_score" in verdict.signals:  # not when the judge was skipped (its cap): no score to learn from
            self.loop.recorder.record_session(ended)

    def _judge_cap(self) -> Decimal:
        """Today's judge spend so far plus what is left of the verification budget: the verification
        judge is bounded by that budget, not by the evaluator's daily cap."""
        midnight = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        return self.loop.verdicts.judge_spend_since(midnight) + self._left_today()


def _no_verdict(ended: Event, closed: list[Event]) -> str | None:
    """Why a replay session gives nothing to judge, or None: it must have completed, and its turn
    with it, without an error (a provider outage is no evidence of the model's quality)."""
    disposition = ended.payload.get("disposition")
    if disposition != "completed":
        return f"the replay ended as {disposition}"
    if not closed:
        return "no turn completed"
    if any(e.type == "turn.cancelled" for e in closed):
        return "its turn was cancelled"
    if any((e.payload.get("signals_extra") or {}).get("error") for e in closed):
        return "its turn failed"
    return None


def _held_families(regime: list[Outcome], family_of: Mapping[str, str], baseline: int, floor: float) -> set[str]:
    """Families with at least `baseline` scores in the regime and a mean of at least `floor`."""
    scores: dict[str, list[float]] = defaultdict(list)
    for o in regime:
        scores[family_of.get(o.fingerprint_id, o.fingerprint_id)].append(o.score or 0.0)
    return {family for family, s in scores.items() if len(s) >= baseline and sum(s) / len(s) >= floor}
