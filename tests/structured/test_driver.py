"""StructuredRun on its own (no I/O): budgets, the model's output limit, and what each step records."""

from __future__ import annotations

from typing import Any

import pytest

from metis_core.adapters.base import DIRECT_ROUTING, AdapterOptions
from metis_core.errors import OutputRefusedError, OutputValidationError
from metis_core.messages import Message, Role, TextBlock
from metis_core.messages.message import user_message
from metis_core.messages.metadata import MessageMetadata, Usage
from metis_core.secret_scrub import remember_secret
from metis_core.structured import OutputPolicy, OutputStep, StructuredResult, output_spec
from metis_core.structured.driver import StructuredRun
from metis_core.structured.plan import instructions_plan
from metis_core.structured.steps import OutputTruncated, RetryExhausted

SPEC = output_spec({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}, name="count")


def _answer(text: str, stop: str = "end_turn", output_tokens: int = 7) -> Message:
    return Message(role=Role.ASSISTANT, content=[TextBlock(text=text)],
                   metadata=MessageMetadata(model="openai_compatible:local", provider="openai_compatible",
                                            routing=DIRECT_ROUTING, stop_reason=stop,
                                            usage=Usage(output_tokens=output_tokens)))


def _run(policy: OutputPolicy, *, max_tokens: int | None = 1000, limit: int = 4000,
         steps: list[OutputStep] | None = None) -> StructuredRun:
    return StructuredRun(spec=SPEC, plan=instructions_plan(SPEC), model="openai_compatible:local",
                         messages=[user_message("count")], tools=[],
                         options=AdapterOptions(model="openai_compatible:local", max_tokens=max_tokens),
                         max_output_tokens=limit, policy=policy, observer=None if steps is None else steps.append)


def test_doubling_stops_at_the_models_output_limit_then_exhausts_as_truncation() -> None:
    steps: list[OutputStep] = []
    run = _run(OutputPolicy(max_truncation_retries=5), steps=steps)
    budgets = []
    request: Any = run.first_request()
    with pytest.raises(OutputValidationError) as exhausted:
        while True:
            budgets.append(request.options.max_tokens)
            request = run.take(_answer('{"n": ', "max_tokens"))
    assert budgets == [1000, 2000, 4000]
    assert exhausted.value.final_reason == "truncation"
    truncations = [s for s in steps if isinstance(s, OutputTruncated)]
    assert [t.next_max_tokens for t in truncations] == [2000, 4000, None]
    assert all(t.partial_payload_available for t in truncations)
    assert isinstance(steps[-1], RetryExhausted) and steps[-1].total_attempts == 3


def test_without_a_callers_budget_truncation_doubles_the_tokens_the_answer_used() -> None:
    run = _run(OutputPolicy(), max_tokens=None, limit=100_000)
    assert run.first_request().options.max_tokens is None
    retry: Any = run.take(_answer('{"n": ', "max_tokens", 16_384))
    assert retry.options.max_tokens == 32_768
    capped: Any = _run(OutputPolicy(), max_tokens=None, limit=20_000).take(
        _answer('{"n": ', "max_tokens", 16_384))
    assert capped.options.max_tokens == 20_000


def test_without_a_budget_or_a_token_count_truncation_doubles_from_the_default() -> None:
    run = _run(OutputPolicy(), max_tokens=None, limit=100_000)
    retry: Any = run.take(_answer('{"n": ', "max_tokens", 0))
    assert retry.options.max_tokens == 8192


def test_a_clean_answer_after_a_retry_keeps_every_attempt() -> None:
    run = _run(OutputPolicy(max_retries=1))
    run.first_request()
    retry: Any = run.take(_answer('{"n": "three"}'))
    assert "Validator errors" in retry.messages[-1].text()
    done = run.take(_answer('{"n": 3}'))
    assert isinstance(done, StructuredResult) and done.value == {"n": 3} and done.retries == 1
    assert [a.to_json()["outcome"] for a in done.attempts] == ["schema-violation", "ok"]


def test_recovery_can_be_turned_off() -> None:
    run = _run(OutputPolicy(recover=False, max_retries=0))
    run.first_request()
    with pytest.raises(OutputValidationError, match="parse-error"):
        run.take(_answer('```json\n{"n": 3}\n```'))


def test_a_refusal_text_never_carries_a_known_secret() -> None:
    remember_secret("sk-test-REFUSAL-0123456789abcdef")
    run = _run(OutputPolicy())
    run.first_request()
    with pytest.raises(OutputRefusedError) as refused:
        run.take(_answer("I cannot use sk-test-REFUSAL-0123456789abcdef", "refusal"))
    assert "0123456789abcdef" not in str(refused.value) and "0123456789abcdef" not in str(refused.value.refusal_text)


@pytest.mark.parametrize("policy", [{"max_retries": -1}, {"max_retries": 10, "max_truncation_retries": 6}])
def test_budgets_outside_openwops_bounds_are_refused(policy: dict[str, int]) -> None:
    with pytest.raises(ValueError, match=r"attempts|negative"):
        OutputPolicy(**policy)
