"""Deterministic hashing: RFC 8785 canonical JSON (via `rfc8785`) then SHA-256, hex encoded.

Used for message hashes, tool input hashes, payload hashes and routing-policy versions. Any two
JSON-equal values hash the same whatever their key order or whitespace.
"""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785


def canonical_json(value: Any) -> bytes:
    """RFC 8785 bytes for a JSON value (dicts, lists, str, int, float, bool, None)."""
    return rfc8785.dumps(value)


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def json_hash(value: Any) -> str:
    """SHA-256 (hex) of the RFC 8785 canonical form of `value`."""
    return hashlib.sha256(rfc8785.dumps(value)).hexdigest()
