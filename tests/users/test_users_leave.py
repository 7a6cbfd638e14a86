"""People who can leave: `metis users export` writes everything the record holds about one user,
`metis users forget` erases it (down to the bytes of the SQLite file) and keeps the audit facts.
Driven end to end: a real gateway, the official Anthropic SDK as the user's client, the CLI."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic
import pytest
from cli.cli_harness import cli_env
from cli.replay_server import ANTHROPIC, ReplayServer, Reply
from gateway.gateway_harness import GatewayHarness
from typer.testing import CliRunner

from metis_core.cli.app import app

SECRET = "PURPLE-ELEPHANT-42"
OTHER = "ORANGE-GIRAFFE-7"
KEY_REREAD_SECONDS = 1.1


class Users:
    def __init__(self, home: Path) -> None:
        self.env = cli_env(home, None)
        self.runner = CliRunner()

    def __call__(self, *args: str) -> tuple[int, str, str]:
        done = self.runner.invoke(app, ["users", *args], env=self.env, catch_exceptions=False)
        return done.exit_code, done.stdout, done.stderr


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[GatewayHarness]:
    upstream = ReplayServer().start()
    upstream.script(ANTHROPIC, *[Reply.recording("anthropic", "response__text.json") for _ in range(4)])
    harness = GatewayHarness(tmp_path / "home", upstream).start()
    yield harness
    harness.stop()
    upstream.stop()


def _ask(gateway: GatewayHarness, token: str, text: str) -> None:
    sdk = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)
    sdk.messages.create(model="anthropic:claude-haiku-4-5", max_tokens=50, messages=[{"role": "user", "content": text}])


def _database_bytes(home: Path) -> bytes:
    return b"".join(path.read_bytes() for path in home.glob("metis.db*"))


def test_a_user_exports_everything_then_is_forgotten_down_to_the_bytes(gateway: GatewayHarness, tmp_path: Path) -> None:
    users = Users(gateway.runtime.home)
    code, out, _ = users("create", "--name", "Ada Lovelace", "--email", "ada@example.org", "--json")
    assert code == 0
    ada = json.loads(out)["id"]
    _, ada_token = gateway.issue(name="ada laptop", user_id=ada)
    _, bob_token = gateway.issue(name="bob", user_id="usr_01J0000000000000000000000B")
    _ask(gateway, ada_token, f"my code word is {SECRET}")
    _ask(gateway, bob_token, f"mine is {OTHER}")
    gateway.drain()

    code, out, _ = users("export", ada)
    assert code == 0
    exported = json.loads(out)
    assert exported["user"]["name"] == "Ada Lovelace" and exported["user"]["email"] == "ada@example.org"
    assert [k["name"] for k in exported["keys"]] == ["ada laptop"] and "secret_hash" not in exported["keys"][0]
    (session,) = exported["sessions"]
    assert SECRET in json.dumps(session["messages"]) and OTHER not in out
    assert {e["type"] for e in session["events"]} >= {"turn.started", "llm.call_completed"}
    assert [e["type"] for e in exported["audit_events"]] == ["gateway.key_issued"]

    assert users("forget", ada)[0] == 2  # no terminal to ask: --yes is needed
    code, out, _ = users("forget", ada, "--yes")
    assert code == 0 and "1 session(s)" in out and "1 key(s) revoked" in out
    on_disk = _database_bytes(gateway.runtime.home)
    for gone in (SECRET, "Ada Lovelace", "ada@example.org"):
        assert gone.encode() not in on_disk, gone  # not even in freed pages or the write-ahead log
    assert OTHER.encode() in on_disk  # another user's record is untouched

    listed = json.loads(users("list", "--json")[1])
    assert [(u["id"], u["status"], u["name"], u["email"]) for u in listed] == [(ada, "forgotten", None, None)]
    trace = gateway.runtime.trace
    forgotten = trace.events(types=["analytics.user_forgotten"])
    assert [e.payload["user_id"] for e in forgotten] == [ada] and forgotten[0].payload["sessions_deleted"] == 1
    assert len(trace.events(types=["analytics.user_exported"])) == 1
    assert trace.events(types=["gateway.key_issued"])  # the audit facts stay
    time.sleep(KEY_REREAD_SECONDS)  # a running gateway rereads a key at most once a second
    with pytest.raises(anthropic.AuthenticationError):
        _ask(gateway, ada_token, "am I still here?")

    again = json.loads(users("export", ada)[1])  # forgetting twice or exporting after is safe and empty
    assert again["sessions"] == [] and again["user"]["status"] == "forgotten"


def test_bad_user_ids_get_clear_errors(tmp_path: Path) -> None:
    users = Users(tmp_path / "home")
    (tmp_path / "home").mkdir()
    code, _, err = users("export", "alice@example.org")
    assert code == 2 and "pseudonymous id" in err
    code, _, err = users("forget", "usr_01J0000000000000000000000Z", "--yes")
    assert code == 6 and "no user usr_01J0000000000000000000000Z" in err
