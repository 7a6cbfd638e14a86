"""The LLM judge: a configured model reads the rubric and the turn and answers a JSON verdict.

The verdict `{"score", "confidence", "rationale", "criterion_scores": [{"name", "score"}]}` is
asked through the structured-output machinery (docs/structured-output.md): the schema travels the
way the judge's provider carries it best, a damaged answer is recovered, an invalid one retried with
the validator's errors. Every attempt is priced and the verdict's cost is their sum. No valid answer
is JudgeOutputInvalidError; a failed call is JudgeCallFailedError. The daily cap is enforced by the
evaluator before calling.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from decimal import Decimal

from pydantic import BaseModel, Field

from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.client import ModelClient
from metis_core.adapters.structured_calls import CallSettings, start_run
from metis_core.errors import (
    JudgeCallFailedError,
    JudgeOutputInvalidError,
    MetisError,
    OutputRefusedError,
    OutputValidationError,
)
from metis_core.events.redaction import redact
from metis_core.learning.evaluator.rubrics import Rubric
from metis_core.messages import Message, Role, TextBlock
from metis_core.messages.call_spend import CallSpend
from metis_core.structured.policy import OutputPolicy
from metis_core.structured.result import StructuredResult

MAX_SUBJECT_CHARS = 12_000
JUDGE_RETRIES = 2
"""Corrective retries after an answer that does not validate (each one priced)."""


class CriterionScore(BaseModel):
    name: str
    score: float = Field(ge=0.0, le=1.0)


class JudgeAnswer(BaseModel):
    """The verdict the judge must answer with (criteria as a list: a dict's free-form keys do not
    travel as a strict schema to every provider, docs/tool-schema-subset.md)."""

    score: float = Field(ge=0.0, le=1.0)
    confidence: float = Field(ge=0.0, le=1.0)
    rationale: str = ""
    criterion_scores: list[CriterionScore] = Field(default_factory=list)

    @property
    def criteria(self) -> dict[str, float]:
        return {c.name: c.score for c in self.criterion_scores}


@dataclass
class LlmVerdict:
    answer: JudgeAnswer
    model: str
    cost_usd: Decimal
    pricing_version: str | None
    latency_ms: int
    calls: int = 1
    """Model calls the verdict took (retries included); `cost_usd` is their sum."""


def judge_prompt(rubric: Rubric, user_text: str, answer_text: str) -> list[Message]:
    criteria = "\n".join(f"- {c.name} (weight {c.weight:g}): {c.description}" for c in rubric.criteria)
    system = (
        "You grade one exchange between a user and an AI assistant against a rubric. Answer with one "
        "JSON object and nothing else: {\"score\": number 0..1, \"confidence\": number 0..1, "
        "\"rationale\": short string, \"criterion_scores\": [{\"name\": criterion name, \"score\": number 0..1}]}. "
        "1.0 is a clear success.\n\n"
        f"Rubric {rubric.id} v{rubric.version}: {rubric.description}\nCriteria:\n{criteria}"
    )
    half = MAX_SUBJECT_CHARS // 2
    body = f"<user_message>\n{user_text[:half]}\n</user_message>\n<assistant_answer>\n{answer_text[:half]}\n" \
           "</assistant_answer>"
    return [Message(role=Role.SYSTEM, content=[TextBlock(text=system)]),
            Message(role=Role.USER, content=[TextBlock(text=body)])]


class LlmJudge:
    def __init__(self, client: ModelClient, model: str, policy: OutputPolicy | None = None) -> None:
        self.client = client
        self.model = model
        self.policy = policy or OutputPolicy(max_retries=JUDGE_RETRIES, max_truncation_retries=1)

    def judge(self, rubric: Rubric, user_text: str, answer_text: str) -> LlmVerdict:
        started = time.perf_counter()
        options = AdapterOptions(model=self.model, max_tokens=600, temperature=0.0)
        spend = CallSpend()
        settings = CallSettings(self.model, options, "", None, self.policy, None, {})
        try:
            run, model, caps = start_run(self.client, judge_prompt(rubric, user_text, answer_text), None,
                                         JudgeAnswer, settings)
            request = run.first_request()
            while True:  # the run decides each retry; every call is charged, the failed ones too
                message = self.client.complete(request.messages, model, tools=request.tools, options=request.options,
                                               capabilities=caps)
                spend.add(message.metadata.usage)
                step = run.take(message)
                if isinstance(step, StructuredResult):
                    break
                request = step
        except (OutputValidationError, OutputRefusedError) as error:
            raise JudgeOutputInvalidError(
                f"the judge's verdict is invalid after {spend.calls} attempt(s) "
                f"({redact(str(error), 500)})", cost_usd=_cost(spend)) from None
        except MetisError as error:
            raise JudgeCallFailedError(f"the judge model {self.model} failed: {redact(str(error), 500)}",
                                       cost_usd=_cost(spend)) from error
        latency = int((time.perf_counter() - started) * 1000)
        version = spend.usage.pricing_version if spend.usage is not None else None
        return LlmVerdict(step.value, self.model, _cost(spend), version, latency, spend.calls)


def _cost(spend: CallSpend) -> Decimal:
    usage = spend.usage
    return usage.cost_usd if usage is not None and usage.cost_usd is not None else Decimal(0)
