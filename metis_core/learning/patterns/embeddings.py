"""The embedding hook wired to a configured embedding model, for hybrid fingerprints.

`learning.embedding_model: PROVIDER:MODEL` names it; the provider's kind picks the wire format —
OpenAI and any OpenAI-compatible endpoint (`POST {base}/embeddings`), Gemini
(`POST {base}/v1beta/models/MODEL:embedContent`), Ollama (`POST {base}/api/embed`) — and its
base URL and key come from the same configuration as its chat models. A call that fails is
logged once and the turn keeps a structural fingerprint: embedding never breaks routing.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import httpx

from metis_core.config import MetisConfig
from metis_core.errors import LearningError
from metis_core.secret_scrub import remember_secret

log = logging.getLogger("metis_core.learning")
WIRE_FORMATS = {"openai": "openai", "openai_responses": "openai", "openai_compatible": "openai",
                "openrouter": "openai", "gemini": "gemini", "ollama": "ollama"}
CACHE_SIZE = 256
"""Texts embedded lately: routing and the recorder fingerprint the same message, once each."""
MAX_CHARS = 8_000


class EmbeddingConfigError(LearningError):
    """learning.embedding_model names no provider that serves embeddings."""


class HttpEmbedder:
    def __init__(self, provider_kind: str, model: str, base_url: str, api_key: str | None = None,
                 http: httpx.Client | None = None, timeout: float = 10.0) -> None:
        wire = WIRE_FORMATS.get(provider_kind)
        if wire is None:
            raise EmbeddingConfigError(f"learning.embedding_model: {provider_kind} serves no embeddings metis can "
                                       f"read; use an openai, gemini, ollama or openai_compatible provider")
        self.wire, self.model, self.base_url = wire, model, base_url.rstrip("/")
        self._key = api_key
        remember_secret(api_key)
        self._http = http or httpx.Client(timeout=timeout)
        self._cache: OrderedDict[str, tuple[float, ...]] = OrderedDict()
        self._lock = threading.Lock()
        self._warned = False

    @classmethod
    def from_config(cls, spec: str, config: MetisConfig, http: httpx.Client | None = None) -> HttpEmbedder:
        provider, sep, model = spec.partition(":")
        if not sep or not model:
            raise EmbeddingConfigError(f"learning.embedding_model {spec!r} must be PROVIDER:MODEL, e.g. "
                                       "openai:text-embedding-3-small")
        key = config.require_api_key(provider)
        return cls(config.provider_kind(provider), model, config.base_url(provider),
                   key.get_secret_value() if key is not None else None, http)

    def __call__(self, text: str) -> Sequence[float] | None:
        """The text's vector, or None when the endpoint failed (the fingerprint stays structural)."""
        text = text[:MAX_CHARS]
        with self._lock:
            if text in self._cache:
                self._cache.move_to_end(text)
                return self._cache[text]
        try:
            vector = self._embed(text)
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as error:
            if not self._warned:
                self._warned = True
                log.warning("embedding with %s failed (%s); fingerprints stay structural meanwhile", self.model,
                            type(error).__name__)
            return None
        with self._lock:
            self._cache[text] = vector
            if len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return vector

    def close(self) -> None:
        self._http.close()

    def _embed(self, text: str) -> tuple[float, ...]:
        headers: dict[str, str] = {}
        body: dict[str, Any]
        if self.wire == "gemini":
            url = f"{self.base_url}/v1beta/models/{quote(self.model, safe='-._')}:embedContent"
            body = {"content": {"parts": [{"text": text}]}}
            if self._key:
                headers["x-goog-api-key"] = self._key
        elif self.wire == "ollama":
            url, body = f"{self.base_url}/api/embed", {"model": self.model, "input": text}
        else:
            url, body = f"{self.base_url}/embeddings", {"model": self.model, "input": text}
        if self._key and self.wire != "gemini":
            headers["authorization"] = f"Bearer {self._key}"
        response = self._http.post(url, json=body, headers=headers)
        response.raise_for_status()
        data = response.json()
        values = (data["embedding"]["values"] if self.wire == "gemini" else data["embeddings"][0]
                  if self.wire == "ollama" else data["data"][0]["embedding"])
        vector = tuple(float(x) for x in values)
        if not vector:
            raise ValueError("empty embedding")
        return vector
