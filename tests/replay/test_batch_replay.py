"""`replay_sessions` over a query: which sessions a query selects, and the summary of cost and divergence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from support_servers import Reply

from metis_core.errors import ReplayError
from metis_core.replay.batch import matching_sessions, parse_query, replay_sessions

from .conftest import ReplayHarness


def test_a_query_reads_workspace_dates_tag_limit_and_words() -> None:
    query = parse_query("workspace:/srv/app since:2026-01-01 until:2026-01-31 tag:billing limit:5 refund policy")
    assert query.workspace == "/srv/app" and query.tag == "billing" and query.limit == 5
    assert query.since == datetime(2026, 1, 1, tzinfo=UTC)
    assert query.until == datetime(2026, 2, 1, tzinfo=UTC), "until is inclusive of its day"
    assert query.text == "refund policy"
    assert query.replays == "exclude", "replay sessions are left out unless asked"
    assert parse_query("replays:include").replays == "include" and parse_query("replays:only").replays == "only"


@pytest.mark.parametrize(("text", "message"), [
    ("since:yesterday", "since:yesterday is not a date"), ("limit:0", "limit:0 must be a positive"),
    ("tag:", "tag: needs a value"), ("replays:yes", "replays:yes must be replays:include"),
])
def test_a_bad_query_term_is_named(text: str, message: str) -> None:
    with pytest.raises(ReplayError, match=message):
        parse_query(text)


async def test_sessions_are_selected_by_tag_and_date_and_replays_are_never_reselected(harness: ReplayHarness) -> None:
    h = harness
    tagged = await h.record_original()
    h.runtime.store.update_session(tagged, title="weather bot #billing")
    other = await h.record_original()
    store = h.runtime.store
    assert [r.id for r in matching_sessions(store, parse_query("tag:billing"))] == [tagged]
    assert {r.id for r in matching_sessions(store, parse_query("SF"))} == {tagged, other}
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%d")
    assert matching_sessions(store, parse_query(f"since:{tomorrow}")) == []
    assert len(matching_sessions(store, parse_query(f"workspace:{h.workspace} limit:1"))) == 1

    h.script.script("openai", [Reply.fixture("openai_chat", "stream__tool_call_single.sse"),
                               Reply.fixture("openai_chat", "stream__text_with_usage_chunk.sse"),
                               Reply.fixture("openai_chat", "stream__text_with_usage_chunk.sse")])
    batch = await replay_sessions(h.runtime, "tag:billing", "openai:gpt-4.1")
    assert [r.source_session_id for r in batch.reports] == [tagged]
    summary = batch.summary()
    assert summary["sessions"] == 1 and summary["turns"] == 2 and summary["diverged_turns"] == 2
    assert summary["tool_call_divergence_rate"] == 0.5 and summary["text_divergence_rate"] == 1.0
    assert summary["original_cost_usd"] is not None and summary["replay_cost_usd"] is not None
    assert summary["cost_ratio"] is not None and summary["cost_ratio"] > 0
    assert {r.id for r in matching_sessions(store, parse_query("SF"))} == {tagged, other}, "replays not selected"


async def test_no_matching_session_is_a_named_error(harness: ReplayHarness) -> None:
    with pytest.raises(ReplayError, match="no stored session matches"):
        await replay_sessions(harness.runtime, "tag:nothing", "openai:gpt-4.1")


async def test_replays_are_known_by_their_link_not_their_title_and_selected_only_when_asked(
    harness: ReplayHarness,
) -> None:
    h = harness
    source = await h.record_original()
    h.script.script("openai", [Reply.fixture("openai_chat", "stream__tool_call_single.sse"),
                               Reply.fixture("openai_chat", "stream__text_with_usage_chunk.sse"),
                               Reply.fixture("openai_chat", "stream__text_with_usage_chunk.sse")])
    replay = (await replay_sessions(h.runtime, f"workspace:{h.workspace}", "openai:gpt-4.1")).reports[0]
    store = h.runtime.store
    store.update_session(replay.replay_session_id, title="renamed by hand")
    lookalike = await h.record_original()
    store.update_session(lookalike, title=f"replay of {source} on my laptop")

    def chosen(query: str) -> set[str]:
        return {r.id for r in matching_sessions(store, parse_query(query))}

    assert chosen("SF") == {source, lookalike}, "the renamed replay is still a replay; the look-alike is not"
    assert chosen("SF replays:include") == {source, lookalike, replay.replay_session_id}
    assert chosen("SF replays:only") == {replay.replay_session_id}
