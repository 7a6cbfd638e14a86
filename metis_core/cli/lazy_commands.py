"""Commands registered by name and imported only when they run, so `metis --help` stays instant.

`lazy(name, "package.module:attribute", help)` adds a command: the attribute is a typer app (a
group such as `metis sessions`), a click command, or a plain function typer can wrap. The root
help lists names and the one-line help given here without importing anything; a command's own
module (and its dependencies: the agent, stores, rich) loads when that command is invoked. Option
values of the plain types (text, numbers, paths) are parsed without typer's pydantic adapters.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from typer import _click as click  # typer >= 0.29 carries its own copy of click
from typer._coercion import RuntimeParam, build_runtime_param
from typer._display import describe_number_range
from typer._param_types import coerce_cli_path
from typer.core import TyperGroup, TyperOption


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
        parse_plain_values(command)
        return command


@dataclass(frozen=True)
class PlainValue(RuntimeParam):
    """An option's value as typer parses it, for text, numbers (min, max, clamp) and paths, without
    the pydantic TypeAdapter typer builds for every parameter, given or not (pydantic's import and
    ~5 ms a parameter: most of a listing's start-up). Other types and lists go to typer's own."""

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        kind, info = self.annotation, self.parameter_info
        if kind is str and isinstance(value, str) and info.parser is None:
            return value
        if kind in (int, float) and isinstance(value, (str, kind)) and info.parser is None:
            try:  # a default (int or float already) is checked against min and max as typer does
                number = kind(value)
            except ValueError:
                raise typer.BadParameter(f"{value!r} is not a valid {'integer' if kind is int else 'number'}.",
                                         ctx=ctx, param=param) from None
            low, high = info.min, info.max
            below, above = low is not None and number < low, high is not None and number > high
            if info.clamp and (below or above):
                return kind(low if below else high)
            if below or above:
                raise typer.BadParameter(f"{number} is not in the range {describe_number_range(low, high)}.",
                                         ctx=ctx, param=param)
            return number
        if isinstance(kind, type) and issubclass(kind, Path) and isinstance(value, (str, Path)) and info.parser is None:
            return coerce_cli_path(value, info, path_type=info.path_type or kind, param=param, ctx=ctx)
        return build_runtime_param(param.type_descriptor)._coerce_value(value, param=param, ctx=ctx)


def parse_plainly(param: click.Parameter) -> None:
    """Give a typer parameter PlainValue's parsing (a file parameter keeps typer's)."""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is not None and descriptor.file_annotation is None and hasattr(param, "_runtime_param"):
        param._runtime_param = PlainValue(descriptor.parameter_info, descriptor.annotation)


def parse_plain_values(command: click.Command) -> None:
    """PlainValue parsing for every parameter of `command` and its subcommands."""
    for param in command.params:
        parse_plainly(param)
    for sub in getattr(command, "commands", {}).values():
        parse_plain_values(sub)


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
            parse_plainly(made)
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

    def get_help_option(self, ctx: click.Context) -> TyperOption | None:
        made = super().get_help_option(ctx)
        if made is not None:
            parse_plainly(made)
        return made

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
