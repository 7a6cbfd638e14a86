"""Every feedback path reaches the pattern outcome of the turn it concerns: feedback before the
session ends, feedback after it (the library call `metis feedback` makes), implicit signals in the
session and after its end; and late feedback alone is enough to steer pattern routing."""

from __future__ import annotations

from metis_core.cli.trace_view import describe
from metis_core.events.catalog import make_event
from metis_core.events.envelope import Actor

from .conftest import CHEAP, STRONG, LearningHarness
from .test_pattern_routing import PROOF, SUMMARY, session


def outcome_scores(h: LearningHarness) -> list[float | None]:
    (stored,) = h.loop.patterns.fingerprints()
    return [o.score for o in h.loop.patterns.outcomes([stored.id])]


async def finished_session(h: LearningHarness, text: str, model: str | None = None) -> str:
    return await session(h, text, model=model)


async def test_feedback_before_the_end_is_the_recorded_score(learning: LearningHarness) -> None:
    await session(learning, SUMMARY, good=False)
    assert outcome_scores(learning) == [0.05]


async def test_feedback_after_the_end_rescores_the_outcome_and_records_it_again(learning: LearningHarness) -> None:
    h = learning
    sid = await finished_session(h, SUMMARY)
    assert outcome_scores(h) == [0.75]
    h.loop.feedback.rate(sid, "down", turn=1)
    h.loop.settle()
    assert outcome_scores(h) == [0.05]
    first, again = h.of_type("pattern.recorded", sid)
    ended = h.of_type("session.ended", sid)[0]
    assert again.parent_event_id == ended.id and again.turn_id == first.turn_id
    assert again.payload["success_score"] == 0.05 and again.payload["fingerprint_id"] == first.payload["fingerprint_id"]
    assert (again.payload["sample_size_before"], again.payload["sample_size_after"]) == (1, 1)
    h.loop.feedback.rate(sid, "up", scope="session")  # the whole session: its turn's outcome keeps its own verdict
    h.loop.settle()
    assert outcome_scores(h) == [0.05] and len(h.of_type("pattern.recorded", sid)) == 2


async def test_rating_the_whole_session_rescores_its_turns_not_rated_themselves(learning: LearningHarness) -> None:
    h = learning
    h.answers(2)
    s = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(s, PROOF)
    await h.runtime.turns.run(s, "Summarize the proof in one line")
    h.runtime.sessions.end(s)
    h.loop.feedback.rate(s.id, "up", turn=2)
    h.loop.feedback.rate(s.id, "down", scope="session")  # `metis feedback SID down`, after the end
    h.loop.settle()
    scores = dict(h.loop.db.rows("SELECT turn_id, score FROM pattern_outcomes"))
    first, second = (e.turn_id for e in h.of_type("turn.started", s.id))
    assert scores == {first: 0.05, second: 0.95}
    (turn_verdict,) = [v for v in h.loop.verdicts.of_subject("turn", str(first)) if v.score == 0.05]
    assert turn_verdict.signals["heuristic"]["explicit_session"] == "thumbs_down"


async def test_an_implicit_retry_in_the_session_lowers_the_recorded_score(learning: LearningHarness) -> None:
    h = learning
    h.answers(2)
    s = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(s, PROOF)
    await h.runtime.turns.run(s, PROOF.lower() + "!")
    h.runtime.sessions.end(s)
    h.loop.settle()
    (retry,) = h.of_type("feedback.implicit", s.id)
    scores = outcome_scores(h)
    assert retry.payload["type"] == "retry" and len(scores) == 2
    assert scores[0] is not None and scores[0] < 0.5 < 0.75 == scores[1]


async def test_a_signal_that_reaches_the_recorder_before_the_trace_holds_it_still_scores_the_turn(
        learning: LearningHarness) -> None:
    # The recorder and the trace writer each read the bus on a thread of their own: a retry signal can
    # reach the recorder, before the turn's outcome is recorded, while the trace does not hold it yet.
    h = learning
    h.answers(1)
    s = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(s, PROOF)
    h.loop.settle()
    retry = make_event("feedback.implicit", {"type": "retry", "confidence": 0.9, "subject_turn_id": result.turn_id,
                                             "context": {}}, session_id=s.id, actor=Actor.SYSTEM)
    h.loop.recorder.implicit_arrived(retry)  # never emitted: the trace will not hold it
    h.runtime.sessions.end(s)
    h.loop.settle()
    (score,) = outcome_scores(h)
    assert score is not None and score < 0.5


async def test_an_implicit_abandon_after_the_end_rescores_the_last_turn(learning: LearningHarness) -> None:
    h = learning
    h.answers(1)
    s = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(s, SUMMARY)
    h.runtime.sessions.end(s, "abandoned")
    h.loop.settle()
    (abandon,) = h.of_type("feedback.implicit", s.id)
    assert abandon.payload["type"] == "abandon"
    assert outcome_scores(h) == [0.5]  # 0.75 - 0.5 × its confidence 0.5


async def test_late_feedback_alone_moves_proofs_off_the_model_rated_down(learning: LearningHarness) -> None:
    h = learning
    for _ in range(5):
        for text, model, good in ((SUMMARY, CHEAP, True), (SUMMARY, STRONG, True), (PROOF, CHEAP, False),
                                  (PROOF, STRONG, True)):
            sid = await finished_session(h, text, model)
            h.loop.feedback.rate(sid, "up" if good else "down", turn=1)  # as `metis feedback SID 1 up|down`
            h.loop.settle()
    summary = await finished_session(h, "Summarize the quarterly report in three bullet points")
    proof = await finished_session(h, "Prove that there are infinitely many primes")
    assert h.of_type("route.decided", summary)[0].payload["chosen_model"] == CHEAP
    assert h.of_type("route.decided", proof)[0].payload["chosen_model"] == STRONG
    (matched,) = h.of_type("pattern.matched", proof)
    assert matched.payload["chosen_model"] == STRONG
    decided = h.of_type("route.decided", proof)[0]
    reason = decided.payload["chain"][decided.payload["winner_index"]]["reason"]
    assert "scored best per dollar on 5 similar turns" in reason  # `metis trace show` says why
    assert describe(decided) == f"→ {STRONG} · {reason}"
    p = matched.payload
    assert describe(matched) == (f"{STRONG} · confidence {p['confidence']:.2f} · {p['sample_size']} samples · "
                                 f"{p['alternatives_count']} models scored on {p['k_cluster_size']} similar "
                                 f"fingerprint(s) · {p['fingerprint_kind']} {p['fingerprint_id']}")
