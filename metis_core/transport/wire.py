"""The raw wire unit shared by the transport and the adapters: a whole response (stream chunks are framing.py's)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from metis_core.errors import MalformedResponseError


def request_id_from_headers(headers: Mapping[str, str]) -> str | None:
    for name in ("request-id", "x-request-id", "x-goog-request-id", "openai-request-id"):
        value = headers.get(name)
        if value:
            return value
    return None


@dataclass(slots=True)
class WireResponse:
    """A whole non-streaming response: status, raw body and headers."""

    status: int
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)

    def json(self, provider: str = "unknown") -> Any:
        """Parse the body; leading keep-alive whitespace is fine, anything else malformed is named."""
        try:
            return orjson.loads(self.body)
        except orjson.JSONDecodeError as exc:
            raise self.malformed(provider, f"response body is not JSON ({exc})") from exc

    def malformed(self, provider: str, problem: str) -> MalformedResponseError:
        """The error for a body that is not what the API promises: the problem and its first bytes."""
        excerpt = self.body[:200].decode("utf-8", "replace").strip()
        return MalformedResponseError(
            f"{problem}; first bytes: {excerpt!r}",
            provider=provider,
            status=self.status,
            request_id=request_id_from_headers(self.headers),
        )
