"""metis's own async client (aiohttp) against real HTTP servers on 127.0.0.1: what the httpx one did.

Each server is a raw asyncio server writing canned HTTP/1.1 bytes, so a test can end a body
early, stay silent, redirect or set a cookie exactly as a provider or proxy might.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest

from metis_core.errors import NetworkError, TruncatedStreamError
from metis_core.transport.http import AsyncByteStream, HttpTransport
from metis_core.transport.owned_async import client_timeout

SECRET = "sk-ant-SECRET-never-shown"
Reply = Callable[[bytes, asyncio.StreamWriter], Awaitable[None]]


async def _read_request(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head + await reader.readexactly(length)


@asynccontextmanager
async def serving(reply: Reply) -> AsyncIterator[tuple[str, list[bytes]]]:
    """A keep-alive server answering every request with `reply`; yields its URL and the requests seen."""
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while (request := await _read_request(reader)) is not None:
                seen.append(request)
                await reply(request, writer)
                if writer.is_closing():
                    return
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        server.close()


def answer(status: str, body: bytes, *extra: str) -> Reply:
    async def reply(request: bytes, writer: asyncio.StreamWriter) -> None:
        head = [f"HTTP/1.1 {status}", "content-type: application/json", f"content-length: {len(body)}", *extra]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await writer.drain()

    return reply


def chunked(chunks: list[bytes], *, finish: bool, gap: float = 0.0) -> Reply:
    """An event stream sent as HTTP chunks; without `finish` the connection drops before the last chunk."""

    async def reply(request: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        for chunk in chunks:
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            await writer.drain()
            await asyncio.sleep(gap)
        if finish:
            writer.write(b"0\r\n\r\n")
        else:
            writer.close()
        await writer.drain()

    return reply


async def test_send_posts_the_exact_body_and_headers_and_returns_status_body_headers() -> None:
    transport = HttpTransport()
    async with serving(answer("201 Created", b'{"ok":true}', "request-id: req_1")) as (url, seen):
        headers = {"content-type": "application/json", "x-api-key": SECRET}
        response = await transport.asend("POST", url + "/v1/messages", b'{"a":1}', headers, provider="anthropic")
    await transport.aclose()
    assert (response.status, response.body, response.headers["Request-Id"]) == (201, b'{"ok":true}', "req_1")
    request = seen[0]
    assert request.startswith(b"POST /v1/messages HTTP/1.1\r\n") and request.endswith(b'\r\n\r\n{"a":1}')
    assert f"x-api-key: {SECRET}".encode().lower() in request.lower()


async def test_connections_are_kept_alive_and_reused() -> None:
    transport = HttpTransport()
    peers: set[object] = set()

    async def reply(request: bytes, writer: asyncio.StreamWriter) -> None:
        peers.add(writer.get_extra_info("peername"))
        await answer("200 OK", b"{}")(request, writer)

    async with serving(reply) as (url, seen):
        for _ in range(5):
            assert (await transport.asend("POST", url, b"{}", {}, provider="openai")).status == 200
    await transport.aclose()
    assert len(seen) == 5 and len(peers) == 1


async def test_a_refused_connection_is_a_network_error_without_the_key_or_the_request() -> None:
    async with serving(answer("200 OK", b"{}")) as (url, _):
        pass  # the port is free again: nothing listens
    transport = HttpTransport()
    with pytest.raises(NetworkError) as raised:
        await transport.asend("POST", url, b"{}", {"x-api-key": SECRET}, provider="anthropic")
    await transport.aclose()
    error = raised.value
    assert "could not connect" in str(error) and error.retryable and error.provider == "anthropic"
    assert SECRET not in str(error) and SECRET not in repr(error)
    assert error.__cause__ is None and error.__context__ is None


async def test_a_silent_server_times_out_with_the_timeout_given() -> None:
    async def silent(request: bytes, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(30)

    transport = HttpTransport(timeout=0.2)
    async with serving(silent) as (url, _):
        with pytest.raises(NetworkError, match="timed out"):
            await transport.asend("POST", url, b"{}", {}, provider="openai")
        with pytest.raises(NetworkError, match="timed out"):
            async with transport.astream("POST", url, b"{}", {}, timeout=httpx.Timeout(0.2), provider="openai"):
                pass
    await transport.aclose()


async def test_stream_yields_chunks_as_they_arrive_and_a_drop_mid_body_is_truncated() -> None:
    transport = HttpTransport()
    events = [b"event: a\ndata: 1\n\n", b"event: b\ndata: 2\n\n"]
    async with serving(chunked(events, finish=True)) as (url, _), \
            transport.astream("POST", url, b"{}", {}, provider="anthropic") as wire:
        assert isinstance(wire, AsyncByteStream) and wire.status == 200
        assert wire.headers["Content-Type"] == "text/event-stream"
        assert b"".join([chunk async for chunk in wire.aiter_raw()]) == b"".join(events)
    got: list[bytes] = []
    async with serving(chunked(events, finish=False, gap=0.05)) as (url, _), \
            transport.astream("POST", url, b"{}", {}, provider="anthropic") as wire:
        with pytest.raises(TruncatedStreamError) as raised:
            async for chunk in wire.aiter_raw():
                got.append(chunk)
    await transport.aclose()
    assert b"".join(got) == b"".join(events)  # every chunk that arrived was handed over first
    assert raised.value.__context__ is None


async def test_an_error_answer_on_a_stream_is_read_whole() -> None:
    transport = HttpTransport()
    async with serving(answer("429 Too Many Requests", b'{"error":"slow down"}', "retry-after: 2")) as (url, _), \
            transport.astream("POST", url, b"{}", {}, provider="openai") as wire:
        response = await wire.read()
    await transport.aclose()
    assert (response.status, response.body, response.headers["retry-after"]) == (429, b'{"error":"slow down"}', "2")


async def test_a_stream_left_early_does_not_poison_the_pool() -> None:
    transport = HttpTransport()
    async with serving(chunked([b"data: 1\n\n", b"data: 2\n\n"], finish=True, gap=0.05)) as (url, seen):
        async with transport.astream("POST", url, b"{}", {}, provider="openai") as wire:
            async for _ in wire.aiter_raw():
                break  # the caller stops after the first chunk (a client that went away)
        response = await transport.asend("POST", url, b"{}", {}, provider="openai")  # a fresh connection
        assert response.status == 200
    await transport.aclose()
    assert len(seen) == 2


async def test_redirects_are_not_followed_and_cookies_are_kept() -> None:
    transport = HttpTransport()
    async with serving(answer("307 Temporary Redirect", b"", "location: /elsewhere")) as (url, seen):
        response = await transport.asend("POST", url + "/v1/x", b"{}", {}, provider="openai")
    assert response.status == 307 and len(seen) == 1
    async with serving(answer("200 OK", b"{}", "set-cookie: affinity=node-7; Path=/")) as (url, seen):
        for _ in range(2):
            await transport.asend("POST", url + "/v1/x", b"{}", {}, provider="openai")
    await transport.aclose()
    assert b"cookie: affinity=node-7" not in seen[0].lower() and b"cookie: affinity=node-7" in seen[1].lower()
    assert b"content-type" not in seen[0].lower()  # none given, none added (httpx adds none either)


async def test_a_proxy_from_the_environment_is_used_as_httpx_would(monkeypatch: pytest.MonkeyPatch) -> None:
    async with serving(answer("200 OK", b'{"via":"proxy"}')) as (proxy, seen):
        monkeypatch.setenv("HTTP_PROXY", proxy)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        transport = HttpTransport()
        response = await transport.asend("POST", "http://api.provider.test/v1/messages", b"{}", {}, provider="x")
        await transport.aclose()
    assert response.body == b'{"via":"proxy"}'
    assert seen[0].startswith(b"POST http://api.provider.test/v1/messages HTTP/1.1")


async def test_no_proxy_hosts_are_reached_directly(monkeypatch: pytest.MonkeyPatch) -> None:
    async with serving(answer("200 OK", b'{"via":"proxy"}')) as (proxy, through_proxy), \
            serving(answer("200 OK", b'{"via":"direct"}')) as (server, direct):
        monkeypatch.setenv("HTTP_PROXY", proxy)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        transport = HttpTransport()
        response = await transport.asend("POST", server + "/v1/messages", b"{}", {}, provider="x")
        await transport.aclose()
    assert response.body == b'{"via":"direct"}' and through_proxy == [] and len(direct) == 1


async def test_cancelling_a_call_propagates_and_closes_its_connection() -> None:
    closed = asyncio.Event()

    async def silent(request: bytes, writer: asyncio.StreamWriter) -> None:
        try:
            await asyncio.sleep(30)
        finally:
            closed.set()

    transport = HttpTransport()
    async with serving(silent) as (url, _):
        call = asyncio.create_task(transport.asend("POST", url, b"{}", {}, provider="openai"))
        await asyncio.sleep(0.1)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
    await transport.aclose()


def test_each_event_loop_gets_its_own_session_and_closed_loops_are_shut() -> None:
    transport = HttpTransport()

    async def call_once() -> int:
        async with serving(answer("200 OK", b"{}")) as (url, _):
            return (await transport.asend("POST", url, b"{}", {}, provider="openai")).status

    assert asyncio.run(call_once()) == 200
    assert asyncio.run(call_once()) == 200  # a second loop: the first loop's session is not reused
    owned = transport.owned_async
    assert len(owned._sessions) == 1
    transport.close()
    assert owned._sessions == {}


def test_httpx_timeouts_map_onto_aiohttp_ones() -> None:
    mapped = client_timeout(httpx.Timeout(connect=10.0, read=600.0, write=60.0, pool=5.0))
    assert (mapped.total, mapped.connect, mapped.sock_connect, mapped.sock_read) == (None, 15.0, 10.0, 600.0)
    assert client_timeout(httpx.Timeout(None)).connect is None
    assert client_timeout(3.0).sock_read == 3.0


def test_aiohttp_is_not_imported_until_the_first_async_call() -> None:
    import subprocess
    import sys

    code = ("import sys, metis_core\nfrom metis_core import ModelClient\nModelClient()\n"
            "print('aiohttp' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert result.stdout.strip() == "False"


async def test_a_burst_is_handed_over_in_pieces_so_the_first_event_can_go_on_early() -> None:
    from metis_core.transport.owned_async import CHUNK_BYTES

    event = b"event: content_block_delta\ndata: " + b"x" * 200 + b"\n\n"
    burst = [event] * 1000  # ~230 KB written at once, as a finished upstream stream replays
    transport = HttpTransport()
    async with serving(chunked(burst, finish=True)) as (url, _), \
            transport.astream("POST", url, b"{}", {}, provider="anthropic") as wire:
        sizes = [len(chunk) async for chunk in wire.aiter_raw()]
    await transport.aclose()
    assert sum(sizes) == len(event) * 1000 and max(sizes) <= CHUNK_BYTES and len(sizes) > 10


def _self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by itself, and its key (PEM files)."""
    import datetime

    cryptography = pytest.importorskip("cryptography", reason="needs cryptography (the dev extra brings it)")
    del cryptography
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "metis test server")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "server.pem", directory / "server.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


async def test_https_trusts_the_same_certificates_as_httpx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SSL_CERT_FILE decides, as it does for httpx: a server signed by it is reached, without it refused."""
    import ssl

    cert_file, key_file = _self_signed(tmp_path)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert_file, key_file)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if await _read_request(reader) is not None:
            await answer("200 OK", b'{"tls":true}')(b"", writer)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=server_context)
    url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/messages"
    try:
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        monkeypatch.delenv("SSL_CERT_DIR", raising=False)
        untrusting = HttpTransport()
        with pytest.raises(NetworkError, match="certificate is not trusted") as refused:
            await untrusting.asend("POST", url, b"{}", {"x-api-key": SECRET}, provider="anthropic")
        assert SECRET not in str(refused.value)
        await untrusting.aclose()
        monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
        trusting = HttpTransport()
        response = await trusting.asend("POST", url, b"{}", {}, provider="anthropic")
        await trusting.aclose()
    finally:
        server.close()
    assert response.body == b'{"tls":true}'


async def test_a_proxy_it_cannot_use_is_a_config_error_that_keeps_its_credentials(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from metis_core.errors import ConfigError

    monkeypatch.setenv("ALL_PROXY", "socks5://user:hunter2@127.0.0.1:1080")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    transport = HttpTransport()
    with pytest.raises(ConfigError, match="socks5 proxy") as raised:
        await transport.asend("POST", "http://api.provider.test/v1/messages", b"{}", {}, provider="x")
    await transport.aclose()
    assert "hunter2" not in str(raised.value) and "NO_PROXY" in str(raised.value)


def test_a_close_from_another_thread_waits_for_a_session_being_made_and_closes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    owned = HttpTransport().owned_async
    inside, release = threading.Event(), threading.Event()
    make_connector = aiohttp.TCPConnector

    def slow_connector(*args: Any, **kwargs: Any) -> aiohttp.TCPConnector:
        inside.set()  # a loop on one thread is making its session ...
        release.wait(5)
        return make_connector(*args, **kwargs)

    monkeypatch.setattr(aiohttp, "TCPConnector", slow_connector)
    closer = threading.Thread(target=owned.close)  # ... while another thread closes the client
    made: list[aiohttp.ClientSession] = []

    async def make_then_wait_for_the_close() -> None:
        made.append(owned._session())
        await asyncio.to_thread(closer.join, 5)
        for _ in range(100):  # the close is scheduled on this loop: let it run
            if made[0].closed:
                break
            await asyncio.sleep(0)

    maker = threading.Thread(target=asyncio.run, args=(make_then_wait_for_the_close(),))
    maker.start()
    assert inside.wait(5)
    closer.start()
    closer.join(0.2)
    waited = closer.is_alive()
    release.set()
    maker.join(5)
    closer.join(5)
    assert waited, "close() went ahead while the session table was being changed"
    assert owned._sessions == {} and made[0].closed
