"""A real gateway for tests: uvicorn on 127.0.0.1 in a thread, in front of a replay upstream.

The upstream is the CLI tests' ReplayServer (recorded provider traffic over real HTTP); the
gateway's runtime has its own METIS_HOME, a ModelClient pointed at the upstream and a key store
in the same metis.db. `GatewayHarness.drain()` waits until every event and store write landed.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import uvicorn
from cli.replay_server import ReplayServer

from metis_core.adapters.client import ModelClient
from metis_core.agent.runtime import Runtime
from metis_core.events.recorder import EventRecorder
from metis_core.gateway.app import create_app
from metis_core.gateway.keys import KeyTerms
from metis_core.gateway.metrics import OperatorMetrics
from metis_core.gateway.quotas import budget_window
from metis_core.gateway.record_writer import RecordWriter
from metis_core.gateway.service import GatewayService, GatewaySettings
from metis_core.store.gateway_keys import GatewayKeyStore, SqliteGatewayKeyStore
from metis_core.transport.retry import RetryPolicy

if TYPE_CHECKING:
    from .stalling_upstream import StallingUpstream

UPSTREAM_KEYS = {"anthropic": "sk-ant-upstream-SECRET-0001", "openai": "sk-upstream-SECRET-0002",
                 "openai_responses": "sk-upstream-SECRET-0003"}


def hold(writer: RecordWriter) -> threading.Event:
    """Keep the writer busy until the returned event is set, so later jobs queue up behind it."""
    started, release = threading.Event(), threading.Event()

    def busy() -> None:
        started.set()
        release.wait(10)

    writer.submit(busy)
    assert started.wait(10)
    return release


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def gateway_before(home: Path, stalling: StallingUpstream) -> GatewayHarness:
    """A started gateway in `home` whose Anthropic upstream is `stalling`."""
    harness = GatewayHarness(home, ReplayServer())
    harness.runtime.client._base_urls["anthropic"] = stalling.base_url
    return harness.start()


class GatewayHarness:
    def __init__(self, home: Path, upstream: ReplayServer, settings: GatewaySettings | None = None,
                 *, lifespan: str = "off", key_store: GatewayKeyStore | None = None,
                 metrics: OperatorMetrics | None = None) -> None:
        client = ModelClient(
            base_urls={"anthropic": upstream.base_url, "openai": upstream.base_url + "/v1",
                       "openai_responses": upstream.base_url + "/v1", "bedrock": upstream.base_url},
            api_keys=UPSTREAM_KEYS, retry=RetryPolicy(max_retries=0),
        )  # fmt: skip
        self.runtime = Runtime(home=home, client=client, configured_providers=set(UPSTREAM_KEYS))
        self.events = EventRecorder()
        self.runtime.bus.subscribe(self.events.subscription())
        self.service = GatewayService(self.runtime, key_store or SqliteGatewayKeyStore(self.runtime.db_path),
                                      settings or GatewaySettings(workspace=home))
        self.upstream = upstream
        self.port = free_port()
        self.lifespan = lifespan
        """"on": uvicorn runs the app's shutdown (as `metis gateway serve` does), which closes the service."""
        if metrics is not None:
            metrics.attach(self.runtime.bus)
        config = uvicorn.Config(create_app(self.service, metrics=metrics), host="127.0.0.1", port=self.port,
                                log_level="warning", lifespan=lifespan)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> GatewayHarness:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the gateway did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        if self.lifespan == "off":
            self.service.close()

    def issue(self, **terms: Any) -> tuple[str, str]:
        issued = self.service.keys.issue(KeyTerms(name=terms.pop("name", "test"), **terms))
        return issued.record.id, issued.token

    def post_and_leave(self, path: str, auth_header: str, body: dict[str, Any], stalling: StallingUpstream) -> None:
        """POST `body` to `path` on a raw socket and close it once `stalling`, the upstream, has read the
        call: a client leaving before its answer. Returns when the gateway has closed the upstream request."""
        data = json.dumps(body).encode()
        with socket.create_connection(("127.0.0.1", self.port)) as client:
            client.sendall(f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1:{self.port}\r\n".encode()
                           + b"content-type: application/json\r\n"
                           + f"{auth_header}\r\ncontent-length: {len(data)}\r\n\r\n".encode() + data)
            assert stalling.request_seen.wait(10), "the gateway never sent the upstream the call that stalls"
        assert stalling.closed_by_peer.wait(10), "the upstream request was not cancelled"

    def drain(self) -> None:
        self.service.drain()

    def of_type(self, event_type: str) -> list[Any]:
        self.drain()
        return self.events.of_type(event_type)

    def recorded(self, event_type: str, where: Callable[[Any], bool] = lambda event: True) -> list[Any]:
        """The events of `event_type` that `where` picks, waited for (up to 10 s) until there is one: the record
        follows a cancel, or a stream's last chunk, on the gateway's loop, after the client has what it reads."""
        deadline = time.monotonic() + 10
        while True:
            found = [event for event in self.of_type(event_type) if where(event)]
            if found or time.monotonic() > deadline:
                return found
            time.sleep(0.02)

    def cancelled_turn(self) -> Any:
        """The one `turn.cancelled` event, waited for."""
        [cancelled] = self.recorded("turn.cancelled")
        return cancelled

    def spent_today(self, key_id: str) -> Decimal:
        """What the key has been charged in today's budget window."""
        day, _ = budget_window("day", datetime.now(UTC))
        return Decimal(self.service.key_store.spent("gateway_key", key_id, int(day.timestamp())))
