"""The `metis demo` command line; the tour is tour.py (imported when it runs)."""

from __future__ import annotations

from typing import Annotated

import typer


def demo(
    keep: Annotated[bool, typer.Option("--keep", help="Store the demo session in your METIS_HOME instead of a "
                                                      "temporary one.")] = False,
) -> None:
    """A tour of the real stack, offline, against a scripted model on a local server."""
    from metis_core.cli.demo.tour import run_demo
    from metis_core.cli.failures import guarded
    from metis_core.cli.output import Terminal

    guarded(lambda: run_demo(Terminal.open(), keep=keep))()
