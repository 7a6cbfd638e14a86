"""`LearningLoop`: the learning layer wired to one Runtime.

Attaching subscribes the batch subscribers (implicit feedback, evaluator triggers, pattern
recorder and, given a judge and a budget, the verifier of a suspect model by replay), gives the
runtime its pattern advisor (routing's `pattern` slot) and a `/model` swap listener, and closes
its store connection when the runtime closes. Its tables live in the runtime's database
(`runtime.shared_database`: its one pool on PostgreSQL). Routing and the agent never import this
package; without it they work as before.
"""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import TYPE_CHECKING

from metis_core.errors import MetisError
from metis_core.events.envelope import Event
from metis_core.events.subscription import SubscriptionHandle
from metis_core.learning.database import LearningDatabase
from metis_core.learning.evaluator.evaluator import Evaluator, EvaluatorSettings
from metis_core.learning.evaluator.llm_judge import LlmJudge
from metis_core.learning.evaluator.rubrics import RubricBook
from metis_core.learning.evaluator.subjects import SubjectReader
from metis_core.learning.evaluator.triggers import EvaluationTriggers
from metis_core.learning.evaluator.verdicts import VerdictStore
from metis_core.learning.feedback import FeedbackRecorder
from metis_core.learning.implicit import ImplicitSignals
from metis_core.learning.patterns.advisor import PatternAdvisor
from metis_core.learning.patterns.embeddings import HttpEmbedder
from metis_core.learning.patterns.exploration import Explorer
from metis_core.learning.patterns.fingerprint import Embedder
from metis_core.learning.patterns.recorder import PatternRecorder
from metis_core.learning.patterns.store import PatternStore
from metis_core.learning.settings import LearningSettings
from metis_core.learning.verification import Verifier
from metis_core.messages.metadata import Usage

if TYPE_CHECKING:
    from metis_core.agent.runtime import Runtime
    from metis_core.agent.session import Session

log = logging.getLogger("metis_core.learning")


class LearningLoop:
    def __init__(self, runtime: Runtime, settings: LearningSettings | None = None, *,
                 embed: Embedder | None = None) -> None:
        self.runtime = runtime
        self.settings = settings or LearningSettings.from_config(runtime.config.learning)
        if embed is None and self.settings.embedding_model:
            try:
                embed = HttpEmbedder.from_config(self.settings.embedding_model, runtime.config)
            except MetisError as error:  # a missing key or a provider without embeddings: structural fingerprints
                log.warning("learning.embedding_model not used: %s", error)
        self.db = LearningDatabase(runtime.shared_database)
        self.verdicts = VerdictStore(self.db)
        self.patterns = PatternStore(self.db, self.settings.patterns)
        self.rubrics = RubricBook(user_dir=runtime.home / "rubrics")
        judge = LlmJudge(runtime.client, self.settings.judge_model) if self.settings.judge_model else None
        self.evaluator = Evaluator(
            runtime.bus, SubjectReader(runtime.trace, runtime.store), self.verdicts, self.rubrics, judge,
            EvaluatorSettings(self.settings.judge_daily_cap_usd, self.settings.capture_rationale),
        )
        self.triggers = EvaluationTriggers(self.evaluator, runtime.trace)
        self.implicit = ImplicitSignals(runtime.bus, runtime.trace, runtime.store)
        self.feedback = FeedbackRecorder(runtime.bus, runtime.trace)
        self.recorder = PatternRecorder(runtime.bus, runtime.trace, runtime.store, self.patterns, self.evaluator,
                                        embed)
        self.explorer = Explorer(self.settings.exploration, self.cost_ratio)
        self.advisor = PatternAdvisor(self.patterns, self.settings.patterns, embed, self.explorer)
        self.verifier = Verifier(self)
        if self.verifier.enabled:
            self.triggers.skip = self.recorder.skip = self.verifier.owns
        self._handles: list[SubscriptionHandle] = []

    @classmethod
    def attach(cls, runtime: Runtime, settings: LearningSettings | None = None, *,
               embed: Embedder | None = None) -> LearningLoop:
        """Wire a loop to `runtime` (before its sessions are created, so their routing sees the advisor)."""
        loop = cls(runtime, settings, embed=embed)
        bus = runtime.bus
        subscriptions = [loop.implicit.subscription(), loop.triggers.subscription(), loop.recorder.subscription()]
        if loop.verifier.enabled:
            subscriptions.append(loop.verifier.subscription())
        for subscription in subscriptions:
            loop._handles.append(bus.subscribe(subscription))
        runtime.pattern_advisor = loop.advisor
        runtime.learning = loop
        runtime.sessions.swap_listeners.append(loop._model_swapped)
        runtime.on_closing.append(loop.verifier.close)  # while the bus takes a cancelled replay's last events
        runtime.on_close.append(loop.close)
        return loop

    def clear_patterns(self) -> Event | None:
        """`metis patterns clear`: forget every fingerprint and outcome (pattern.evicted manual_clear)."""
        return self.recorder.emit_eviction(self.patterns.clear(), ended_session=None, parent=None)

    def settle(self, timeout: float = 30.0) -> None:
        """Wait until feedback given so far has been evaluated and its pattern outcomes rescored,
        and any verification by replay it started has been recorded: feedback → verdict → outcome
        (→ replay → verdict → outcome ...) is a chain of batch subscribers and the verifier's
        thread: the bus is flushed until nothing new is emitted and no replay is under way."""
        while True:
            self.runtime.bus.settle(timeout)
            if not self.verifier.wait(timeout):
                return

    def estimate_cost(self, model: str, input_tokens: int, output_tokens: int) -> Decimal | None:
        """What a call of this size would cost on `model` by the price table (None: unpriced)."""
        usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
        return self.runtime.prices.cost(usage, model)[0]

    def cost_ratio(self, model: str, reference: str) -> float | None:
        """`model`'s price as a share of `reference`'s, for a typical turn (1,000 tokens in, 300 out)."""
        mine, theirs = self.estimate_cost(model, 1000, 300), self.estimate_cost(reference, 1000, 300)
        return float(mine / theirs) if mine is not None and theirs else None

    def _model_swapped(self, session: Session, previous: str | None, new: str) -> None:
        try:
            self.implicit.model_swapped(session.id, previous, new)
        except Exception as error:  # a swap must never fail because of learning
            log.warning("manual_swap signal not recorded: %r", error)

    def close(self) -> None:
        self.verifier.close()
        if isinstance(self.advisor.embed, HttpEmbedder):
            self.advisor.embed.close()
        self.db.close()
