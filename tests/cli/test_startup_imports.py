"""`metis --help` and `metis --version` load no command: only the lazy table (docs/cli.md, "Adding a command").

Checked in a fresh interpreter: after the root help is printed, no module of the agent, the
stores, the adapters or rich has been imported, and every registered command still loads.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import contextlib, io, json, sys
from metis_core.cli.app import app
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        app(ARGS, standalone_mode=True)
    except SystemExit:
        pass
loaded = sorted(m for m in sys.modules if m.startswith(("metis_core", "rich", "yaml", "pydantic")))
print(json.dumps({"loaded": loaded, "out": out.getvalue()}))
"""


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["--version"]])
def test_the_root_help_and_version_import_no_command(args: list[str]) -> None:
    done = subprocess.run([sys.executable, "-c", PROBE.replace("ARGS", repr(args))], capture_output=True, text=True,
                          timeout=60, check=True)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["out"]
    heavy = [m for m in report["loaded"] if not m.startswith(("metis_core.cli.app", "metis_core.cli.lazy_commands"))
             and m not in ("metis_core", "metis_core.cli")]
    assert heavy == []


def test_every_registered_command_loads() -> None:
    from metis_core.cli.lazy_commands import LAZY_COMMANDS

    for name, command in LAZY_COMMANDS.items():
        loaded = command.load()
        assert loaded.name == name and (loaded.help or loaded.callback is not None), name
