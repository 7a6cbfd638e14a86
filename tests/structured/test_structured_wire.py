"""complete(output=...) on every provider, over recorded wire shapes: the seven cases of the issue's bar.

Success, fenced output recovered, violation then a corrective retry, truncation then a doubled
budget, refusal never retried, exhaustion with NL-to-format and without. Each runs the adapter's real
request builder and response parser through httpx.MockTransport.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from mock_http import serve
from pydantic import BaseModel
from structured_wire import WIRES, Wire

from metis_core.adapters.base import AdapterOptions
from metis_core.errors import OutputRefusedError, OutputValidationError
from metis_core.messages.message import user_message
from metis_core.structured import OutputPolicy, OutputStep
from metis_core.structured.steps import (
    NlToFormatEngaged,
    OutputRefused,
    OutputTruncated,
    RecoveryApplied,
    RetryAttempted,
    RetryExhausted,
)


class Person(BaseModel):
    """Who someone is and whether they are free."""

    age: int
    available: bool


GOOD = '{"age": 22, "available": false}'
BAD = '{"age": "twenty-two", "available": false}'
PROMPT = [user_message("Ollama is 22 years old and busy saving the world. Return a JSON object with the age "
                       "and availability.")]


def _good(wire: Wire) -> Any:
    if wire.mode == "tool":
        return wire.tool_answer("Person", {"age": 22, "available": False})
    return wire.answer(GOOD)


def _bad(wire: Wire) -> Any:
    if wire.mode == "tool":
        return wire.tool_answer("Person", {"age": "twenty-two", "available": False})
    return wire.answer(BAD)


def _client(wire: Wire, *responses: Any) -> Any:
    provider = wire.model.partition(":")[0]
    return serve(*responses, provider=provider)


def _bodies(server: Any) -> list[dict[str, Any]]:
    return [json.loads(request.content) for request in server.requests]


def _run(wire: Wire, *responses: Any, policy: OutputPolicy | None = None,
         options: AdapterOptions | None = None) -> tuple[Any, list[dict[str, Any]], list[OutputStep]]:
    client, server = _client(wire, *responses)
    steps: list[OutputStep] = []
    try:
        result = client.complete(PROMPT, wire.model, output=Person, output_policy=policy, options=options,
                                 on_output_step=steps.append)
    except (OutputRefusedError, OutputValidationError) as error:
        return error, _bodies(server), steps
    return result, _bodies(server), steps


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.model)
def test_success_carries_the_schema_in_the_models_native_mode(wire: Wire) -> None:
    result, bodies, steps = _run(wire, _good(wire))
    assert result.value == Person(age=22, available=False)
    assert result.mode == wire.mode and len(result.attempts) == 1 and steps == []
    mode, carried = wire.carried(bodies[0])
    assert mode == wire.mode
    if wire.mode == "json_schema":
        schema = carried.get("schema", carried)
        assert set(schema["properties"]) == {"age", "available"}
    if wire.mode == "tool":
        tools, choice = carried
        assert [t["name"] for t in tools] == ["Person"] and choice == {"type": "tool", "name": "Person"}
    if wire.mode == "instructions":
        assert '"required":["age","available"]' in bodies[0]["messages"][0]["content"]


@pytest.mark.parametrize("wire", [w for w in WIRES if w.mode != "tool"], ids=lambda w: w.model)
def test_fenced_output_is_recovered_without_a_retry_and_recorded_by_path_and_offset(wire: Wire) -> None:
    text = f"Here is the JSON:\n```json\n{GOOD}\n```\nAnything else?"
    result, bodies, steps = _run(wire, wire.answer(text))
    assert result.value.age == 22 and len(bodies) == 1
    assert steps == [RecoveryApplied(wire.model, "Person", 1, "markdown-fence", len("Here is the JSON:\n```json\n"))]
    assert result.attempts[0].recovery is not None and result.attempts[0].recovery.path == "markdown-fence"


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.model)
def test_violation_is_retried_with_a_corrective_fragment_naming_the_errors_not_the_output(wire: Wire) -> None:
    result, bodies, steps = _run(wire, _bad(wire), _good(wire))
    assert result.value.age == 22 and len(bodies) == 2
    assert [a.outcome for a in result.attempts] == ["schema-violation", "ok"]
    retry = steps[0]
    assert isinstance(retry, RetryAttempted) and retry.attempt == 2 and retry.reason == "schema-violation"
    assert retry.previous_error is not None and "$.age" in retry.previous_error
    second = wire.request_text(bodies[1])
    assert "$.age: Input should be a valid integer" in second
    assert "twenty-two" not in second and "twenty-two" not in str(retry.previous_error)


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.model)
def test_truncation_is_retried_with_the_output_budget_doubled(wire: Wire) -> None:
    options = AdapterOptions(model=wire.model, max_tokens=300)
    result, bodies, steps = _run(wire, wire.truncated('{"'), _good(wire), options=options)
    assert result.value.age == 22
    assert [wire.max_tokens(b) for b in bodies] == [300, 600]
    assert [a.outcome for a in result.attempts] == ["truncation", "ok"]
    truncated = steps[0]
    assert isinstance(truncated, OutputTruncated) and truncated.next_max_tokens == 600
    assert isinstance(steps[1], RetryAttempted) and steps[1].reason == "truncation"


@pytest.mark.parametrize("wire", [w for w in WIRES if w.key != "ollama"], ids=lambda w: w.model)
def test_refusal_is_never_retried_and_carries_the_providers_text(wire: Wire) -> None:
    error, bodies, steps = _run(wire, wire.refusal(), _good(wire))
    assert isinstance(error, OutputRefusedError) and len(bodies) == 1
    refused = steps[0]
    assert isinstance(refused, OutputRefused)
    if wire.key == "gemini":
        assert refused.safety_category == "SAFETY"
    elif wire.key == "anthropic":
        assert (refused.refusal_text, refused.safety_category) == ("This request was refused due to policy.", "cyber")
    else:
        assert error.refusal_text and "sorry" in error.refusal_text
    assert isinstance(steps[-1], RetryExhausted) and steps[-1].final_reason == "refusal"


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.model)
def test_exhaustion_falls_back_to_nl_to_format_when_enabled(wire: Wire) -> None:
    policy = OutputPolicy(max_retries=1, nl_to_format=True)
    free_form = wire.answer("She is 22 and not available.")
    result, bodies, steps = _run(wire, _bad(wire), _bad(wire), free_form, _good(wire), policy=policy)
    assert result.value.age == 22 and result.nl_to_format and len(bodies) == 4
    assert [a.kind for a in result.attempts] == ["constrained", "constrained", "free-form", "reformat"]
    assert any(isinstance(s, NlToFormatEngaged) for s in steps)
    assert [wire.constrained(b) for b in bodies] == [True, True, False, True]
    assert "She is 22 and not available." in wire.request_text(bodies[3])


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.model)
def test_exhaustion_without_fallback_names_every_attempts_reason(wire: Wire) -> None:
    error, bodies, steps = _run(wire, _bad(wire), policy=OutputPolicy(max_retries=2))
    assert isinstance(error, OutputValidationError) and len(bodies) == 3
    assert [a.outcome for a in error.attempts] == ["schema-violation"] * 3
    assert "attempt 3: schema-violation: $.age" in str(error)
    exhausted = steps[-1]
    assert isinstance(exhausted, RetryExhausted) and exhausted.total_attempts == 3


@pytest.mark.parametrize(("model", "first", "used", "retried"), [
    ("anthropic:claude-sonnet-4-5", 16_384, 16_384, 32_768),  # the adapter's own default, doubled
    ("ollama:llama3.1", None, 1_500, 3_000),  # no num_predict sent: the server's budget, read off the answer
])
def test_without_a_callers_budget_truncation_doubles_what_the_first_request_allowed(
    model: str, first: int | None, used: int, retried: int
) -> None:
    wire = next(w for w in WIRES if w.model == model)
    cut = json.loads(wire.truncated('{"').content)
    if wire.key == "anthropic":
        cut["usage"]["output_tokens"] = used
    else:
        cut["eval_count"] = used
    result, bodies, steps = _run(wire, httpx.Response(200, json=cut), _good(wire))
    assert result.value.age == 22 and [wire.max_tokens(b) for b in bodies] == [first, retried]
    assert isinstance(steps[0], OutputTruncated) and steps[0].next_max_tokens == retried
    assert isinstance(steps[1], RetryAttempted) and steps[1].previous_error == \
        f"stopped at max_tokens={used}; retrying with {retried}"
