"""The local provider server: answers on 127.0.0.1 in each provider's exact wire format.

Routes by path the way the real APIs do (`/v1/messages`, `/chat/completions`, `/responses`,
`:generateContent` / `:streamGenerateContent`, `/api/chat`) and by the request's `stream` flag.
Every response is prebuilt bytes, so serving costs next to nothing; keep-alive HTTP/1.1 on a
raw asyncio protocol, streams as one HTTP chunk per event. It checks only that the request body
is JSON with a non-empty conversation; it never calls anything outside this machine.
Run in a separate process (`python -m bench.server`) for measuring, or in a thread for tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench import wire_bodies, wire_streams
from bench.scenarios import OPENROUTER_MODEL, call_answer, stream_script

HOST = "127.0.0.1"
REPO_ROOT = Path(__file__).resolve().parent.parent


def _json_response(body: bytes, status: str = "200 OK") -> bytes:
    head = f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
    return (head + "request-id: req_bench\r\n\r\n").encode() + body


def _stream_response(events: list[bytes], content_type: str) -> bytes:
    head = (
        f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncache-control: no-cache\r\n"
        "transfer-encoding: chunked\r\nrequest-id: req_bench\r\n\r\n"
    ).encode()
    parts = [head]
    for event in events:
        parts.append(b"%x\r\n%s\r\n" % (len(event), event))
    parts.append(b"0\r\n\r\n")
    return b"".join(parts)


SSE = "text/event-stream; charset=utf-8"
BAD = "400 Bad Request"


class Responses:
    """Every prebuilt response, keyed by (api, streaming)."""

    def __init__(self) -> None:
        answer, script = call_answer(), stream_script()
        self.table: dict[tuple[str, bool], bytes] = {
            ("anthropic", False): _json_response(wire_bodies.anthropic_message(answer)),
            ("anthropic", True): _stream_response(wire_streams.anthropic_stream(script), SSE),
            ("openai", False): _json_response(wire_bodies.openai_chat_completion(answer)),
            ("openai", True): _stream_response(wire_streams.openai_chat_stream(script), SSE),
            ("openrouter", False): _json_response(wire_bodies.openai_chat_completion(answer, OPENROUTER_MODEL)),
            ("openrouter", True): _stream_response(
                wire_streams.openai_chat_stream(script, OPENROUTER_MODEL, comment=True), SSE
            ),
            ("openai_responses", False): _json_response(wire_bodies.openai_response(answer)),
            ("openai_responses", True): _stream_response(wire_streams.openai_responses_stream(script), SSE),
            ("gemini", False): _json_response(wire_bodies.gemini_response(answer)),
            ("gemini", True): _stream_response(wire_streams.gemini_stream(script), SSE),
            ("ollama", False): _json_response(wire_bodies.ollama_chat(answer)),
            ("ollama", True): _stream_response(wire_streams.ollama_stream(script), "application/x-ndjson"),
        }

    @staticmethod
    def api_for(path: str) -> tuple[str, bool | None] | None:
        """(api, streaming-by-path) for a request path; None for an unknown path."""
        path = path.split("?", 1)[0]
        if path.endswith("/v1/messages"):
            return "anthropic", None
        if path.endswith("/chat/completions"):
            return ("openrouter" if path.startswith("/api/v1") else "openai"), None
        if path.endswith("/responses"):
            return "openai_responses", None
        if path.endswith(":streamGenerateContent"):
            return "gemini", True
        if path.endswith(":generateContent"):
            return "gemini", False
        if path == "/api/chat":
            return "ollama", None
        return None

    def answer(self, method: str, path: str, body: bytes) -> bytes:
        found = self.api_for(path)
        if method != "POST" or found is None:
            return _json_response(b'{"error":{"type":"not_found","message":"no such route"}}', "404 Not Found")
        api, streaming = found
        try:
            request = json.loads(body)
        except ValueError:
            return _json_response(b'{"error":{"type":"invalid_request","message":"body is not JSON"}}', BAD)
        if not isinstance(request, dict):
            return _json_response(b'{"error":{"type":"invalid_request","message":"body is not an object"}}', BAD)
        if not (request.get("messages") or request.get("contents") or request.get("input")):
            return _json_response(b'{"error":{"type":"invalid_request","message":"no messages"}}', BAD)
        if streaming is None:
            streaming = request.get("stream", api == "ollama") is True
        return self.table[(api, streaming)]


class _Connection(asyncio.Protocol):
    def __init__(self, responses: Responses) -> None:
        self._responses = responses
        self._buffer = bytearray()
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while self._transport is not None and self._handle_one():
            pass

    def _handle_one(self) -> bool:
        buffer = self._buffer
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            return False
        lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        start = end + 4
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body, consumed = _dechunk(buffer, start)
            if body is None:
                return False
        else:
            length = int(headers.get("content-length", "0"))
            if len(buffer) < start + length:
                return False
            body, consumed = bytes(buffer[start : start + length]), start + length
        del buffer[:consumed]
        assert self._transport is not None
        self._transport.write(self._responses.answer(method, target, body))
        if headers.get("connection", "").lower() == "close":
            self._transport.close()
            self._transport = None
        return True


def _dechunk(buffer: bytearray, start: int) -> tuple[bytes | None, int]:
    """A chunked request body and where it ends, or (None, 0) while it is incomplete."""
    body = bytearray()
    pos = start
    while True:
        eol = buffer.find(b"\r\n", pos)
        if eol < 0:
            return None, 0
        size = int(bytes(buffer[pos:eol]).split(b";")[0], 16)
        if len(buffer) < eol + 2 + size + 2:
            return None, 0
        body += buffer[eol + 2 : eol + 2 + size]
        pos = eol + 2 + size + 2
        if size == 0:
            return bytes(body), pos


async def _serve(port: int, ready: threading.Event | None, bound: list[int], stop: asyncio.Event) -> None:
    responses = Responses()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Connection(responses), HOST, port, backlog=256)
    bound.append(server.sockets[0].getsockname()[1])
    if ready is not None:
        ready.set()
    else:
        print(f"READY {bound[0]}", flush=True)
    async with server:
        await stop.wait()


@contextlib.contextmanager
def serve_in_thread() -> Iterator[str]:
    """The server on a free port in a daemon thread (tests); yields its base URL."""
    ready = threading.Event()
    bound: list[int] = []
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    thread = threading.Thread(target=loop.run_until_complete, args=(_serve(0, ready, bound, stop),), daemon=True)
    thread.start()
    if not ready.wait(10):
        raise RuntimeError("the local provider server did not start within 10 s")
    try:
        yield f"http://{HOST}:{bound[0]}"
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(5)
        loop.close()


@contextlib.contextmanager
def serve_in_process(python: str = sys.executable) -> Iterator[str]:
    """The server in its own process, so it never competes for the measured process's GIL."""
    process = subprocess.Popen(
        [python, "-m", "bench.server"], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True, bufsize=1
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        if not line.startswith("READY "):
            raise RuntimeError(f"the local provider server failed to start (said {line!r})")
        yield f"http://{HOST}:{line.split()[1]}"
    finally:
        stop_server_process(process, grace_seconds=5)


def stop_server_process(process: subprocess.Popen[Any], grace_seconds: float) -> None:
    """Asks a server process to exit (SIGTERM); kills it if it has not within `grace_seconds`."""
    process.terminate()
    try:
        process.wait(grace_seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def main() -> None:
    stop_forever = asyncio.Event()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(0, None, [], stop_forever))


if __name__ == "__main__":
    main()
