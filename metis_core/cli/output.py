"""Where the CLI writes: rich consoles on stdout and stderr, scrubbed of every known API key.

Keys are SecretStr inside the library and never printed on purpose; the scrubbing here is the
last safety net for text that comes from outside (a provider error body that echoes a header,
a tool output). It replaces the exact values of configured keys, nothing else: pattern-based
redaction of event fields lives in the agent layer. rich loads when a console is first used: a
listing piped to another program writes plain rows through the scrubbing stream and never does.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from functools import cached_property
from typing import TYPE_CHECKING, TextIO

from metis_core.key_env import STANDARD_KEY_ENV
from metis_core.secret_scrub import MIN_SECRET_LENGTH, REDACTED

if TYPE_CHECKING:  # the configuration model (pydantic) is the caller's to load: a listing never does
    from rich.console import Console

    from metis_core.config import MetisConfig


def known_secret_values(config: MetisConfig | None = None) -> list[str]:
    """Values of every key variable in the environment and every key or header in the config."""
    names = {name for group in STANDARD_KEY_ENV.values() for name in group}
    values: set[str] = set()
    if config is not None:
        for provider, settings in config.providers.items():
            names.update(config.api_key_env_vars(provider))
            if settings.api_key is not None:
                values.add(settings.api_key.get_secret_value())
            values.update(v.get_secret_value() for v in settings.headers.values())
        for server in config.declared_mcp_servers.values():
            values.update(v.get_secret_value() for v in [*server.env.values(), *server.headers.values()])
    values.update(os.environ.get(name, "").strip() for name in names)
    return sorted((v for v in values if len(v) >= MIN_SECRET_LENGTH), key=len, reverse=True)


class ScrubbingStream:
    """A text stream that replaces secret values before writing to the real one."""

    def __init__(self, target: TextIO, secrets: Iterable[str]) -> None:
        self.target = target
        self.secrets = list(secrets)

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def write(self, text: str) -> int:
        self.target.write(self.scrub(text))
        return len(text)

    def flush(self) -> None:
        self.target.flush()

    def isatty(self) -> bool:
        return self.target.isatty()

    def fileno(self) -> int:
        return self.target.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self.target, "encoding", "utf-8") or "utf-8"


def _console(stream: ScrubbingStream) -> Console:
    from rich.console import Console

    return Console(file=stream, soft_wrap=True, highlight=False)  # type: ignore[arg-type]


class Terminal:
    """The two consoles of one command invocation (built per call: tests swap sys.stdout), each made
    on first use."""

    def __init__(self, stdout: ScrubbingStream, stderr: ScrubbingStream) -> None:
        self.scrubber = stdout
        self.error_stream = stderr

    @classmethod
    def open(cls, config: MetisConfig | None = None) -> Terminal:
        secrets = known_secret_values(config)
        return cls(ScrubbingStream(sys.stdout, secrets), ScrubbingStream(sys.stderr, secrets))

    @cached_property
    def out(self) -> Console:
        return _console(self.scrubber)

    @cached_property
    def err(self) -> Console:
        return _console(self.error_stream)

    @property
    def out_is_terminal(self) -> bool:
        """`out.is_terminal`, without making the console when stdout is plainly not a terminal: not a tty
        and none of the variables that make rich treat it as one (TTY_COMPATIBLE=1, FORCE_COLOR)."""
        forced = os.environ.get("TTY_COMPATIBLE") == "1" or bool(os.environ.get("FORCE_COLOR"))
        return self.out.is_terminal if forced or self.scrubber.isatty() else False

    @property
    def interactive(self) -> bool:
        """stdin and stdout are both terminals: prompting is possible."""
        return sys.stdin.isatty() and self.out_is_terminal

    def confirmed(self, question: str, *, yes: bool, act: str) -> bool:
        """True when `--yes` was given or the person answers y to `question`; "kept" is printed on a
        no. Without a terminal to ask, UsageProblem: `act` (e.g. "deleting X") needs --yes."""
        if yes:
            return True
        if not self.interactive:
            from metis_core.cli.exit_codes import UsageProblem

            raise UsageProblem(f"{act} needs --yes when there is no terminal to ask")
        if input(f"{question} [y/N] ").strip().lower() in ("y", "yes"):
            return True
        self.out.print("kept", markup=False)
        return False

    def fail(self, message: str) -> None:
        """One red line on stderr, whatever the message's own line breaks."""
        line = " ".join(part.strip() for part in message.splitlines() if part.strip())
        self.err.print(f"error: {line}", style="bold red", markup=False, highlight=False)

    def warn(self, message: str) -> None:
        self.err.print(message, style="yellow", markup=False, highlight=False)

    def raw(self, text: str) -> None:
        """Exactly `text` on stdout (JSON for scripts), scrubbed, without rich's rendering."""
        self.scrubber.write(text)
        self.scrubber.flush()
