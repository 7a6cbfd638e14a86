"""Listing commands on a populated store load only what they list, and say the same as before.

`metis cost` sums each answer's spend from the stored metadata (messages/call_spend.py's one rule)
without the message models; piped listings write plain rows without rich; `patterns list` builds no
settings schema. Each run is a fresh interpreter on one shared store (times are in bench/listing.py).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from decimal import Decimal
from pathlib import Path

import pytest
from cli.import_probe import probe

from metis_core.cli.spend import Answer, model_calls, spend_by, stored_answers, total
from metis_core.messages import Message, MessageMetadata, MessageStatus, TextBlock, Usage
from metis_core.messages.call_spend import AnswerSpend, CallSpend
from metis_core.messages.metadata import RoutingDecisionRecord
from metis_core.store.sessions import SessionStore

MODEL = "anthropic:claude-sonnet-4-6"
MESSAGE_MODELS = ("metis_core.messages.message", "metis_core.messages.metadata", "metis_core.messages.blocks")


def _answer(session_id: str, usage: Usage | None, **extra: object) -> Message:
    status = MessageStatus.COMPLETE if usage is not None else MessageStatus.PARTIAL
    routing = RoutingDecisionRecord(mode="manual", chosen_model=MODEL, reason="test")
    metadata = MessageMetadata(model=MODEL, provider="anthropic", usage=usage, status=status, routing=routing, **extra)
    return Message(role="assistant", session_id=session_id, content=[TextBlock(text="an answer")], metadata=metadata)


def _usage(cost: str | None, *, cached: int = 0) -> Usage:
    return Usage(input_tokens=100, output_tokens=10, cached_input_tokens=cached,
                 cost_usd=None if cost is None else Decimal(cost))


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with every kind of answer spend is read from: priced (with cached tokens, a gateway key, a
    user and team), a structured run of three calls (one unpriced), an unpriced answer, a partial answer
    (no usage), an imported copy and a gateway client's own history (both not ours to charge)."""
    root = tmp_path_factory.mktemp("listing") / "home"
    root.mkdir()
    structured = CallSpend()
    for usage in (_usage("0.001"), _usage(None), _usage("0.0025", cached=40)):
        structured.add(usage)
    with SessionStore(root / "metis.db") as store:
        ids = [store.create_session(root, title=f"session {n}").id for n in range(3)]
        run = _answer(ids[1], _usage("0"))
        structured.stamp(run)  # the one message of the run carries all three calls
        store.append_messages([
            _answer(ids[0], _usage("0.0012", cached=30), gateway_key_id="gk_one", user_id="usr_a", team_id="team_x"),
            run,
            _answer(ids[2], _usage(None)),
            _answer(ids[2], None),
            _answer(ids[2], _usage("0.5"), copied_from="msg_original"),
            _answer(ids[0], _usage("0.7"), from_client=True),
        ])
    return root


def _run(home: Path, args: list[str]) -> dict[str, object]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home.parent), "METIS_HOME": str(home), "NO_COLOR": "1"}
    return probe(args, env, home.parent)


def test_cost_sums_the_stored_rows_without_the_message_models_or_rich(home: Path) -> None:
    report = _run(home, ["cost", "--json"])
    loaded = report["loaded"]
    assert isinstance(loaded, list) and isinstance(report["out"], str)
    unused = ("pydantic", "rich", "metis_core.config", *MESSAGE_MODELS)
    assert [m for m in loaded if m in unused or m.startswith(tuple(f"{u}." for u in unused))] == []
    document = json.loads(report["out"])
    # priced 1 call + structured 3 calls (1 unpriced) + 1 unpriced: the partial answer, the copy and the
    # client's history are not charged; input tokens count cached ones (100+30, 3x100+40, 100).
    assert document["total"] == {"key": "total", "calls": 5, "input_tokens": 570, "output_tokens": 50,
                                 "cost_usd": "0.0047", "unpriced_calls": 2}
    with SessionStore(home / "metis.db") as store:  # the same figures from loaded messages, grouped alike
        loaded_calls = [Answer.of(m) for m in model_calls(store.answers())]
    for name, key in (("session", lambda a: a.session_id), ("model", lambda a: a.model or "?")):
        assert document[name] == [row.to_json() for row in spend_by(loaded_calls, key)]
    assert document["total"] == total(spend_by(loaded_calls, lambda a: a.session_id)).to_json()


def test_cost_groups_by_the_gateway_key_user_and_team_from_the_stored_metadata(home: Path) -> None:
    document = json.loads(str(_run(home, ["cost", "--by", "key", "--json"])["out"]))
    assert [(row["key"], row["calls"]) for row in document["key"]] == [("-", 4), ("gk_one", 1)]
    users = json.loads(str(_run(home, ["cost", "--by", "user", "--json"])["out"]))["user"]
    assert [(row["key"], row["cost_usd"]) for row in users] == [("-", "0.0035"), ("usr_a", "0.0012")]


def test_a_row_stored_at_an_older_message_schema_reads_as_its_message_does(home: Path, tmp_path: Path) -> None:
    copy = tmp_path / "home"
    shutil.copytree(home, copy)
    with sqlite3.connect(copy / "metis.db") as db:
        db.execute("UPDATE messages SET schema_version = 1 WHERE role = 'assistant'")
    with SessionStore(copy / "metis.db") as store:
        read = store.answer_metadata()
        loaded = store.answers()
    assert [(sid, when, metadata) for sid, when, metadata in read] == [
        (m.session_id, m.created_at, m.metadata.model_dump(mode="json")) for m in loaded]
    with SessionStore(copy / "metis.db") as store:
        assert [a.spend for a in stored_answers(store)] == [Answer.of(m).spend for m in model_calls(loaded)]


def test_a_structured_runs_spend_reads_the_same_from_its_row_and_its_message() -> None:
    spend = CallSpend()
    for usage in (_usage("0.001"), _usage(None), _usage("0.0025", cached=40)):
        spend.add(usage)
    message = _answer("sess_x", _usage("0"))
    spend.stamp(message)
    stored = json.loads(message.metadata.model_dump_json())
    assert AnswerSpend.of_metadata(stored) == AnswerSpend(calls=3, unpriced_calls=1, input_tokens=340,
                                                          output_tokens=30, cost_usd=Decimal("0.0035"))
    assert AnswerSpend.of_metadata(stored) == Answer.of(message).spend


QUIET = ("rich", "yaml")
"""No config.yaml and no template: nothing to parse, and piped rows need no rich."""
PIPED = [(["cost"], "metis_core.cli.cost", (*QUIET, "pydantic")),
         (["sessions", "list"], "metis_core.cli.sessions", (*QUIET, "pydantic")),
         (["patterns", "list"], "metis_core.learning.settings", QUIET),
         (["templates", "list"], "metis_core.cli.template_files", (*QUIET, "pydantic"))]
"""Listings, a module each loads when it runs (so the run got that far), and what it does not load."""


@pytest.mark.parametrize(("args", "ran", "unused"), PIPED, ids=[" ".join(args) for args, _, _ in PIPED])
def test_a_piped_listing_loads_no_rich_or_yaml_and_patterns_build_no_settings_schema(
        home: Path, args: list[str], ran: str, unused: tuple[str, ...]) -> None:
    report = _run(home, args)
    loaded = report["loaded"]
    assert isinstance(loaded, list) and ran in loaded
    assert [m for m in loaded if m.split(".")[0] in unused] == []
    assert report["settings_built"] is False  # no learning section in config.yaml: defaults, nothing validated


@pytest.mark.parametrize("env", [{}, {"FORCE_COLOR": "1"}, {"FORCE_COLOR": ""}, {"TTY_COMPATIBLE": "1"},
                                 {"TTY_COMPATIBLE": "0", "FORCE_COLOR": "1"}])
def test_whether_stdout_is_a_terminal_is_answered_as_rich_answers_it(env: dict[str, str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from metis_core.cli.output import ScrubbingStream, Terminal

    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    piped = Terminal(ScrubbingStream(io.StringIO(), []), ScrubbingStream(io.StringIO(), []))
    quick = piped.out_is_terminal
    assert quick == piped.out.is_terminal  # the console, made now, agrees
