"""Commands registered by name and imported only when they run, so `metis --help` stays instant.

`lazy(name, "package.module:attribute", help)` adds a command: the attribute is a typer app (a
group such as `metis sessions`), a click command, or a plain function typer can wrap. The root
help lists names and the one-line help given here without importing anything; a command's own
module (and its dependencies: the agent, stores, rich) loads when that command is invoked.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import typer
from typer.core import TyperGroup

try:  # typer >= 0.29 carries its own copy of click; older typer depends on click itself
    from typer import _click as click
except ImportError:  # pragma: no cover
    import click  # type: ignore[no-redef,import-not-found,unused-ignore]


@dataclass(frozen=True)
class LazyCommand:
    name: str
    target: str
    """`package.module:attribute`."""
    help: str

    def load(self) -> click.Command:
        module_name, _, attribute = self.target.partition(":")
        found = getattr(importlib.import_module(module_name), attribute)
        command: click.Command
        if isinstance(found, typer.Typer):
            command = typer.main.get_group(found)  # a group even with one subcommand (`audit export`)
        elif isinstance(found, click.Command):
            command = found
        else:
            wrapper = typer.Typer(add_completion=False)
            wrapper.command(self.name)(found)
            command = typer.main.get_command(wrapper)
        command.name = self.name
        plain_help_types(command)
        return command


TYPE_WORDS = {"bool": None, "str": "TEXT", "int": "INTEGER", "float": "NUMBER", "Path": "PATH", "path": "PATH",
              "file": "FILE", "directory": "DIR", "datetime": "TIME"}
"""typer's Python type labels and the words `--help` shows instead (a switch shows nothing)."""


def _type_word(label: str | None) -> str | None:
    """`<bool>` -> nothing, `<str>` -> TEXT, `<list[str]>` -> TEXT..., a metavar or choices as they are."""
    if label is None or not (label.startswith("<") and label.endswith(">")):
        return label
    inner = label[1:-1]
    repeated = inner.startswith("list[") and inner.endswith("]")
    inner = inner[5:-1] if repeated else inner
    word = TYPE_WORDS.get(inner, inner.replace(" range", "").upper() if inner in ("int range", "float range")
                          else inner)
    if word == "INT":
        word = "INTEGER"
    if word == "FLOAT":
        word = "NUMBER"
    if word is None:
        return None
    return f"{word}..." if repeated else word


def _show_word(param: click.Parameter) -> None:
    shown = getattr(param, "display_type_rich", None)
    if shown is not None and not getattr(shown, "plain_word", False):
        def word(ctx: click.Context) -> str | None:
            return _type_word(shown(ctx))

        word.plain_word = True  # type: ignore[attr-defined]
        setattr(param, "display_type_rich", word)  # noqa: B010 (an instance override of typer's method)


def plain_help_types(command: click.Command) -> None:
    """Show user words in the help (TEXT, INTEGER, PATH) where typer shows <str>, <bool>, <list[str]>."""
    for param in command.params:
        _show_word(param)
    help_option = command.get_help_option  # -h/--help is made when help is asked for

    def plain_help_option(ctx: click.Context) -> click.Parameter | None:
        made = help_option(ctx)
        if made is not None:
            _show_word(made)
        return made

    setattr(command, "get_help_option", plain_help_option)  # noqa: B010
    for sub in getattr(command, "commands", {}).values():
        plain_help_types(sub)


LAZY_COMMANDS: dict[str, LazyCommand] = {}
"""Every lazily registered command, in the order `metis --help` lists them."""


def lazy(name: str, target: str, help: str) -> None:
    """Register `metis NAME`, implemented by `target` (`package.module:attribute`)."""
    LAZY_COMMANDS[name] = LazyCommand(name, target, help)


class LazyGroup(TyperGroup):
    """The root group: eagerly added commands as usual, plus LAZY_COMMANDS loaded on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        eager = super().list_commands(ctx)
        return [*eager, *(name for name in LAZY_COMMANDS if name not in eager)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in LAZY_COMMANDS:
            self.commands[cmd_name] = LAZY_COMMANDS[cmd_name].load()
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """One line per command from the registered help: listing imports no command module."""
        rows = []
        for name in self.list_commands(ctx):
            if name in LAZY_COMMANDS and name not in self.commands:
                rows.append((name, LAZY_COMMANDS[name].help))
            else:
                command = self.commands[name]
                if not command.hidden:
                    rows.append((name, command.get_short_help_str(limit=formatter.width - 6 - len(name))))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
