"""One live MCP server connection, owned by its own thread and event loop.

The SDK's client is a stack of anyio context managers that must be entered and left by one task;
a session's turns run on whatever loop the caller has. So each server gets a thread running a
loop that opens the client, lists its tools and waits; calls are handed to that loop and awaited
from the caller's loop with a timeout. A hung server therefore costs one call its timeout, and a
server that died fails the call in flight at once; neither can stall a turn. A stdio server that
crashed is started again before the next call (at most MAX_RESTARTS times, after a growing pause),
each restart logged and kept in `restarts` with the cause (crash_report.py). It does not know
about tools as metis sees them (tools.py) or about the registry (hub.py).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from metis_core.agent.mcp.crash_report import crash_report, watch_processes
from metis_core.agent_config import McpServerConfig
from metis_core.errors import McpSdkMissingError, McpServerError
from metis_core.secret_scrub import MIN_SECRET_LENGTH, REDACTED, scrub_secrets

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import CallToolResult, Tool

log = logging.getLogger("metis_core.agent.mcp")
CLOSE_TIMEOUT_SECONDS = 5.0
MAX_RESTARTS = 3
RESTART_BACKOFF_SECONDS = (0.5, 1.0, 2.0)
"""The pause before the first, second and third restart of a crashed stdio server."""


@dataclass(frozen=True)
class Restart:
    """One restart of a crashed server: why it was needed, and the error if it did not come back."""

    attempt: int
    cause: str
    error: str | None = None


class McpCallTimeout(Exception):
    """The server did not answer a call in time (the call was cancelled on the server's loop)."""


class McpServerGone(Exception):
    """The connection is closed: the server exited or broke the protocol."""


def _sdk() -> Any:
    try:
        import mcp
    except ImportError:  # pragma: no cover - the dev install always has it
        raise McpSdkMissingError() from None
    return mcp


class McpConnection:
    def __init__(self, name: str, config: McpServerConfig, *, log_dir: Path | None = None) -> None:
        self.name = name
        self.config = config
        self.log_dir = log_dir
        self.tools: list[Tool] = []
        self.server_version: str | None = None
        self.gone: str | None = None
        """Why the connection ended, once it has."""
        self._client: Client | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._thread: threading.Thread | None = None
        self._errlog: TextIO | None = None
        self._log_offset = 0
        self._spawned: list[Any] = []
        self._closed = False
        self._restart_lock = threading.Lock()
        self.restarts: list[Restart] = []

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> list[Tool]:
        """Connect and list the tools, blocking up to connect_timeout_seconds; McpServerError on failure."""
        ready: concurrent.futures.Future[list[Tool]] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._thread_main, args=(ready,), name=f"mcp-{self.name}",
                                        daemon=True)
        self._thread.start()
        try:
            return ready.result(timeout=self.config.connect_timeout_seconds)
        except concurrent.futures.TimeoutError:
            self.close(abandon=True)
            raise McpServerError(self.name, f"did not finish connecting within "
                                            f"{self.config.connect_timeout_seconds:g}s; check the command or URL, "
                                            "or raise connect_timeout_seconds") from None

    def close(self, *, abandon: bool = False) -> None:
        """Stop the connection; `abandon` cancels a connect still in progress (the process is ended)."""
        self._closed = True
        self._shutdown(abandon=abandon)
        self.gone = self.gone or "closed"

    def _shutdown(self, *, abandon: bool = False) -> None:
        loop, stop, task = self._loop, self._stop, self._task
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(task.cancel if abandon and task is not None else stop.set)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(CLOSE_TIMEOUT_SECONDS)
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    @property
    def log_path(self) -> Path | None:
        return self.log_dir / f"mcp-{self.name}.log" if self.log_dir is not None else None

    def crash_cause(self, what: str, *, wait: bool = True) -> str:
        """`what` happened, with the exit status and stderr tail of the server when known."""
        process = self._spawned[-1] if self._spawned else None
        report = crash_report(process, self.log_path, self._log_offset, wait=wait)
        for secret in [*self.config.env.values(), *self.config.headers.values()]:  # a server may print its env
            if len(value := secret.get_secret_value()) >= MIN_SECRET_LENGTH:
                report = report.replace(value, REDACTED)
        return scrub_secrets(f"{what}; {report}" if report else what)

    def _exited(self) -> bool:
        return bool(self._spawned) and getattr(self._spawned[-1], "returncode", None) is not None

    def restart_if_crashed(self) -> None:
        """Start a crashed stdio server again (blocking: run it off the caller's loop); McpServerGone
        when it is not to be restarted or did not come back."""
        with self._restart_lock:
            if self.gone is None:
                return  # another call restarted it meanwhile
            done = len(self.restarts)
            if self._closed or self.config.url is not None or done >= MAX_RESTARTS:
                suffix = f"; not restarted again after {done} restarts" if done >= MAX_RESTARTS else ""
                raise McpServerGone(self.gone + suffix)
            cause = self.gone
            time.sleep(RESTART_BACKOFF_SECONDS[min(done, len(RESTART_BACKOFF_SECONDS) - 1)])
            self._shutdown()
            self.gone = None
            try:
                self.start()
            except McpServerError as error:
                self.restarts.append(Restart(done + 1, cause, str(error)))
                self.gone = f"{cause}; restart {done + 1} of {MAX_RESTARTS} failed: {error}"
                log.warning("MCP server %r crashed (%s) and did not come back: %s", self.name, cause, error)
                raise McpServerGone(self.gone) from None
            self.restarts.append(Restart(done + 1, cause))
            log.warning("MCP server %r crashed (%s); restarted (%d of %d)", self.name, cause, done + 1, MAX_RESTARTS)

    def _thread_main(self, ready: concurrent.futures.Future[list[Tool]]) -> None:
        try:
            asyncio.run(self._serve(ready))
        except BaseException as exc:  # the loop itself failed; report once, never raise from a thread
            if not ready.done():
                ready.set_exception(McpServerError(self.name, _describe(exc)))
            self.gone = self.gone or _describe(exc)

    async def _serve(self, ready: concurrent.futures.Future[list[Tool]]) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._task = asyncio.current_task()
        watch_processes(self._spawned)
        try:
            async with self._new_client() as client:
                tools = await self._list_all_tools(client)
                self._client = client
                info = client.server_info
                self.server_version = info.version if info is not None else None
                self.tools = tools
                ready.set_result(tools)
                await self._stop.wait()
        except BaseException as exc:
            reason = _describe(exc)
            if not ready.done():
                cause = self.crash_cause(f"could not connect: {reason}", wait=False)
                ready.set_exception(McpServerError(self.name, cause))
            self.gone = self.gone or self.crash_cause(reason, wait=False)
            if not isinstance(exc, Exception):
                raise
        finally:
            self._client = None
            self.gone = self.gone or "closed"

    def _new_client(self) -> Client:
        mcp = _sdk()
        config = self.config
        if config.url is not None:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            headers = {k: v.get_secret_value() for k, v in config.headers.items()}
            http = create_mcp_http_client(headers=headers or None)
            transport: Any = streamable_http_client(config.url, http_client=http)
            client: Client = mcp.Client(_ClosingTransport(transport, http), mode="auto")
            return client
        from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

        env = get_default_environment() | {k: v.get_secret_value() for k, v in config.env.items()}
        params = StdioServerParameters(command=config.command or "", args=config.args, env=env, cwd=config.cwd)
        return mcp.Client(stdio_client(params, errlog=self._open_errlog()), mode="auto")  # type: ignore[no-any-return]

    def _open_errlog(self) -> TextIO:
        """Server stderr goes to METIS_HOME/logs/mcp-<name>.log, not into the user's terminal."""
        if self.log_dir is None:
            import os

            self._errlog = open(os.devnull, "w")  # noqa: SIM115 - closed in close()
        else:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            self._errlog = open(self.log_dir / f"mcp-{self.name}.log", "a", encoding="utf-8")  # noqa: SIM115
            self._log_offset = self._errlog.seek(0, 2)
        return self._errlog

    @staticmethod
    async def _list_all_tools(client: Client) -> list[Tool]:
        tools: list[Tool] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    # --- calls -----------------------------------------------------------------------------

    async def call_tool(self, tool: str, arguments: dict[str, Any], timeout: float) -> CallToolResult:
        """Run one tools/call on the server's loop (restarting a crashed server first); McpCallTimeout
        or McpServerGone on failure."""
        if self.gone is None and self._exited():  # it died while idle: nothing was in flight
            self.gone = await asyncio.to_thread(self.crash_cause, "the server exited")
        if self.gone is not None:
            await asyncio.to_thread(self.restart_if_crashed)
        client, loop = self._client, self._loop
        if client is None or loop is None or self.gone is not None:
            raise McpServerGone(self.gone or "not connected")
        work: Coroutine[Any, Any, CallToolResult] = client.call_tool(tool, arguments)
        future = asyncio.run_coroutine_threadsafe(work, loop)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout)
        except TimeoutError:
            future.cancel()
            raise McpCallTimeout(f"no answer within {timeout:g}s") from None
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as exc:
            if _connection_closed(exc) or self._client is None:
                what = f"the server closed the connection ({_describe(exc)})"
                self.gone = await asyncio.to_thread(self.crash_cause, what)
                raise McpServerGone(self.gone) from None
            raise


class _ClosingTransport:
    """The HTTP transport context, closing the httpx client we created for its headers."""

    def __init__(self, transport: Any, http: Any) -> None:
        self._transport = transport
        self._http = http

    async def __aenter__(self) -> Any:
        await self._http.__aenter__()
        try:
            return await self._transport.__aenter__()
        except BaseException:
            await self._http.__aexit__(None, None, None)
            raise

    async def __aexit__(self, *exc: Any) -> Any:
        try:
            return await self._transport.__aexit__(*exc)
        finally:
            await self._http.__aexit__(None, None, None)


_CLOSED_TYPES = frozenset({"ClosedResourceError", "BrokenResourceError", "EndOfStream", "BrokenPipeError",
                           "ConnectionResetError", "ConnectError", "RemoteProtocolError"})


def _connection_closed(exc: BaseException) -> bool:
    """The SDK reports a dead peer as MCPError("Connection closed") or as the stream's own errors."""
    text = str(exc).lower()
    return (type(exc).__name__ in _CLOSED_TYPES or "connection closed" in text
            or ("closed" in text and "stream" in text))


def _describe(exc: BaseException) -> str:
    """A short reason; exception groups (anyio task groups) are unwrapped to their first leaf."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:300]
