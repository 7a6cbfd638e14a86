"""The embedding hook against a local HTTP server speaking each wire format: OpenAI (and
compatible), Gemini, Ollama; a failing endpoint leaves fingerprints structural."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from metis_core.config import load_config
from metis_core.learning.patterns.embeddings import EmbeddingConfigError, HttpEmbedder
from metis_core.learning.patterns.fingerprint import fingerprint
from metis_core.learning.settings import LearningSettings

from .conftest import LearningHarness
from .test_pattern_routing import SUMMARY, session

KEY = "sk-embed-secret-never-shown"


@pytest.fixture(autouse=True)
def learning_backend() -> str:
    """One backend is enough here: the hook does not touch the database."""
    return "sqlite"


class EmbeddingServer:
    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, str], Any]] = []
        self.fail = False
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                server.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                vector = [float(len(json.dumps(body))), 1.0, 0.5]
                reply = ({"embedding": {"values": vector}} if ":embedContent" in self.path
                         else {"embeddings": [vector]} if self.path == "/api/embed"
                         else {"data": [{"embedding": vector, "index": 0}]})
                payload = json.dumps(reply).encode()
                self.send_response(500 if server.fail else 200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddingServer]:
    found = EmbeddingServer()
    yield found
    found.httpd.shutdown()
    found.httpd.server_close()


def test_each_wire_format_is_spoken_with_its_auth_and_vectors_are_cached(server: EmbeddingServer) -> None:
    server.seen.clear()
    openai = HttpEmbedder("openai", "text-embedding-3-small", server.url + "/v1", KEY)
    gemini = HttpEmbedder("gemini", "text-embedding-004", server.url, KEY)
    ollama = HttpEmbedder("ollama", "nomic-embed-text", server.url)
    for embed in (openai, gemini, ollama):
        assert embed("Summarize the notes") is not None
    assert openai("Summarize the notes") == openai("Summarize the notes")
    paths = [(path, headers.get("authorization"), headers.get("x-goog-api-key")) for path, headers, _ in server.seen]
    assert paths == [("/v1/embeddings", f"Bearer {KEY}", None),
                     ("/v1beta/models/text-embedding-004:embedContent", None, KEY),
                     ("/api/embed", None, None)]
    bodies = [body for _, _, body in server.seen]
    assert bodies[0] == {"model": "text-embedding-3-small", "input": "Summarize the notes"}
    assert bodies[1] == {"content": {"parts": [{"text": "Summarize the notes"}]}}
    assert bodies[2] == {"model": "nomic-embed-text", "input": "Summarize the notes"}


def test_a_failing_endpoint_leaves_the_fingerprint_structural_and_logs_no_key(
    server: EmbeddingServer, caplog: pytest.LogCaptureFixture,
) -> None:
    embed = HttpEmbedder("openai_compatible", "local-embed", server.url + "/v1", KEY)
    server.fail = True
    try:
        with caplog.at_level(logging.WARNING, "metis_core.learning"):
            fp = fingerprint("Summarize it", estimated_tokens=10, has_images=False, workspace="", tools_used=[],
                             embed=embed)
    finally:
        server.fail = False
    assert fp.kind == "structural" and fp.embedding is None
    assert "fingerprints stay structural" in caplog.text and KEY not in caplog.text
    assert fingerprint("Summarize it", estimated_tokens=10, has_images=False, workspace="", tools_used=[],
                       embed=embed).kind == "hybrid"
    with pytest.raises(EmbeddingConfigError, match="PROVIDER:MODEL"):
        HttpEmbedder.from_config("text-embedding-3-small", load_config(Path("/nonexistent"), environ={}))
    with pytest.raises(EmbeddingConfigError, match="serves no embeddings"):
        HttpEmbedder("anthropic", "x", server.url)


async def test_a_configured_embedding_model_makes_routing_and_recording_hybrid(
    tmp_path: Path, server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("METIS_OLLAMA_BASE_URL", server.url)
    (tmp_path / "ws").mkdir()
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "routing.yaml").write_text("default: anthropic:claude-sonnet-4-6\n")
    h = LearningHarness(tmp_path / "home", tmp_path / "ws",
                        LearningSettings(embedding_model="ollama:nomic-embed-text"))
    try:
        assert isinstance(h.loop.advisor.embed, HttpEmbedder) and h.loop.recorder.embed is h.loop.advisor.embed
        sid = await session(h, SUMMARY, good=True)
        (recorded,) = h.of_type("pattern.recorded", sid)
        assert recorded.payload["fingerprint_kind"] == "hybrid"
        (stored,) = h.loop.patterns.fingerprints()
        assert stored.fingerprint.embedding is not None and len(stored.fingerprint.embedding) == 3
    finally:
        h.runtime.close()


def test_an_embedding_model_without_its_key_leaves_fingerprints_structural(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (tmp_path / "ws").mkdir()
    (tmp_path / "home").mkdir()
    with caplog.at_level(logging.WARNING, "metis_core.learning"):
        h = LearningHarness(tmp_path / "home", tmp_path / "ws",
                            LearningSettings(embedding_model="openai:text-embedding-3-small"))
    try:
        assert h.loop.advisor.embed is None and "learning.embedding_model not used" in caplog.text
    finally:
        h.runtime.close()
