"""The rough edges a newcomer hit, each through the real `metis` command.

Failed and cancelled turns as recorded and reported, unpriced models, imported copies and spend,
the `system` trace export, a config.yaml that is not UTF-8, a read-only METIS_HOME, backup and
restore safety, and refusals of bad options. Recordings: Anthropic stream__text_basic.sse and
error__400_invalid_request_error_bad_shape.json, OpenAI stream__text_with_usage_chunk.sse.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from metis_core.cli.app import app
from metis_core.errors import StorageFullError
from metis_core.store.sessions import SessionStore

from .cli_harness import (
    PtySession,
    cli_env,
    first,
    metis,
    only_session_id,
    stored_events,
)
from .replay_server import ANTHROPIC, OPENAI, ReplayServer, Reply


def seed_one_turn(home: Path, server: ReplayServer, workspace: Path) -> str:
    server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"))
    done = metis(["run", "--json", "Say hello"], cli_env(home, server.base_url), workspace)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["session_id"])


def test_a_failed_turn_is_recorded_with_stop_reason_error(home: Path, server: ReplayServer, workspace: Path) -> None:
    server.script(ANTHROPIC, Reply.recording("anthropic", "error__400_invalid_request_error_bad_shape.json", 400))
    done = metis(["run", "--json", "hi"], cli_env(home, server.base_url), workspace)
    assert done.returncode == 4
    assert json.loads(done.stdout)["stop_reason"] == "error"
    completed = first(stored_events(home, only_session_id(home)), "turn.completed")
    assert completed.payload["stop_reason"] == "error" and completed.payload["signals_extra"]["error"]


def test_a_cancelled_run_reports_the_call_it_made(home: Path, server: ReplayServer, workspace: Path) -> None:
    stalled = Reply.recording("anthropic", "stream__text_basic.sse", stall_before=b"event: content_block_stop")
    server.script(ANTHROPIC, stalled)
    term = PtySession(["run", "tell me a story"], cli_env(home, server.base_url), workspace)
    try:
        term.expect(r"Hello there!")
        term.press(b"\x03")
        summary = term.expect(r"session sess_\S+")
        assert term.wait() == 130
    finally:
        term.close()
    assert "error: cancelled" in summary and " · 1 call · " in summary and "0 calls" not in summary
    cancelled = first(stored_events(home, only_session_id(home)), "turn.cancelled")
    assert cancelled.payload["partial_llm_calls"] == 1


def test_an_unpriced_model_shows_its_cost_as_unknown_not_zero(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    server.script(OPENAI, Reply.recording("openai_chat", "stream__text_with_usage_chunk.sse"))
    env = cli_env(home, server.base_url, METIS_OPENAI_COMPATIBLE_BASE_URL=f"{server.base_url}/v1")
    done = metis(["run", "--model", "openai_compatible:my-local-model", "hi"], env, workspace)
    assert done.returncode == 0, done.stderr
    summary = done.stderr.strip().splitlines()[-1]
    assert "cost unknown" in summary and "$0" not in summary
    shown = metis(["sessions", "show", only_session_id(home)], env, workspace)
    assert "cost unknown" in shown.stdout and "$0 " not in shown.stdout
    assert metis(["sessions", "list"], env, workspace).stdout.split("\t")[4] == "cost unknown (1 call unpriced)"
    spend = metis(["cost"], env, workspace).stdout
    assert "cost unknown (1 call unpriced)" in spend and "$0" not in spend


def test_an_imported_copy_is_not_counted_as_new_spend(
    home: Path, server: ReplayServer, workspace: Path, tmp_path: Path
) -> None:
    session_id = seed_one_turn(home, server, workspace)
    env = cli_env(home, None)
    exported = tmp_path / "session.json"
    assert metis(["sessions", "export", session_id, "-o", str(exported)], env, workspace).returncode == 0
    assert metis(["sessions", "import", str(exported), "--as-new"], env, workspace).returncode == 0
    spend = json.loads(metis(["cost", "--json"], env, workspace).stdout)
    assert spend["total"]["calls"] == 1 and spend["total"]["cost_usd"] == "0.000123"
    with SessionStore(home / "metis.db") as store:
        assert len(store.list_sessions()) == 2


def test_the_system_trace_exports_in_every_format(home: Path, workspace: Path) -> None:
    env = cli_env(home, None)
    assert metis(["trace", "prune"], env, workspace).returncode == 0  # records trace.swept in `system`
    for export_format in ("otel", "openwop", "eventlog"):
        done = metis(["trace", "export", "system", "--format", export_format], env, workspace)
        assert done.returncode == 0, (export_format, done.stderr)
        assert "of 1 events" in done.stderr
    log = [json.loads(line) for line in metis(["trace", "export", "system", "--format", "eventlog"], env,
                                             workspace).stdout.splitlines()]
    assert log[0]["session_id"] == "system"


def test_a_config_that_is_not_utf8_is_a_named_error(home: Path, workspace: Path) -> None:
    home.mkdir()
    (home / "config.yaml").write_bytes(b"# caf\xe9 au lait\ndefaults:\n  model: sonnet\n")
    for args in (["models"], ["run", "hi"], ["chat"]):
        done = metis(args, cli_env(home, None), workspace)
        assert done.returncode == 3, (args, done.stderr)
        assert "Traceback" not in done.stderr
        assert done.stderr.startswith(f"error: {home / 'config.yaml'} is not UTF-8 text (byte 0xe9 on line 1)")


def test_a_read_only_home_can_still_be_read(
    home: Path, server: ReplayServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = seed_one_turn(home, server, workspace)
    for leftover in ("metis.db-wal", "metis.db-shm"):
        (home / leftover).unlink(missing_ok=True)
    real_access = os.access

    def access(path: object, mode: int, **kwargs: object) -> bool:  # root ignores permission bits
        if Path(str(path)) == home and mode == os.W_OK:
            return False
        return real_access(path, mode, **kwargs)  # type: ignore[arg-type]

    os.chmod(home, 0o555)
    monkeypatch.setattr(os, "access", access)
    monkeypatch.chdir(workspace)
    runner = CliRunner()
    env = cli_env(home, None)
    try:
        listed = runner.invoke(app, ["sessions", "list", "--json"], env=env)
        assert listed.exit_code == 0, listed.output
        assert [s["id"] for s in json.loads(listed.stdout)] == [session_id]
        assert runner.invoke(app, ["sessions", "show", session_id], env=env).exit_code == 0
        assert runner.invoke(app, ["trace", "show", session_id], env=env).exit_code == 0
        # Opened read-only: a write is refused with the named error instead of touching the file.
        with SessionStore(home / "metis.db") as store, pytest.raises(StorageFullError, match="is read-only"):
            store.update_session(session_id, title="changed")
    finally:
        os.chmod(home, 0o755)


def test_backup_to_a_place_that_cannot_be_written_is_a_named_error(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    seed_one_turn(home, server, workspace)
    (workspace / "a-file").write_text("not a directory")
    done = metis(["backup", str(workspace / "a-file" / "metis.db")], cli_env(home, None), workspace)
    assert done.returncode == 6
    assert done.stderr.startswith(f"error: cannot write the backup at {workspace / 'a-file' / 'metis.db'}")
    assert "unexpected" not in done.stderr


def test_restore_force_keeps_a_copy_of_the_database_it_replaces(
    home: Path, server: ReplayServer, workspace: Path, tmp_path: Path
) -> None:
    first_id = seed_one_turn(home, server, workspace)
    env = cli_env(home, None)
    assert metis(["backup", str(tmp_path / "snap.db")], env, workspace).returncode == 0
    later_id = seed_one_turn(home, server, workspace)  # work done after the backup
    refused = metis(["restore", str(tmp_path / "snap.db")], env, workspace)
    assert refused.returncode == 6 and "--force" in refused.stderr and "allow_overwrite" not in refused.stderr
    done = metis(["restore", str(tmp_path / "snap.db"), "--force"], env, workspace)
    assert done.returncode == 0, done.stderr
    kept_line = next(line for line in done.stdout.splitlines() if line.startswith("replaced_database_kept_as: "))
    kept = Path(kept_line.split(": ", 1)[1])
    with SessionStore(kept) as store:
        assert {s.id for s in store.list_sessions()} == {first_id, later_id}
    with SessionStore(home / "metis.db") as store:
        assert [s.id for s in store.list_sessions()] == [first_id]


def test_bad_filters_are_refused(home: Path, workspace: Path) -> None:
    env = cli_env(home, None)
    nope = metis(["models", "--provider", "nope"], env, workspace)
    assert nope.returncode == 2 and "unknown provider 'nope'" in nope.stderr and "anthropic" in nope.stderr
    negative = metis(["sessions", "list", "--limit", "-5"], env, workspace)
    assert negative.returncode == 2 and "--limit" in negative.stderr
