"""The management commands through the installed `metis`: models default, aliases, keys, templates,
sessions delete, --version and -h. Each change is checked in config.yaml (or METIS_HOME) and in what a
following `metis run` sends to the replay server (recorded Anthropic stream__text_basic.sse).
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import yaml

from .cli_harness import cli_env, json_lines, metis, stored_events
from .replay_server import ANTHROPIC, OPENAI, ReplayServer, Reply

TEXT = Reply.recording("anthropic", "stream__text_basic.sse")


def config(home: Path) -> dict[str, object]:
    return dict(yaml.safe_load((home / "config.yaml").read_text()))


def test_version_and_short_help(home: Path, workspace: Path) -> None:
    version = metis(["--version"], cli_env(home, None), workspace)
    assert version.returncode == 0 and version.stdout.startswith("metis 0.")
    short = metis(["-h"], cli_env(home, None), workspace)
    assert short.returncode == 0 and "Commands:" in short.stdout and "templates" in short.stdout
    assert metis(["run", "-h"], cli_env(home, None), workspace).stdout.count("--no-log") == 1


def test_models_default_sets_what_new_sessions_use(home: Path, server: ReplayServer, workspace: Path) -> None:
    env = cli_env(home, server.base_url)
    assert metis(["models", "default"], env, workspace).stdout == "anthropic:claude-sonnet-4-6\t(first provider " \
                                                                   "with a key)\n"
    done = metis(["models", "default", "gpt-4o-mini"], env, workspace)
    assert done.returncode == 0 and config(home) == {"defaults": {"model": "gpt-4o-mini"}}
    assert metis(["models", "default"], env, workspace).stdout == "gpt-4o-mini\t(config.yaml)\n"
    refused = metis(["models", "default", "gpt-9"], env, workspace)
    assert refused.returncode == 2 and config(home) == {"defaults": {"model": "gpt-4o-mini"}}
    server.script(OPENAI, Reply.recording("openai_chat", "stream__text_with_usage_chunk.sse"))
    ran = metis(["run", "--json", "hi"], env, workspace)
    assert json.loads(ran.stdout)["model"] == "openai:gpt-4o-mini"


def test_aliases_set_list_and_remove(home: Path, server: ReplayServer, workspace: Path) -> None:
    env = cli_env(home, server.base_url)
    home.mkdir()
    (home / "config.yaml").write_text("# my settings\ndefaults:\n  model: sonnet\n")
    done = metis(["aliases", "set", "quick", "claude-haiku-4-5"], env, workspace)
    assert done.returncode == 0 and "without its comments" in done.stderr
    assert (home / "config.yaml.bak").read_text().startswith("# my settings")
    assert config(home) == {"defaults": {"model": "sonnet"}, "aliases": {"quick": "claude-haiku-4-5"}}
    rows = [line.split("\t") for line in metis(["aliases", "list"], env, workspace).stdout.splitlines()]
    assert ["quick", "anthropic:claude-haiku-4-5", "config"] in rows and ["sonnet", "anthropic:claude-sonnet-4-6",
                                                                         "built-in"] in rows
    server.script(ANTHROPIC, TEXT)
    assert json.loads(metis(["run", "--json", "-m", "quick", "hi"], env, workspace).stdout)["model"] == \
        "anthropic:claude-haiku-4-5"
    assert metis(["aliases", "set", "loop", "loop"], env, workspace).returncode == 2
    assert metis(["aliases", "set", "gpt-4o-mini", "sonnet"], env, workspace).returncode == 2  # names a model
    assert metis(["aliases", "set", "bad", "nope:model"], env, workspace).returncode == 2
    assert metis(["aliases", "remove", "sonnet"], env, workspace).returncode == 2  # built in
    assert metis(["aliases", "remove", "quick"], env, workspace).returncode == 0
    assert config(home) == {"defaults": {"model": "sonnet"}}


def test_keys_set_stores_a_private_file_and_list_never_shows_a_key(home: Path, workspace: Path) -> None:
    env = cli_env(home, None)
    secret = "sk-ant-test-KEYSET-0f9d8c7b6a"
    done = metis(["keys", "set", "anthropic"], env, workspace, stdin=secret + "\n")
    assert done.returncode == 0 and secret not in done.stdout + done.stderr
    assert stat.S_IMODE((home / "config.yaml").stat().st_mode) == 0o600
    assert config(home) == {"providers": {"anthropic": {"api_key": secret}}}
    listed = metis(["keys", "list"], env, workspace)
    assert secret not in listed.stdout and secret[-6:] not in listed.stdout
    assert f"anthropic\tset\t{home / 'config.yaml'}" in listed.stdout.splitlines()
    assert "openai\t-\t" in listed.stdout.splitlines()
    with_env = metis(["keys", "list"], {**env, "OPENAI_API_KEY": "sk-from-env-123456"}, workspace)
    assert "openai\tset\t$OPENAI_API_KEY" in with_env.stdout.splitlines()
    assert metis(["keys", "set", "nope"], env, workspace, stdin="x\n").returncode == 2
    assert metis(["keys", "set", "openai"], env, workspace, stdin="\n").returncode == 2


def test_sessions_delete_removes_the_session_and_records_it_in_the_audit(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    server.script(ANTHROPIC, TEXT)
    env = cli_env(home, server.base_url)
    session_id = json.loads(metis(["run", "--json", "hi"], env, workspace).stdout)["session_id"]
    refused = metis(["sessions", "delete", session_id], env, workspace)
    assert refused.returncode == 2 and "needs --yes" in refused.stderr
    done = metis(["sessions", "delete", "latest", "--yes"], env, workspace)
    assert done.returncode == 0 and f"deleted session {session_id} (2 messages" in done.stdout
    assert metis(["sessions", "list"], env, workspace).stdout == ""
    assert stored_events(home, session_id) == []
    audit = json_lines(metis(["audit", "export", "--type", "session.deleted"], env, workspace).stdout)
    assert [(r["session_id"], r["actor"], r["payload"]["deleted_session_id"], r["payload"]["message_count"])
            for r in audit] == [("system", "user", session_id, 2)]
    assert metis(["sessions", "delete", session_id, "--yes"], env, workspace).returncode == 6


def test_templates_are_edited_versioned_and_applied_by_run(home: Path, server: ReplayServer, workspace: Path,
                                                           tmp_path: Path) -> None:
    editor = tmp_path / "editor.py"
    editor.write_text("import sys, pathlib\n"  # `EDITOR FILE`: FILE becomes the text of the version given
                      "pathlib.Path(sys.argv[2]).write_text(pathlib.Path(sys.argv[1]).read_text())\n")
    first = tmp_path / "v1.yaml"
    first.write_text("system: Answer in French.\nmodel: claude-haiku-4-5\noptions: {temperature: 0.3}\n")
    second = tmp_path / "v2.yaml"
    second.write_text("system: Answer in German.\nmodel: sonnet\n")
    env = cli_env(home, server.base_url)

    def edit_with(content: Path) -> None:
        done = metis(["templates", "edit", "lang"], {**env, "EDITOR": f"{sys.executable} {editor} {content}"},
                     workspace)
        assert done.returncode == 0, done.stderr

    edit_with(first)
    edit_with(second)
    assert (home / "templates" / "lang.yaml").read_text() == second.read_text()
    shown = metis(["templates", "show", "lang", "--version", "1"], env, workspace)
    assert shown.stdout == first.read_text()
    rows = [line.split("\t") for line in metis(["templates", "list"], env, workspace).stdout.splitlines()]
    assert rows == [["lang", "sonnet", "", "2", "Answer in German."]]

    bad = tmp_path / "bad.yaml"
    bad.write_text("sytem: typo\n")
    refused = metis(["templates", "edit", "lang"], {**env, "EDITOR": f"{sys.executable} {editor} {bad}"}, workspace)
    assert refused.returncode == 3 and "unknown key 'sytem'" in refused.stderr
    assert (home / "templates" / "lang.yaml").read_text() == second.read_text()

    server.script(ANTHROPIC, TEXT, TEXT)
    ran = json.loads(metis(["run", "--json", "-t", "lang", "hello"], env, workspace).stdout)
    body = server.bodies(ANTHROPIC)[0]
    assert ran["model"] == "anthropic:claude-sonnet-4-6" and body["system"] == "Answer in German."
    edit_with(first)  # back to French, haiku and a temperature; -m and -s on the command line win
    metis(["run", "-t", "lang", "-m", "sonnet", "-o", "temperature=0.9", "hi"], env, workspace)
    body = server.bodies(ANTHROPIC)[1]
    assert body["model"] == "claude-sonnet-4-6" and body["system"] == "Answer in French." and body[
        "temperature"] == 0.9
    missing = metis(["run", "-t", "nope", "hi"], env, workspace)
    assert missing.returncode == 2 and "no template 'nope' (templates: lang)" in missing.stderr
