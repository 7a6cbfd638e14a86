"""Option values parsed by PlainValue (lazy_commands.py) as typer would: numbers against min, max
and clamp, paths with their checks, anything else (lists) by typer's own adapters."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Annotated

import typer

from metis_core.cli.lazy_commands import PlainValue, parse_plain_values

app = typer.Typer()


@app.command()
def show(
    limit: Annotated[int, typer.Option(min=1, max=10)] = 5,
    ratio: Annotated[float, typer.Option(min=0, max=1, clamp=True)] = 0.5,
    name: str | None = None,
    where: Annotated[Path | None, typer.Option(exists=True)] = None,
    tag: list[str] | None = None,
) -> None:
    typer.echo(json.dumps({"limit": limit, "ratio": ratio, "name": name, "where": where and str(where), "tag": tag}))


COMMAND = typer.main.get_command(app)
parse_plain_values(COMMAND)


def invoke(*args: str) -> tuple[int, str]:
    """(exit code, stdout and stderr) of `show ARGS`."""
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        try:
            COMMAND.main(list(args), prog_name="show")
        except SystemExit as done:
            return int(done.code or 0), said.getvalue()
    return 0, said.getvalue()


def test_every_option_is_parsed_by_plain_value() -> None:
    assert all(isinstance(getattr(p, "_runtime_param", None), PlainValue) for p in COMMAND.params)


def test_values_and_defaults_come_out_as_typer_gives_them(tmp_path: Path) -> None:
    assert json.loads(invoke()[1]) == {"limit": 5, "ratio": 0.5, "name": None, "where": None, "tag": None}
    code, given = invoke("--limit", "10", "--ratio", "7", "--name", "x", "--where", str(tmp_path), "--tag", "a",
                         "--tag", "b")
    assert code == 0 and json.loads(given) == {"limit": 10, "ratio": 1.0, "name": "x", "where": str(tmp_path),
                                        "tag": ["a", "b"]}


def test_a_bad_number_or_a_missing_path_is_a_usage_error_naming_the_option(tmp_path: Path) -> None:
    for args, expected in ((["--limit", "0"], "0 is not in the range 1<=x<=10"),
                           (["--limit", "x"], "'x' is not a valid integer"),
                           (["--where", str(tmp_path / "nothing")], "does not exist")):
        code, said = invoke(*args)
        assert code == 2 and expected in said and f"'{args[0]}'" in said, said
