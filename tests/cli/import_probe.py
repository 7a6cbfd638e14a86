"""Run one `metis` command in a fresh interpreter and report the modules it loaded.

Shared by the tests that check a command loads only what it uses (test_startup_imports.py,
test_listing_loads.py); their times are measured in bench/listing.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

PROBE = """
import contextlib, io, json, sys
from metis_core.cli.app import app
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        app(ARGS, standalone_mode=True)
    except SystemExit:
        pass
loaded = sorted(m for m in sys.modules if m.startswith(("metis_core", "rich", "pydantic", "yaml", "typer._adapters")))
settings = sys.modules.get("metis_core.learning.settings")
built = settings is not None and settings.LearningSettings.__pydantic_complete__
print(json.dumps({"loaded": loaded, "out": out.getvalue(), "settings_built": built}))
"""


def probe(args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> dict[str, Any]:
    """`{"loaded": [module, ...], "out": stdout, "settings_built": bool}` after `metis ARGS`."""
    done = subprocess.run([sys.executable, "-c", PROBE.replace("ARGS", repr(args))], capture_output=True, text=True,
                          timeout=60, check=True, env=env, cwd=cwd)
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report
