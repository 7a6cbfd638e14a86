"""The LLM judge: a configured model reads the rubric and the turn and answers a JSON verdict.

The answer must be one JSON object `{"score": 0..1, "confidence": 0..1, "rationale": str,
"criteria": {name: 0..1}}`; anything else is JudgeOutputInvalidError. A failed call is
JudgeCallFailedError. The call is priced like any other (usage cost from the price table); the
daily cap is enforced by the evaluator before calling. Until structured output lands in the
adapters, validation here is the contract.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from decimal import Decimal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.client import ModelClient
from metis_core.errors import JudgeCallFailedError, JudgeOutputInvalidError, MetisError
from metis_core.events.redaction import redact
from metis_core.learning.evaluator.rubrics import Rubric
from metis_core.messages import Message, Role, TextBlock

MAX_SUBJECT_CHARS = 12_000
JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


class JudgeAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    score: float = Field(ge=0.0, le=1.0)
    confidence: float = Field(ge=0.0, le=1.0)
    rationale: str = ""
    criteria: dict[str, float] = Field(default_factory=dict)


@dataclass
class LlmVerdict:
    answer: JudgeAnswer
    model: str
    cost_usd: Decimal
    pricing_version: str | None
    latency_ms: int


def judge_prompt(rubric: Rubric, user_text: str, answer_text: str) -> list[Message]:
    criteria = "\n".join(f"- {c.name} (weight {c.weight:g}): {c.description}" for c in rubric.criteria)
    system = (
        "You grade one exchange between a user and an AI assistant against a rubric. Answer with one "
        "JSON object and nothing else: {\"score\": number 0..1, \"confidence\": number 0..1, "
        "\"rationale\": short string, \"criteria\": {criterion name: number 0..1}}. 1.0 is a clear success.\n\n"
        f"Rubric {rubric.id} v{rubric.version}: {rubric.description}\nCriteria:\n{criteria}"
    )
    half = MAX_SUBJECT_CHARS // 2
    body = f"<user_message>\n{user_text[:half]}\n</user_message>\n<assistant_answer>\n{answer_text[:half]}\n" \
           "</assistant_answer>"
    return [Message(role=Role.SYSTEM, content=[TextBlock(text=system)]),
            Message(role=Role.USER, content=[TextBlock(text=body)])]


def parse_answer(text: str) -> JudgeAnswer:
    """The verdict in the judge's text; JudgeOutputInvalidError when there is none."""
    match = JSON_OBJECT.search(text)
    if match is None:
        raise JudgeOutputInvalidError("the judge answered without a JSON object")
    try:
        data = orjson.loads(match.group(0))
    except orjson.JSONDecodeError as error:
        raise JudgeOutputInvalidError(f"the judge's JSON does not parse ({error})") from None
    try:
        return JudgeAnswer.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'answer'}: {e['msg']}" for e in error.errors())
        raise JudgeOutputInvalidError(f"the judge's verdict is invalid ({problems})") from None


class LlmJudge:
    def __init__(self, client: ModelClient, model: str) -> None:
        self.client = client
        self.model = model

    def judge(self, rubric: Rubric, user_text: str, answer_text: str) -> LlmVerdict:
        started = time.perf_counter()
        options = AdapterOptions(model=self.model, max_tokens=600, temperature=0.0)
        try:
            message = self.client.complete(judge_prompt(rubric, user_text, answer_text), self.model, options=options)
        except MetisError as error:
            raise JudgeCallFailedError(f"the judge model {self.model} failed: {redact(str(error), 500)}") from error
        latency = int((time.perf_counter() - started) * 1000)
        answer = parse_answer(message.text())
        usage = message.metadata.usage
        cost = usage.cost_usd if usage is not None and usage.cost_usd is not None else Decimal(0)
        version = usage.pricing_version if usage is not None else None
        return LlmVerdict(answer, self.model, cost, version, latency)
