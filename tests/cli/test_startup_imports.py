"""`metis --help` and `metis --version` load no command: only the lazy table (docs/cli.md, "Adding a command").

Checked in a fresh interpreter: after the root help is printed, no module of the agent, the
stores, the adapters or rich has been imported, and every registered command still loads. Each
listing command loads only what it lists (its time is measured in bench/listing.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli.import_probe import probe


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["--version"]])
def test_the_root_help_and_version_import_no_command(args: list[str]) -> None:
    report = probe(args)
    assert report["out"]
    heavy = [m for m in report["loaded"] if not m.startswith(("metis_core.cli.app", "metis_core.cli.lazy_commands"))
             and m not in ("metis_core", "metis_core.cli")]
    assert heavy == []


def test_every_registered_command_loads() -> None:
    from metis_core.cli.lazy_commands import LAZY_COMMANDS

    for name, command in LAZY_COMMANDS.items():
        loaded = command.load()
        assert loaded.name == name and (loaded.help or loaded.callback is not None), name


RUN_PROBE = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps({"aiohttp": "aiohttp" in sys.modules, "httpx": "httpx" in sys.modules})))
from metis_core.cli.app import main
sys.argv = ["metis", "run", "--json", "Say hello"]
main()
"""


def test_a_command_answers_over_httpx_without_importing_aiohttp(tmp_path: Path) -> None:
    """A command's turn is async, and a CLI process is short: it takes httpx, which starts ~60 ms sooner
    than aiohttp (docs/transport.md); `metis serve` and the gateway take aiohttp."""
    from cli.cli_harness import cli_env
    from cli.replay_server import ANTHROPIC, ReplayServer, Reply

    from metis_core.cli.runtime_setup import CLI_ASYNC_HTTP

    assert CLI_ASYNC_HTTP == "httpx"
    server = ReplayServer().start()
    try:
        server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"))
        home, workspace = tmp_path / "home", tmp_path / "work"
        workspace.mkdir()
        done = subprocess.run([sys.executable, "-c", RUN_PROBE], env=cli_env(home, server.base_url), cwd=workspace,
                              capture_output=True, text=True, timeout=60, check=False)
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr
    answer, loaded = json.loads(done.stdout.splitlines()[0]), json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["answer"] and loaded == {"aiohttp": False, "httpx": True}


LISTING_HEAVY = ("metis_core.agent.runtime", "metis_core.agent.turn", "metis_core.adapters.client",
                 "metis_core.routing", "rich.progress", "typer._adapters")
"""What a listing command never needs: the agent loop, the provider client, routing, progress bars, and
typer's pydantic adapters for its options (PlainValue parses text, numbers and paths)."""
MODELS = ("pydantic", "metis_core.config", "metis_core.messages", "metis_core.agent", "metis_core.adapters")
"""The configuration and message models, the agent: lists that only read the database load none of them."""
LISTINGS = [
    (["sessions", "list"], MODELS), (["sessions", "list", "--limit", "1000"], MODELS),
    (["gateway", "keys", "list"], (*MODELS, "metis_core.store.sessions", "metis_core.events")),
    (["users", "list"], MODELS), (["db", "status"], MODELS),
    (["memory", "history"], ("pydantic", "metis_core.config", "metis_core.messages")),
    (["models"], ("metis_core.messages", "metis_core.agent", "rich.table")),
    (["aliases", "list"], ("metis_core.messages", "metis_core.agent", "rich.table")),
    (["keys", "list"], ("metis_core.messages", "metis_core.agent", "rich.table")),
    (["templates", "list"], ("metis_core.messages", "metis_core.agent")),
    (["cost"], ("metis_core.agent", "rich.table")),
    (["patterns", "list"], ("metis_core.messages", "metis_core.agent", "rich.table")),
    (["skills", "list"], ("metis_core.messages", "metis_core.events", "metis_core.store")),
]
"""Every listing command, and what it does not load beside LISTING_HEAVY (its stdout is not a terminal)."""


@pytest.mark.parametrize(("args", "unused"), LISTINGS, ids=[" ".join(args) for args, _ in LISTINGS])
def test_listing_commands_do_not_import_what_they_do_not_use(args: list[str], unused: tuple[str, ...],
                                                             tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "METIS_HOME": str(tmp_path / "home")}
    loaded = probe(args, env, tmp_path)["loaded"]
    never = (*LISTING_HEAVY, *unused)
    assert [m for m in loaded if m in never or m.startswith(tuple(f"{h}." for h in never))] == []
