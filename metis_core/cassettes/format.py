"""The cassette file: one JSON document per line, a header line first, then one line per call.

Every line is JSON with sorted keys, so a re-recording diffs line by line. A body (and each stream
chunk) is kept as text when it is UTF-8, else as base64 (`*_b64`); stream chunks carry their
offset from the start of the response in milliseconds. Reading checks the header and every line
and names the line that is wrong; see docs/record-replay.md for the field reference.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from metis_core.errors import CassetteFormatError

FORMAT = "metis-cassette"
FORMAT_VERSION = 1


def encode_bytes(data: bytes, name: str = "body") -> dict[str, str]:
    """`{name: text}` for UTF-8 bytes, `{name_b64: base64}` for anything else."""
    try:
        return {name: data.decode("utf-8")}
    except UnicodeDecodeError:
        return {f"{name}_b64": base64.b64encode(data).decode("ascii")}


def decode_bytes(holder: dict[str, Any], name: str = "body") -> bytes | None:
    if name in holder and holder[name] is not None:
        return str(holder[name]).encode("utf-8")
    if f"{name}_b64" in holder:
        return base64.b64decode(holder[f"{name}_b64"], validate=True)
    return None


@dataclass
class RecordedResponse:
    """What came back: status and headers, then the whole body or the raw stream chunks with timing."""

    status: int
    headers: dict[str, str]
    body: bytes | None = None
    chunks: list[tuple[float, bytes]] | None = None
    """(milliseconds since the response headers arrived, raw bytes) as the network delivered them."""
    error: str | None = None
    """A transport failure: before any response (status 0) or after the chunks, mid-stream."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "headers": self.headers}
        if self.chunks is not None:
            out["chunks"] = [{"t_ms": round(t, 3), **encode_bytes(data, "data")} for t, data in self.chunks]
        elif self.body is not None:
            out.update(encode_bytes(self.body))
        if self.error is not None:
            out["error"] = self.error
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RecordedResponse:
        chunks = None
        if "chunks" in data:
            chunks = [(float(c["t_ms"]), decode_bytes(c, "data") or b"") for c in data["chunks"]]
        return cls(int(data["status"]), dict(data.get("headers", {})), decode_bytes(data), chunks, data.get("error"))

    @property
    def stream_body(self) -> bytes:
        return b"".join(data for _, data in self.chunks or []) if self.chunks is not None else self.body or b""


@dataclass
class CassetteEntry:
    """One call: its key, the canonical request, the exact (scrubbed) wire request, the wire response."""

    key: str
    canonical: dict[str, Any]
    method: str
    url: str
    request_headers: dict[str, str]
    request_body: bytes
    response: RecordedResponse
    stream: bool = False
    duration_ms: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key, "canonical": self.canonical, "stream": self.stream,
            "request": {"method": self.method, "url": self.url, "headers": self.request_headers,
                        **encode_bytes(self.request_body)},
            "response": self.response.to_json(), "duration_ms": round(self.duration_ms, 3),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CassetteEntry:
        request = data["request"]
        return cls(
            key=str(data["key"]), canonical=dict(data["canonical"]), method=str(request["method"]),
            url=str(request["url"]), request_headers=dict(request.get("headers", {})),
            request_body=decode_bytes(request) or b"", response=RecordedResponse.from_json(data["response"]),
            stream=bool(data.get("stream", False)), duration_ms=float(data.get("duration_ms", 0.0)),
        )


def header_line(note: str | None = None) -> bytes:
    from metis_core import __version__

    header: dict[str, Any] = {"format": FORMAT, "version": FORMAT_VERSION, "written_by": f"metis-core {__version__}"}
    if note:
        header["note"] = note
    return orjson.dumps(header, option=orjson.OPT_SORT_KEYS) + b"\n"


def entry_line(entry: CassetteEntry) -> bytes:
    return orjson.dumps(entry.to_json(), option=orjson.OPT_SORT_KEYS) + b"\n"


def read_cassette(path: Path) -> list[CassetteEntry]:
    """Every entry of a cassette file, in recording order; CassetteFormatError names a bad line."""
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        raise CassetteFormatError(
            f"no cassette at {path}; record one first (ModelClient(record=...), `--record`, or pytest --metis-record)"
        ) from None
    if not lines:
        raise CassetteFormatError(f"{path} is empty; record it again")
    entries: list[CassetteEntry] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = orjson.loads(line)
            if number == 1:
                if data.get("format") != FORMAT or data.get("version") != FORMAT_VERSION:
                    raise CassetteFormatError(
                        f"{path}:1 is not a {FORMAT} v{FORMAT_VERSION} header; record the cassette again"
                    )
                continue
            entries.append(CassetteEntry.from_json(data))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, binascii.Error) as error:
            raise CassetteFormatError(f"{path}:{number} is not a cassette entry ({error}); record it again") from None
    return entries
