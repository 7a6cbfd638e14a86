"""The demo's local HTTP server: 127.0.0.1 on a free port, started and stopped by `metis demo`.

Serves POST /v1/messages (Anthropic) and POST /v1/chat/completions (OpenAI). Every request is
checked with request_checks first; a malformed one gets HTTP 400 with that provider's error body,
so the demo proves the translation instead of assuming it. It never touches the network beyond
the loopback interface.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from metis_core.cli.demo import anthropic_wire, openai_wire
from metis_core.cli.demo.request_checks import anthropic_problems, openai_problems
from metis_core.cli.demo.scripted_model import ScriptedModel

ANTHROPIC_PATH = "/v1/messages"
OPENAI_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class ServedRequest:
    path: str
    status: int
    problems: tuple[str, ...]


class DemoServer:
    def __init__(self, model: ScriptedModel | None = None) -> None:
        self.model = model or ScriptedModel()
        self.served: list[ServedRequest] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="metis-demo-server", daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> DemoServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> DemoServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def answer(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, str, bytes]:
        """(status, content type, body) for one request."""
        if path == ANTHROPIC_PATH:
            problems = anthropic_problems(headers, body, self.model.issued_tool_ids)
            reply = (lambda: self.model.anthropic_reply(body)) if not problems else None
            error = anthropic_wire.error_body("; ".join(problems)) if problems else b""
        elif path == OPENAI_PATH:
            problems = openai_problems(headers, body)
            reply = (lambda: self.model.openai_reply(body)) if not problems else None
            error = openai_wire.error_body("; ".join(problems), "messages") if problems else b""
        else:
            self._record(path, 404, ["no such endpoint"])
            return 404, "application/json", json.dumps({"error": f"no endpoint {path}"}).encode()
        if reply is None:
            self._record(path, 400, problems)
            return 400, "application/json", error
        self._record(path, 200, [])
        return 200, "text/event-stream", reply()

    def _record(self, path: str, status: int, problems: list[str]) -> None:
        with self._lock:
            self.served.append(ServedRequest(path, status, tuple(problems)))


def _handler_for(server: DemoServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = None
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, content_type, payload = server.answer(self.path.split("?")[0], headers, body)
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            return  # the demo prints its own account of each call

    return Handler
