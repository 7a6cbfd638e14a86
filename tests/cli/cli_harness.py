"""Driving the real `metis` executable: environment, subprocess runs, a pseudo-terminal, the store.

Every run gets a temp METIS_HOME, fake keys and METIS_<PROVIDER>_BASE_URL pointing at a local
ReplayServer; every captured output is checked for the key values. `PtySession` runs `metis
chat` on a pseudo-terminal (python's pty module) so prompts, confirmations and Ctrl-C behave as
they do for a person.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from fcntl import ioctl
from pathlib import Path
from typing import Any

from support_servers import tool_call_stream

from metis_core.events.envelope import Event
from metis_core.messages import Message
from metis_core.store.sessions import SessionStore
from metis_core.trace.store import TraceStore

ANTHROPIC_KEY = "sk-ant-test-CLI-LEAKCHECK-4f9b2c81"
OPENAI_KEY = "sk-test-openai-LEAKCHECK-77aa31d0"
KEYS = (ANTHROPIC_KEY, OPENAI_KEY)
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[()][A-Z0-9]|\x1b[=>]|\r")
METIS = Path(sys.executable).with_name("metis")
COMMAND = [str(METIS)] if METIS.exists() else [sys.executable, "-c", "from metis_core.cli.app import main; main()"]


def write_file_call_stream(path: str, content: str) -> bytes:
    """The recorded get_weather tool_use stream, turned into a call of the built-in write_file."""
    return tool_call_stream("write_file", {"path": path, "content": content})


def cli_env(home: Path, base_url: str | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.endswith("_API_KEY") and not k.endswith("_BASE_URL")
           and k not in ("OLLAMA_HOST", "METIS_HOME", "METIS_DATABASE_URL")}
    env.update(METIS_HOME=str(home), METIS_BUS_MODE="strict", NO_COLOR="1", COLUMNS="200", TERM="xterm",
               METIS_OLLAMA_PROBE_URL="http://127.0.0.1:9")
    if base_url is not None:
        env.update(METIS_ANTHROPIC_BASE_URL=base_url, METIS_OPENAI_BASE_URL=f"{base_url}/v1",
                   ANTHROPIC_API_KEY=ANTHROPIC_KEY, OPENAI_API_KEY=OPENAI_KEY)
    env.update(extra)
    return env


def assert_no_key(*outputs: str | bytes) -> None:
    for output in outputs:
        text = output.decode(errors="replace") if isinstance(output, bytes) else output
        for key in KEYS:
            assert key not in text, "an API key value appeared in the output"


def metis(args: list[str], env: dict[str, str], cwd: Path, *, stdin: str = "", timeout: float = 30
          ) -> subprocess.CompletedProcess[str]:
    """Run `metis ARGS` without a terminal; stdout/stderr captured and checked for keys."""
    done = subprocess.run([*COMMAND, *args], env=env, cwd=cwd, input=stdin, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert_no_key(done.stdout, done.stderr)
    return done


def stored_messages(home: Path, session_id: str) -> list[Message]:
    with SessionStore(home / "metis.db") as store:
        return store.load_messages(session_id)


LEARNING_DOMAINS = ("eval.", "feedback.", "pattern.")


def stored_events(home: Path, session_id: str, *, learning: bool = False,
                  database: Path | str | None = None) -> list[Event]:
    """The session's events (in home's metis.db, or `database`); without `learning`, the learning
    layer's batch events (evaluations, implicit feedback, patterns: tests/learning/) are left out,
    since they interleave with the turn's."""
    with TraceStore(database or home / "metis.db") as trace:
        events = trace.replay(session_id)
    return events if learning else [e for e in events if not e.type.startswith(LEARNING_DOMAINS)]


def only_session_id(home: Path) -> str:
    with SessionStore(home / "metis.db") as store:
        sessions = store.list_sessions()
    assert len(sessions) == 1, [s.id for s in sessions]
    return sessions[0].id


def types(events: list[Event]) -> list[str]:
    return [e.type for e in events]


def first(events: list[Event], event_type: str) -> Event:
    return next(e for e in events if e.type == event_type)


class PtySession:
    """`metis ARGS` on a pseudo-terminal: read what it shows, type into it, press Ctrl-C."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child: becomes metis, with the pty as its controlling terminal
            os.chdir(cwd)
            os.execve(COMMAND[0], [*COMMAND, *args], env)
        self.pid, self.fd = pid, fd
        ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        self.raw = b""
        self.cursor = 0
        self.status: int | None = None

    @property
    def text(self) -> str:
        return ANSI.sub("", self.raw.decode(errors="replace"))

    def _pump(self, wait: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], wait)
        if not ready:
            return True
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:
            return False
        self.raw += chunk
        return bool(chunk)

    def expect(self, pattern: str, timeout: float = 15) -> str:
        """Wait until `pattern` (a regex) shows after the last match; return the text up to it."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        while True:
            found = regex.search(self.text, self.cursor)
            if found is not None:
                seen = self.text[self.cursor : found.end()]
                self.cursor = found.end()
                return seen
            if time.monotonic() > deadline or not self._pump(0.05):
                raise AssertionError(f"{pattern!r} not shown; the terminal shows:\n{self.text[self.cursor:]}")

    def type(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\r")

    def press(self, key: bytes) -> None:
        os.write(self.fd, key)

    def wait(self, timeout: float = 15) -> int:
        deadline = time.monotonic() + timeout
        while self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"metis did not exit; the terminal shows:\n{self.text[-3000:]}")
            self._pump(0.05)
        while self._pump(0.01):
            pass
        assert_no_key(self.raw)
        return self.status

    def close(self) -> None:
        if self.status is None:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.status = -9
        os.close(self.fd)


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]
