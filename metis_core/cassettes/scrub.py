"""Scrubbing secrets out of everything a cassette writes: headers, URLs, bodies, stream chunks.

Auth headers and key-like query parameters are replaced by `<scrubbed>`; the client's own keys
and anything shaped like a provider key are replaced wherever they appear; JSON fields named in
`fields` are blanked in place (text-level, so the rest of a body keeps its exact bytes). It does
not decide what a secret is beyond these rules: add a field or header name when yours differs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson

SCRUBBED = "<scrubbed>"

SECRET_HEADERS = frozenset({
    "authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie", "set-cookie",
    "openai-organization", "openai-project", "x-stainless-api-key",
})  # fmt: skip
SECRET_HEADER_WORDS = ("key", "token", "secret", "auth", "password")
SECRET_QUERY = frozenset({"key", "api_key", "apikey", "api-key", "token", "access_token", "sig", "signature"})
DEFAULT_FIELDS = ("api_key", "apiKey", "access_token", "client_secret")

KEY_SHAPES = re.compile(
    r"(sk-ant-[A-Za-z0-9_\-]{8,}|sk-or-v1-[A-Za-z0-9]{8,}|sk-proj-[A-Za-z0-9_\-]{8,}|sk-[A-Za-z0-9]{20,}"
    r"|AIza[0-9A-Za-z_\-]{30,}|mk_[A-Za-z0-9_\-]{16,}|Bearer\s+[A-Za-z0-9._\-]{12,})"
)
"""Anthropic, OpenRouter, OpenAI, Google and metis gateway key shapes, and any bearer token."""


class Scrubber:
    """Replaces secrets in what a cassette is about to write; `known` are literal values to remove."""

    def __init__(self, *, known: Iterable[str] = (), fields: Iterable[str] = DEFAULT_FIELDS,
                 headers: Iterable[str] = ()) -> None:
        self.known = sorted({k for k in known if k and len(k) >= 4}, key=len, reverse=True)
        self.fields = tuple(dict.fromkeys(fields))
        self.headers = SECRET_HEADERS | {h.lower() for h in headers}
        self._field_patterns = [
            re.compile(r'("' + re.escape(name) + r'"\s*:\s*)"(?:[^"\\]|\\.)*"') for name in self.fields
        ]

    def header_is_secret(self, name: str) -> bool:
        lowered = name.lower()
        return lowered in self.headers or any(word in lowered for word in SECRET_HEADER_WORDS)

    def headers_of(self, headers: Mapping[str, str]) -> dict[str, str]:
        """Lower-cased names, secret values replaced; sorted for stable diffs."""
        return {k.lower(): SCRUBBED if self.header_is_secret(k) else self.text(v) for k, v in sorted(headers.items())}

    def url(self, url: str) -> str:
        parts = urlsplit(url)
        if not parts.query:
            return self.text(url)
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        query = [(k, SCRUBBED if k.lower() in SECRET_QUERY else v) for k, v in pairs]
        return self.text(urlunsplit(parts._replace(query=urlencode(query, safe="<>"))))

    def text(self, value: str) -> str:
        """Known secrets and key-shaped strings replaced; configured JSON fields blanked."""
        for secret in self.known:
            if secret in value:
                value = value.replace(secret, SCRUBBED)
        value = KEY_SHAPES.sub(SCRUBBED, value)
        for pattern in self._field_patterns:
            value = pattern.sub(r'\1"' + SCRUBBED + '"', value)
        return value

    def json(self, value: dict[str, Any]) -> dict[str, Any]:
        """A JSON object with the same rules applied to its serialized text (for the canonical request)."""
        text = orjson.dumps(value).decode("utf-8")
        cleaned = self.text(text)
        return value if cleaned == text else dict(orjson.loads(cleaned))

    def body(self, data: bytes) -> bytes:
        """A body with secrets removed; bytes that are not UTF-8 are scanned as Latin-1 and kept as they were."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return data
        cleaned = self.text(text)
        return data if cleaned == text else cleaned.encode("utf-8")


    def chunks(self, chunks: list[tuple[float, bytes]]) -> list[tuple[float, bytes]]:
        """Stream chunks with secrets removed, including one the network split across chunks.

        Each chunk is scrubbed alone, then the whole stream: where the two differ a secret crossed a
        boundary, and the chunks from the first to the last one that differs become one chunk (at
        the first one's time) holding the scrubbed text of that stretch. Other chunks and their
        timing stay as recorded."""
        alone = [(at, self.body(data)) for at, data in chunks]
        joined = b"".join(data for _, data in chunks)
        whole = self.body(joined)
        pieced = b"".join(data for _, data in alone)
        if whole == pieced:
            return alone
        prefix = _common_prefix(whole, pieced)
        suffix = _common_prefix(whole[prefix:][::-1], pieced[prefix:][::-1])
        start = end = offset = 0
        first = last = -1
        for index, (_, data) in enumerate(alone):
            if first < 0 and offset + len(data) > prefix:
                first, start = index, offset
            offset += len(data)
            if offset >= len(pieced) - suffix and last < 0 and first >= 0:
                last, end = index, offset
        merged = whole[start: len(whole) - (len(pieced) - end)]
        return [*alone[:first], (alone[first][0], merged), *alone[last + 1:]]


def _common_prefix(left: bytes, right: bytes) -> int:
    size = min(len(left), len(right))
    index = 0
    while index < size and left[index] == right[index]:
        index += 1
    return index


def find_secrets(text: str, known: Iterable[str] = ()) -> list[str]:
    """Key-shaped strings (and any of `known`) in `text`: what the cassette scan test looks for."""
    found = [m.group(0) for m in KEY_SHAPES.finditer(text)]
    found.extend(k for k in known if k and k in text)
    return found
