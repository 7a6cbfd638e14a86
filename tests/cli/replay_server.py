"""A real HTTP server on 127.0.0.1 that answers provider requests with recorded traffic.

Each path has a queue of replies (a recording from the shared fixtures, or a body built in the
test); every request is kept (path, headers, parsed JSON) for the test to inspect. A reply can
stall after a marker, like a slow model, until the server is stopped, so a test can cancel a
turn mid-stream. Bodies are sent close-delimited in network-sized pieces.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fixture_files import read_bytes

ANTHROPIC = "/v1/messages"
OPENAI = "/v1/chat/completions"
PIECE = 512


@dataclass
class Reply:
    status: int
    body: bytes
    content_type: str = "text/event-stream"
    stall_before: bytes | None = None
    """Send the body up to this marker, then hang until the server stops."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra response headers (e.g. AWS's x-amzn-ErrorType, Retry-After)."""

    @classmethod
    def recording(cls, provider: str, name: str, status: int = 200, *, stall_before: bytes | None = None) -> Reply:
        content_type = "text/event-stream" if name.endswith(".sse") else "application/json"
        return cls(status, read_bytes(provider, name), content_type, stall_before)


@dataclass
class SeenRequest:
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes = b""
    """The body as sent (what a signature covers)."""
    method: str = "POST"


class ReplayServer:
    def __init__(self) -> None:
        self.queues: dict[str, deque[Reply]] = defaultdict(deque)
        self.requests: list[SeenRequest] = []
        self.released = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def script(self, path: str, *replies: Reply) -> None:
        self.queues[path].extend(replies)

    def bodies(self, path: str) -> list[Any]:
        return [r.body for r in self.requests if r.path == path]

    def start(self) -> ReplayServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.released.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def next_reply(self, request: SeenRequest) -> Reply:
        self.requests.append(request)
        queue = self.queues.get(request.path)
        if not queue:
            message = f"no scripted reply for {request.path}"
            return Reply(400, json.dumps({"type": "error", "error": {"type": "invalid_request_error",
                                                                      "message": message}}).encode(),
                         "application/json")
        return queue.popleft()


def _handler(server: ReplayServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_GET(self) -> None:
            self.do_POST()

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = server.next_reply(SeenRequest(self.path, headers, json.loads(raw) if raw else None, raw,
                                                  self.command))
            self.send_response(reply.status)
            self.send_header("content-type", reply.content_type)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            body = reply.body
            if reply.stall_before is not None:
                body = body[: body.index(reply.stall_before)]
            try:
                for start in range(0, len(body), PIECE):
                    self.wfile.write(body[start : start + PIECE])
                    self.wfile.flush()
                if reply.stall_before is not None:
                    server.released.wait(30)
            except OSError:
                return  # the client went away (a cancelled turn)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler
