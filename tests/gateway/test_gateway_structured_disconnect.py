"""A client that leaves a structured ask cancels it: the attempt in flight is closed, nothing more is charged.

The structured run (StructuredRun: recovery, corrective retries) happens before the first byte, so
a client waiting on it, streamed or not, is watched for `http.disconnect` as a plain call is: the
upstream request in flight is cancelled at the socket and charged its input at the estimate, the
record pricing it the same (`llm.call_completed`, pricing_version estimated) before `turn.cancelled`
(client_disconnect); attempts that had already finished stay charged.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from pydantic import BaseModel
from structured_wire import WIRES

from .gateway_harness import GatewayHarness, gateway_before
from .stalling_upstream import StallingUpstream

CLAUDE = next(w for w in WIRES if w.model == "anthropic:claude-sonnet-4-5")  # output_config.format
ONE_CALL = Decimal("0.002490")  # the recorded answer: 705 input tokens at $3/M and 25 output at $15/M


class Person(BaseModel):
    age: int
    available: bool


def ask_and_leave(harness: GatewayHarness, token: str, stalling: StallingUpstream, *, stream: bool) -> None:
    """A Chat Completions `response_format` ask sent on a raw socket, closed once the stalling attempt is sent."""
    harness.post_and_leave("/v1/chat/completions", f"authorization: Bearer {token}", {
        "model": CLAUDE.model, "stream": stream, "messages": [{"role": "user", "content": "Ollama is 22 and busy."}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "Person", "strict": True,
                                                                   "schema": Person.model_json_schema()}},
    }, stalling)  # fmt: skip


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_client_leaving_a_structured_ask_cancels_the_upstream_and_charges_its_input(tmp_path: Path,
                                                                                      stream: bool) -> None:
    stalling = StallingUpstream(None)  # reads the request, never answers
    harness = gateway_before(tmp_path / "home", stalling)
    try:
        key_id, token = harness.issue(budget_usd=Decimal("5"), budget_period="day", tpm=100_000)
        ask_and_leave(harness, token, stalling, stream=stream)
        [sent] = stalling.requests
        assert json.loads(sent)["output_config"]["format"]["type"] == "json_schema"  # the structured path ran
        cancelled = harness.cancelled_turn()
        assert cancelled.payload == {"reason": "client_disconnect", "partial_llm_calls": 0,
                                     "partial_tool_calls": 0}
        assert cancelled.actor.value == "system"  # the client left: no cancel the user asked for
        assert harness.of_type("llm.call_failed") == [] and harness.of_type("turn.completed") == []
        [cut] = harness.of_type("llm.call_completed")  # the sent input, priced as the key was charged
        assert cut.payload["model"] == CLAUDE.model and cut.payload["pricing_version"] == "estimated"
        assert harness.of_type("llm.output_retried") == [] and harness.of_type("llm.output_exhausted") == []
        session_id = cancelled.session_id
        assert [m.role.value for m in harness.runtime.store.load_messages(session_id)] == ["user", "assistant"]
        session = harness.runtime.store.get_session(session_id)
        assert session.total_output_tokens == 0 and Decimal(str(cut.payload["cost_usd"])) == session.total_cost_usd
        assert 0 < harness.spent_today(key_id) == session.total_cost_usd < Decimal("0.0001")  # the input
    finally:
        harness.stop()


def test_a_client_leaving_during_a_corrective_retry_keeps_only_the_finished_attempt_charged(tmp_path: Path) -> None:
    wrong = CLAUDE.answer('{"age": "twenty-two", "available": false}').content  # violates the schema: retried
    stalling = StallingUpstream(None, answers=(("application/json", wrong),))
    harness = gateway_before(tmp_path / "home", stalling)
    try:
        key_id, token = harness.issue(budget_usd=Decimal("5"), budget_period="day")
        ask_and_leave(harness, token, stalling, stream=False)
        _, second = (json.loads(r) for r in stalling.requests)
        assert "$.age" in second["messages"][-1]["content"][-1]["text"]  # the stalled call is the correction
        cancelled = harness.cancelled_turn()
        completed, cut = harness.of_type("llm.call_completed")
        [retried] = harness.of_type("llm.output_retried")
        assert retried.parent_event_id == completed.id and harness.of_type("llm.call_failed") == []
        assert completed.payload["gateway_key_id"] == key_id and cut.payload["pricing_version"] == "estimated"
        assert cancelled.payload["reason"] == "client_disconnect"
        assert harness.of_type("turn.completed") == []
        # the first attempt was answered and paid; the second, cancelled, is charged its input at the estimate
        assert ONE_CALL < harness.spent_today(key_id) < ONE_CALL + Decimal("0.0005")
        session = harness.runtime.store.get_session(cancelled.session_id)  # the record tells the same spend
        assert session is not None and session.total_cost_usd == harness.spent_today(key_id)
    finally:
        harness.stop()
