"""The learning loop in `metis chat` on a pseudo-terminal: the route> question when a rule
outranks the pattern store (/route override, /route ignore), and /good.

The pattern history is written straight into the home's store (PatternStore.record, the same
call the session-end recorder makes); how history is learned from sessions is tests/learning/.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from postgres_server import shared_server
from store_backends import BACKENDS, _postgres_session, scalar_on  # noqa: F401

from metis_core.learning.database import LearningDatabase
from metis_core.learning.patterns.fingerprint import fingerprint
from metis_core.learning.patterns.store import PatternStore

from .cli_harness import PtySession, cli_env, first, metis, only_session_id, stored_events
from .replay_server import ANTHROPIC, ReplayServer, Reply

PROMPT = r"you> "
STRONG, CHEAP = "anthropic:claude-sonnet-4-6", "anthropic:claude-haiku-4-5"


def seed_history(home: Path, workspace: Path, text: str) -> None:
    home.mkdir(exist_ok=True)
    db = LearningDatabase(home / "metis.db")
    store = PatternStore(db)
    fp = fingerprint(text, estimated_tokens=10, has_images=False, workspace=str(workspace.resolve()), tools_used=())
    for n in range(6):
        for model, cost in ((CHEAP, "0.0001"), (STRONG, "0.0003")):
            store.record(fp, session_id="sess_seed", turn_id=f"seed-{model}-{n}", model=model, score=0.95,
                         cost_usd=Decimal(cost), latency_ms=100, pricing_version="seed")
    db.close()
    (home / "routing.yaml").write_text(f"default: {STRONG}\nrules:\n  - name: summaries\n    when: {{keyword: "
                                       f"summarize}}\n    model: {STRONG}\n")


def test_route_override_and_ignore_at_the_route_question(home: Path, server: ReplayServer, workspace: Path) -> None:
    seed_history(home, workspace, "Summarize the notes")
    server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"),
                  Reply.recording("anthropic", "stream__text_basic.sse"))
    term = PtySession(["chat"], cli_env(home, server.base_url), workspace)
    try:
        term.expect(PROMPT)
        term.type("Summarize the notes")
        asked = term.expect(r"route> ")
        assert f"pattern store suggests {CHEAP}" in asked and f"rule 'summaries' chose {STRONG}" in asked
        term.type("/route override")
        shown = term.expect(r"Hello there!")
        assert f"overridden: {CHEAP} answers this turn" in shown
        term.expect(PROMPT)
        term.type("Summarize the memo")
        term.expect(r"route> ")
        term.type("/route ignore")
        assert "suggestion dismissed" in term.expect(r"Hello there!")
        term.expect(PROMPT)
        term.type("/bad --session not what I wanted")
        assert "for this session" in term.expect(PROMPT)
        term.type("/exit")
        assert term.wait() == 0
    finally:
        term.close()

    assert [b["model"] for b in server.bodies(ANTHROPIC)] == ["claude-haiku-4-5", "claude-sonnet-4-6"]
    sid = only_session_id(home)
    events = stored_events(home, sid, learning=True)
    decided = [e for e in events if e.type == "route.decided"]
    calls = [e for e in events if e.type == "llm.call_started"]
    overridden = first(events, "route.overridden")
    dismissed = first(events, "pattern.override_dismissed")
    assert len(decided) == 2 and all(d.payload["chosen_model"] == STRONG for d in decided)
    assert all(d.payload["chain"][3]["verdict"] == "deferred" for d in decided)
    assert overridden.parent_event_id == decided[0].id and calls[0].parent_event_id == overridden.id
    assert overridden.payload["new_chosen_model"] == CHEAP and overridden.payload["rule_name"] == "summaries"
    assert dismissed.parent_event_id == decided[1].id and dismissed.payload["dismissed_pattern_model"] == CHEAP
    assert calls[1].payload["model"] == STRONG and calls[1].parent_event_id == decided[1].parent_event_id
    rated = first(events, "feedback.explicit")
    assert rated.payload["scope"] == "session" and rated.payload["rating"] == "thumbs_down"
    assert rated.payload["comment"] == "not what I wanted"
    assert [e.type for e in events].count("pattern.recorded") == 2  # both turns recorded at session end


def test_without_a_terminal_the_suggestion_is_shown_after_the_answer_and_route_ignore_dismisses_it(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    seed_history(home, workspace, "Summarize the notes")
    server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"))
    result = metis(["chat"], cli_env(home, server.base_url), workspace,
                   stdin="Summarize the notes\n/route override\n/route ignore\n/route\n/exit\n")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "route> " not in out
    assert f"pattern store suggests {CHEAP}" in out and "/route ignore dismisses it" in out
    assert "that turn has finished" in out + result.stderr
    assert "suggestion dismissed" in out and "no pattern suggestion is waiting" in out
    assert [b["model"] for b in server.bodies(ANTHROPIC)] == ["claude-sonnet-4-6"]
    events = stored_events(home, only_session_id(home), learning=True)
    decided = first(events, "route.decided")
    dismissed = first(events, "pattern.override_dismissed")
    assert dismissed.parent_event_id == decided.id and dismissed.turn_id == decided.turn_id
    assert "route.overridden" not in [e.type for e in events]


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_in_the_chat_is_the_score_its_turn_is_recorded_with(
    home: Path, server: ReplayServer, workspace: Path, backend: str, _postgres_session: None  # noqa: F811
) -> None:
    database: Path | str = home / "metis.db" if backend == "sqlite" else shared_server().fresh_database_url()
    extra = {} if backend == "sqlite" else {"METIS_DATABASE_URL": str(database)}
    server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"))
    result = metis(["chat"], cli_env(home, server.base_url, **extra), workspace,
                   stdin="Prove that 19 is prime\n/bad\n/exit\n")
    assert result.returncode == 0, result.stderr
    assert scalar_on(database, "SELECT score FROM pattern_outcomes") == 0.05
