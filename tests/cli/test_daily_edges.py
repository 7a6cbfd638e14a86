"""Daily use through the real `metis` command: a local server found by its model list, servers
without their extra, exit codes as docs/cli.md gives them, ids as prefixes or `latest`, whole ids
in lists, help in user words.

Recordings: OpenAI stream__text_with_usage_chunk.sse, Anthropic stream__text_basic.sse.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
from pathlib import Path

import pytest
from rich.console import Console
from structured_wire import openai_chat_stream

from metis_core.cli.exit_codes import ExitCode, exit_code_for
from metis_core.cli.rows import Rows
from metis_core.errors import FeedbackTargetError, GatewayKeyError, ServeAccessKeyMissingError

from .cli_harness import ANSI, COMMAND, PtySession, cli_env, metis
from .replay_server import ANTHROPIC, OPENAI, ReplayServer, Reply

MODELS = "/v1/models"


def model_list(*ids: str) -> Reply:
    body = json.dumps({"object": "list", "data": [{"id": i, "object": "model", "owned_by": "me"} for i in ids]})
    return Reply(200, body.encode(), "application/json")


def local_server_env(home: Path, server: ReplayServer) -> dict[str, str]:
    return cli_env(home, None, METIS_OPENAI_COMPATIBLE_BASE_URL=f"{server.base_url}/v1")


# --- the README's local-server recipe -------------------------------------------------------


def test_run_with_only_a_local_server_uses_the_first_model_it_lists(
    home: Path, server: ReplayServer, workspace: Path,
) -> None:
    server.script(MODELS, model_list("my-llama", "other-model"))
    server.script(OPENAI, Reply.recording("openai_chat", "stream__text_with_usage_chunk.sse"))
    done = metis(["run", "--json", "hi"], local_server_env(home, server), workspace)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["model"] == "openai_compatible:my-llama"
    assert server.bodies(OPENAI)[0]["model"] == "my-llama"
    assert "other-model" in done.stderr and "--model" in done.stderr


def test_chat_with_only_a_local_server_uses_the_first_model_it_lists(
    home: Path, server: ReplayServer, workspace: Path,
) -> None:
    server.script(MODELS, model_list("my-llama"))
    server.script(OPENAI, Reply.recording("openai_chat", "stream__text_with_usage_chunk.sse"))
    done = metis(["chat"], local_server_env(home, server), workspace, stdin="hi\n")
    assert done.returncode == 0, done.stderr
    assert "none configured" not in done.stdout + done.stderr
    assert server.bodies(OPENAI)[0]["model"] == "my-llama"


def test_a_schema_run_with_only_a_local_server_uses_the_first_model_it_lists(
    home: Path, server: ReplayServer, workspace: Path,
) -> None:
    schema = workspace / "person.schema.json"
    schema.write_text('{"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}')
    server.script(MODELS, model_list("my-llama"))
    server.script(OPENAI, Reply(200, openai_chat_stream('{"name": "Ada"}')))
    done = metis(["run", "--json", "--schema", str(schema), "name someone"], local_server_env(home, server), workspace)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["value"] == {"name": "Ada"}
    assert server.bodies(OPENAI)[0]["model"] == "my-llama"


def test_a_local_server_listing_no_models_is_a_usage_error_naming_model(
    home: Path, server: ReplayServer, workspace: Path,
) -> None:
    server.script(MODELS, model_list())
    done = metis(["run", "hi"], local_server_env(home, server), workspace)
    assert done.returncode == 2
    assert "--model openai_compatible:<model>" in done.stderr and "/v1/models" in done.stderr


def test_the_readme_recipe_names_the_model_option() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    line = next(line for line in readme.splitlines() if "METIS_OPENAI_COMPATIBLE_BASE_URL" in line)
    assert "--model" in line


# --- servers -----------------------------------------------------------------------------------

BLOCKER = """
import sys
class _Missing:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("starlette", "uvicorn", "websockets"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Missing())
"""


@pytest.mark.parametrize(("args", "extra"), [(["serve"], "serve"), (["gateway", "serve"], "gateway")])
def test_a_server_without_its_extra_names_the_extra_to_install(
    home: Path, workspace: Path, tmp_path: Path, args: list[str], extra: str,
) -> None:
    (tmp_path / "blocker").mkdir()
    (tmp_path / "blocker" / "sitecustomize.py").write_text(BLOCKER)
    done = metis([*args, "--port", "9"], cli_env(home, None, PYTHONPATH=str(tmp_path / "blocker")), workspace)
    assert done.returncode == 3
    assert f"pip install 'metis-core[{extra}]'" in done.stderr
    assert "unexpected" not in done.stderr and "Traceback" not in done.stderr
    assert "metis gateway on" not in done.stderr  # no "running" banner for a server that never ran


@pytest.mark.parametrize("args", [["serve"], ["gateway", "serve"], ["gateway", "serve", "--workers", "2"]])
def test_a_server_that_cannot_listen_prints_no_running_banner(home: Path, workspace: Path, args: list[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = metis([*args, "--port", str(port)], cli_env(home, None), workspace, timeout=60)
    said = done.stdout + done.stderr
    assert done.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in said
    assert "metis gateway on" not in said and "metis serve:" not in said


# --- exit codes and ids ------------------------------------------------------------------------


@pytest.mark.parametrize(("error", "code"), [
    (GatewayKeyError("no key gk_x"), ExitCode.USAGE),
    (FeedbackTargetError("no turn 9"), ExitCode.USAGE),
    (ServeAccessKeyMissingError("issue an admin key"), ExitCode.CONFIGURATION),
])  # fmt: skip
def test_named_command_errors_have_their_documented_exit_codes(error: BaseException, code: ExitCode) -> None:
    assert exit_code_for(error) == code


def test_documented_exit_codes_for_feedback_gateway_keys_and_cost(home: Path, workspace: Path) -> None:
    env = cli_env(home, None)
    assert metis(["feedback", "latest", "up"], env, workspace).returncode == 6  # no session stored
    assert metis(["gateway", "keys", "issue", "--user", "alice"], env, workspace).returncode == 2
    by_week = metis(["cost", "--by", "week"], env, workspace)
    assert by_week.returncode == 2 and "day" in by_week.stderr
    assert metis(["cost", "--since", "1d"], env, workspace).returncode == 0


def test_feedback_takes_latest_and_a_prefix(home: Path, server: ReplayServer, workspace: Path) -> None:
    server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"))
    env = cli_env(home, server.base_url)
    session_id = json.loads(metis(["run", "--json", "hi"], env, workspace).stdout)["session_id"]
    latest = metis(["feedback", "latest", "up"], env, workspace)
    assert latest.returncode == 0 and session_id in latest.stdout
    prefix = metis(["feedback", session_id[5:12].lower(), "down"], env, workspace)
    assert prefix.returncode == 0 and session_id in prefix.stdout


def test_gateway_key_commands_take_latest_and_prefixes_and_list_ambiguous_ones(home: Path, workspace: Path) -> None:
    env = cli_env(home, None)
    first = json.loads(metis(["gateway", "keys", "issue", "--json"], env, workspace).stdout)["id"]
    second = json.loads(metis(["gateway", "keys", "issue", "--json"], env, workspace).stdout)["id"]
    ambiguous = metis(["gateway", "keys", "revoke", "gk_"], env, workspace)
    assert ambiguous.returncode == 2 and first in ambiguous.stderr and second in ambiguous.stderr
    assert metis(["gateway", "keys", "revoke", "nothing-like-it"], env, workspace).returncode == 2
    revoked = metis(["gateway", "keys", "revoke", "latest"], env, workspace)
    assert revoked.returncode == 0 and second in revoked.stdout
    rotated = metis(["gateway", "keys", "rotate", first.removeprefix("gk_").lower(), "--json"], env, workspace)
    assert rotated.returncode == 0, rotated.stderr


# --- lists and help ----------------------------------------------------------------------------


def test_gateway_keys_list_piped_prints_whole_ids_in_tab_separated_rows(home: Path, workspace: Path) -> None:
    env = cli_env(home, None, COLUMNS="40")
    key_id = json.loads(metis(["gateway", "keys", "issue", "--json"], env, workspace).stdout)["id"]
    listed = metis(["gateway", "keys", "list"], env, workspace)
    assert listed.returncode == 0
    assert listed.stdout.split("\n")[0].split("\t")[0] == key_id


def test_a_table_keeps_each_id_whole_on_one_line_at_any_width() -> None:
    ids = ["sess_01M8J8QNR902Z3M7TKQ397HGK2", "sess_01M8J8QNR902Z3M7TKQ397HGK3"]
    rows = Rows(("session", "title", "model", "cost"),
                [(i, "a long title that has to fold somewhere", "openai:gpt-4o", "$0.01") for i in ids])
    for width in (40, 60, 120):
        console = Console(width=width, record=True, color_system=None)
        console.print(rows.table(), soft_wrap=False)
        shown = console.export_text()
        assert all(i in shown for i in ids), shown


@pytest.mark.parametrize("args", [["run"], ["chat"], ["gateway", "keys", "issue"], ["cost"], ["sessions", "list"],
                                  ["backup"], ["replay"], ["trace", "export"], ["eval", "run"]])
def test_help_shows_user_words_not_python_types(home: Path, workspace: Path, args: list[str]) -> None:
    done = metis([*args, "--help"], cli_env(home, None), workspace)
    assert done.returncode == 0
    assert not re.search(r"<(bool|str|int|float|list\[[a-z]+\]|Path)>", done.stdout), done.stdout


def test_run_tools_list_lists_the_tools(home: Path, workspace: Path) -> None:
    done = metis(["run", "--tools", "list"], cli_env(home, None), workspace)
    assert done.returncode == 0, done.stderr
    names = [line.split("\t")[0] for line in done.stdout.splitlines()]
    assert "read_file" in names and "write_file" in names


def test_gateway_serve_banner_appears_once_it_answers(home: Path, workspace: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([*COMMAND, "gateway", "serve", "--port", str(port)], env=cli_env(home, None),
                               cwd=workspace, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        banner = process.stderr.readline()
        assert f"metis gateway on http://127.0.0.1:{port}" in banner
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # listening by the time the banner was printed
    finally:
        process.terminate()
        process.wait(30)


def test_the_chat_note_on_an_unpriced_model_is_on_its_own_line(
    home: Path, server: ReplayServer, workspace: Path,
) -> None:
    server.script(OPENAI, Reply.recording("openai_chat", "stream__text_with_usage_chunk.sse"))
    env = cli_env(home, None, METIS_OPENAI_COMPATIBLE_BASE_URL=f"{server.base_url}/v1")
    term = PtySession(["chat", "--model", "openai_compatible:my-llama"], env, workspace)
    try:
        term.expect(r"you> ")
        term.type("hi")
        term.expect(r"cost unknown")
        term.expect(r"you> ")
        term.press(b"\x04")
        term.wait()
        shown = ANSI.sub("", term.text)
    finally:
        term.close()
    note = next(line for line in shown.splitlines() if "no price for openai_compatible:my-llama" in line)
    assert note.lstrip().startswith("no price for"), shown


def test_session_lists_show_the_model_that_answered(home: Path, server: ReplayServer, workspace: Path) -> None:
    server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"))
    env = cli_env(home, server.base_url)
    answered = json.loads(metis(["run", "--json", "hi"], env, workspace).stdout)["model"]
    listed = metis(["sessions", "list"], env, workspace)
    assert listed.stdout.split("\t")[2] == answered
    [row] = json.loads(metis(["sessions", "list", "--json"], env, workspace).stdout)
    assert row["answered_by"] == answered


def test_eval_run_says_why_evaluations_failed(home: Path, server: ReplayServer, workspace: Path) -> None:
    server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"))
    env = cli_env(home, server.base_url)
    assert metis(["run", "hi"], env, workspace).returncode == 0
    (home / "rubrics").mkdir()
    (home / "rubrics" / "turn-default.yaml").write_text("id: [\n")
    done = metis(["eval", "run", "--again"], env, workspace)
    assert done.returncode == 0 and " failed" in done.stdout
    assert "rubric_invalid" in done.stderr and "turn-default.yaml is not valid YAML" in done.stderr


def test_backup_error_names_the_destination(home: Path, server: ReplayServer, workspace: Path) -> None:
    server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"))
    env = cli_env(home, server.base_url)
    assert metis(["run", "hi"], env, workspace).returncode == 0
    # a directory that exists but takes no new file (even for root): the snapshot's temporary file fails
    done = metis(["backup", "/proc/metis-backup.db"], env, workspace)
    assert done.returncode == 6 and "cannot write the backup to /proc/metis-backup.db" in done.stderr


def test_attach_refused_for_a_model_names_the_setting_that_allows_it(
    home: Path, workspace: Path, tmp_path: Path,
) -> None:
    image = workspace / "dot.png"
    image.write_bytes(bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                                    "1f15c4890000000d49444154789c63f8cfc0f01f0005000201e2212bc70000000049454e44ae426082"))
    env = cli_env(home, None, METIS_OLLAMA_BASE_URL="http://127.0.0.1:9")
    done = metis(["run", "--attach", str(image), "-m", "ollama:llama3.2", "describe"], env, workspace)
    assert done.returncode == 5
    assert "supports_images: true" in done.stderr and "config.yaml" in done.stderr


def test_schema_errors_use_the_flag_names(home: Path, workspace: Path) -> None:
    (workspace / "bad.json").write_text('{"type": "nonsense"}')
    done = metis(["run", "--schema", "bad.json", "hi"], cli_env(home, None), workspace)
    assert done.returncode == 2 and "--schema" in done.stderr and "output schema" not in done.stderr
