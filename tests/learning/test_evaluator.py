"""The evaluator on the bus: eval.started → eval.completed | eval.failed, one per failure mode,
never breaking the turn. The LLM judge answers through the recorded Anthropic response shape
(response__text.json) with its text replaced by the verdict under test."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from fixture_files import read_bytes
from support_servers import Reply

from metis_core.events.catalog import make_event
from metis_core.events.envelope import Actor, Event, Sensitivity
from metis_core.events.payloads.evaluation import RATIONALE_SIGNAL
from metis_core.learning.settings import LearningSettings

from .conftest import CHEAP, LearningHarness


def judge_reply(text: str) -> Reply:
    body = json.loads(read_bytes("anthropic", "response__text.json"))
    body["content"][0]["text"] = text
    return Reply.json(body)


def pair(h: LearningHarness, session_id: str) -> tuple[Event, Event]:
    (started,) = h.of_type("eval.started", session_id)
    (ended,) = [e for e in h.events(session_id) if e.type in ("eval.completed", "eval.failed")]
    return started, ended


def harness(tmp_path: Path, **settings: object) -> LearningHarness:
    (tmp_path / "ws").mkdir()
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "routing.yaml").write_text("default: anthropic:claude-sonnet-4-6\n")
    return LearningHarness(tmp_path / "home", tmp_path / "ws", LearningSettings.model_validate(settings))


async def test_heuristic_verdict_after_turn_completed_is_pseudonymous(learning: LearningHarness) -> None:
    h = learning
    h.answers(1)
    session = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(session, "Hello")
    started, completed = pair(h, session.id)
    turn_completed = h.of_type("turn.completed", session.id)[0]
    assert started.parent_event_id == turn_completed.id and started.actor is Actor.SYSTEM
    assert started.sensitivity is Sensitivity.PSEUDONYMOUS
    assert started.payload == {"eval_id": started.payload["eval_id"], "subject_kind": "turn",
                               "subject_id": result.turn_id, "rubric_id": "turn-default", "rubric_version": "1",
                               "judge_kind_planned": "heuristic", "trigger": "bus"}
    assert completed.type == "eval.completed" and completed.parent_event_id == started.id
    assert completed.sensitivity is Sensitivity.PSEUDONYMOUS
    p = completed.payload
    assert p["eval_id"] == started.payload["eval_id"] and p["score"] == 0.75 and p["judge_kind"] == "heuristic"
    assert p["judge_cost_usd"] == "0" and p["judge_pricing_version"] is None and p["judge_model"] is None
    assert p["signals"] == {"heuristic": {"ended": "completed"}}
    (stored,) = h.loop.verdicts.of_subject("turn", result.turn_id)
    assert stored.eval_id == p["eval_id"] and stored.score == 0.75


async def test_feedback_re_evaluates_and_the_old_verdict_stays(learning: LearningHarness) -> None:
    h = learning
    h.answers(1)
    session = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(session, "Hello")
    h.events()
    feedback = h.loop.feedback.rate(session.id, "up")
    h.events()
    starts = h.of_type("eval.started", session.id)
    assert [s.payload["trigger"] for s in starts] == ["bus", "feedback_arrived"]
    assert starts[1].parent_event_id == feedback.id
    verdicts = h.loop.verdicts.of_subject("turn", result.turn_id)
    assert [v.score for v in verdicts] == [0.75, 0.95]


async def test_the_feedback_that_asks_for_an_evaluation_counts_before_the_trace_holds_it(
        learning: LearningHarness) -> None:
    # The retry signal reaches the evaluator's subscriber on its own thread, possibly before the trace
    # writer has stored it: the evaluation it triggers must still read it.
    h = learning
    h.answers(1)
    session = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(session, "Hello")
    h.events()
    assert result.turn_id is not None
    retry = make_event("feedback.implicit", {"type": "retry", "confidence": 0.9, "subject_turn_id": result.turn_id,
                                             "context": {}}, session_id=session.id, actor=Actor.SYSTEM)
    verdict = h.loop.evaluator.evaluate("turn", result.turn_id, trigger="feedback_arrived", parent=retry)
    assert verdict is not None and verdict.score < 0.5


async def test_llm_judge_verdict_is_priced_and_its_rationale_is_opt_in(tmp_path: Path) -> None:
    h = harness(tmp_path, judge_model=CHEAP, capture_rationale=True)
    try:
        h.answers(1)
        h.script.script("anthropic", [judge_reply(
            '{"score": 0.2, "confidence": 0.9, "rationale": "Answered a greeting, not the question; mail '
            'me at a@b.example", "criterion_scores": [{"name": "task_completed", "score": 0.1}]}')])
        session = h.runtime.sessions.create(h.workspace)
        await h.runtime.turns.run(session, "What is the capital of Peru?")
        started, completed = pair(h, session.id)
        assert started.payload["judge_kind_planned"] == "hybrid"
        p = completed.payload
        assert p["judge_kind"] == "hybrid" and p["judge_model"] == CHEAP
        assert Decimal(p["judge_cost_usd"]) == Decimal("0.00083")  # 705 in, 25 out at 1 / 5 USD per million
        assert p["judge_pricing_version"] and p["signals"]["criteria"] == {"task_completed": 0.1}
        assert p["signals"][RATIONALE_SIGNAL].endswith("mail me at [email]")
        assert completed.sensitivity is Sensitivity.USER_CONTROLLED
        assert p["score"] == round((0.75 * 0.4 + 0.2 * 0.9) / 1.3, 4)
        judge_request = h.script.requests[-1][2]
        assert "What is the capital of Peru?" in json.dumps(judge_request)
    finally:
        h.runtime.close()


async def test_judge_answer_that_is_not_a_verdict_is_judge_output_invalid(tmp_path: Path) -> None:
    h = harness(tmp_path, judge_model=CHEAP, judge_daily_cap_usd="0.002")
    try:
        h.answers(1)
        h.script.script("anthropic", [judge_reply('{"score": 7, "confidence": 0.5}')] * 3)  # the answer and 2 retries
        session = h.runtime.sessions.create(h.workspace)
        result = await h.runtime.turns.run(session, "Hello")
        assert result.error is None and result.answer == "Hello there!"
        started, failed = pair(h, session.id)
        assert failed.type == "eval.failed" and failed.parent_event_id == started.id
        assert failed.payload["failure_mode"] == "judge_output_invalid" and "score" in failed.payload["error_message"]
        assert "after 3 attempt(s)" in failed.payload["error_message"] and len(h.script.requests) == 4
        assert "the judge's attempts cost 0.00249 USD" in failed.payload["error_message"]  # 3 x 705 in / 25 out
        assert h.loop.evaluator._over_cap()  # no verdict was stored, yet the failed attempts reached the cap
        assert failed.sensitivity is Sensitivity.PSEUDONYMOUS
        assert h.loop.verdicts.of_subject("turn", result.turn_id) == []
    finally:
        h.runtime.close()


async def test_the_judge_retries_an_invalid_verdict_recovers_a_wrapped_one_and_is_charged_for_both(
    tmp_path: Path,
) -> None:
    h = harness(tmp_path, judge_model=CHEAP)
    try:
        h.answers(1)
        h.script.script("anthropic", [judge_reply('{"score": 7, "confidence": 0.5}'), judge_reply(
            'Here is my verdict:\n```json\n{"score": 0.4, "confidence": 0.8, "criterion_scores": []}\n```')])
        session = h.runtime.sessions.create(h.workspace)
        await h.runtime.turns.run(session, "Hello")
        _, completed = pair(h, session.id)
        judge_requests = [body for _, _, body, _ in h.script.requests[1:]]
    finally:
        h.runtime.close()
    assert completed.type == "eval.completed" and completed.payload["judge_kind"] == "hybrid"
    assert Decimal(completed.payload["judge_cost_usd"]) == 2 * Decimal("0.00083")  # both attempts, 705 in / 25 out each
    assert judge_requests[0]["output_config"]["format"]["type"] == "json_schema"  # the schema travels natively
    assert "score" in json.dumps(judge_requests[1]["messages"][-1])  # the retry names what was wrong


async def test_judge_call_that_fails_is_judge_call_failed(tmp_path: Path) -> None:
    h = harness(tmp_path, judge_model=CHEAP)
    try:
        h.answers(1)
        h.script.script("anthropic", [Reply.fixture("anthropic", "error__529_overloaded_error.json", status=529)])
        session = h.runtime.sessions.create(h.workspace)
        result = await h.runtime.turns.run(session, "Hello")
        assert result.error is None
        _, failed = pair(h, session.id)
        assert failed.payload["failure_mode"] == "judge_call_failed"
        assert CHEAP in failed.payload["error_message"] and "test-key" not in failed.payload["error_message"]
    finally:
        h.runtime.close()


async def test_over_the_daily_cap_the_verdict_is_heuristic(tmp_path: Path) -> None:
    h = harness(tmp_path, judge_model=CHEAP, judge_daily_cap_usd="0")
    try:
        h.answers(1)
        session = h.runtime.sessions.create(h.workspace)
        await h.runtime.turns.run(session, "Hello")
        _, completed = pair(h, session.id)
        assert completed.payload["judge_kind"] == "heuristic" and completed.payload["signals"]["llm_skipped"] == \
            "daily_cap"
        assert len(h.script.requests) == 1  # the turn only: no judge call
    finally:
        h.runtime.close()


async def test_unknown_subject_is_subject_not_found(learning: LearningHarness) -> None:
    h = learning
    assert h.loop.evaluator.evaluate("turn", "01NOSUCHTURN000000000000000", trigger="batch") is None
    (failed,) = h.of_type("eval.failed")
    assert failed.payload["failure_mode"] == "subject_not_found"
    (started,) = h.of_type("eval.started")
    assert failed.parent_event_id == started.id and started.parent_event_id is None


async def test_broken_user_rubric_is_rubric_invalid_and_the_turn_is_unharmed(learning: LearningHarness) -> None:
    h = learning
    (h.home / "rubrics").mkdir()
    (h.home / "rubrics" / "turn-default.yaml").write_text("id: turn-default\nversion: '2'\nsubject: turn\n"
                                                            "criteria: []\n")
    h.answers(1)
    session = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(session, "Hello")
    assert result.error is None
    started, failed = pair(h, session.id)
    assert started.payload["rubric_version"] == "unloadable"
    assert failed.payload["failure_mode"] == "rubric_invalid" and "criteria" in failed.payload["error_message"]


async def test_batch_run_scores_only_what_has_no_verdict(learning: LearningHarness) -> None:
    h = learning
    h.answers(1)
    session = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(session, "Hello")
    h.runtime.sessions.end(session)
    h.events()
    assert h.loop.triggers.run_batch() == []
    again = h.loop.triggers.run_batch(again=True)
    assert len(again) == 2 and all(v is not None and v.trigger == "batch" for v in again)


async def test_the_session_score_counts_the_llm_judges_verdict_on_its_turn(tmp_path: Path) -> None:
    h = harness(tmp_path, judge_model=CHEAP)
    try:
        h.answers(1)
        h.script.script("anthropic", [judge_reply('{"score": 0.3, "confidence": 0.9}')])
        session = h.runtime.sessions.create(h.workspace)
        result = await h.runtime.turns.run(session, "What is the capital of Peru?")
        h.events()
        h.runtime.sessions.end(session)
        h.events()
        (turn_verdict,) = h.loop.verdicts.of_subject("turn", result.turn_id)
        (session_verdict,) = h.loop.verdicts.of_subject("session", session.id)
        assert turn_verdict.judge_kind == "hybrid" and turn_verdict.score == round((0.75 * 0.4 + 0.3 * 0.9) / 1.3, 4)
        assert session_verdict.score == turn_verdict.score != 0.75
    finally:
        h.runtime.close()
