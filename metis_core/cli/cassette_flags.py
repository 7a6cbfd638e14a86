"""`--record PATH` / `--replay PATH` for `metis run` and `metis chat`: this process's calls go to a cassette.

The command declares the two options and calls `use_cassette`; `open_runtime` then builds the
Runtime's ModelClient on that cassette. A replay needs no API key (every provider counts as
configured) and, without `--model` or a configured default, uses the model the cassette recorded.
"""

from __future__ import annotations

from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from metis_core.errors import ConfigError

if TYPE_CHECKING:
    from metis_core.cassettes.cassette import CassetteMode

RecordOption = Annotated[Path | None, typer.Option(
    "--record", dir_okay=False, help="Record every model call to this cassette file (JSON lines).")]
ReplayOption = Annotated[Path | None, typer.Option(
    "--replay", dir_okay=False, help="Serve every model call from this cassette file, offline, no key needed.")]

_ACTIVE: ContextVar[tuple[CassetteMode, Path] | None] = ContextVar("metis_cli_cassette", default=None)


def use_cassette(record: Path | None, replay: Path | None) -> None:
    """Remember the cassette of this command (none when both are None)."""
    if record is not None and replay is not None:
        raise ConfigError("pass --record or --replay, not both")
    if replay is not None and not replay.is_file():
        raise ConfigError(f"no cassette at {replay}; record one with --record {replay}")
    _ACTIVE.set(("record", record) if record is not None else ("replay", replay) if replay is not None else None)


def active_cassette() -> tuple[CassetteMode, Path] | None:
    return _ACTIVE.get()


def replaying() -> bool:
    active = _ACTIVE.get()
    return active is not None and active[0] == "replay"
