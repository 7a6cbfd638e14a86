"""The command-line cold-start case runs and reports `metis --help` against the interpreter floor.

In the package's .venv there is no `llm` (it lives in bench/.venv only): the case says so in
`missing` and still measures metis; every command it times must exit 0.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.cases import cli  # noqa: E402
from bench.context import RunContext  # noqa: E402
from bench.figures import METIS  # noqa: E402


def test_cli_case_times_metis_help_beside_the_interpreter_floor() -> None:
    ctx = RunContext(server="http://127.0.0.1:9", quick=True)
    figures = {f.impl: f for f in cli.run(ctx)}
    assert {cli.INTERPRETER, METIS} <= set(figures)
    metis = figures[METIS]
    # both timed, neither ordered: three cold starts on a busy machine do not rank them (bench/ does)
    assert metis.samples == ctx.sizes.cold_runs and metis.value > 0 and figures[cli.INTERPRETER].value > 0
    assert metis.floor == figures[cli.INTERPRETER].value and metis.target == cli.HELP_TARGET
    if "llm" not in figures:
        assert "llm" in ctx.missing
