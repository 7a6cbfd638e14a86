"""A request body's JSON bytes, where the leading items of a list in it (a history's wire messages sent
before, the tool definitions) come from JSON kept with them (history_memo.py) instead of being encoded again.

The bytes are those `orjson.dumps(body)` gives; a list the body no longer holds (replaced by a dialect or
`extra`) is encoded afresh. It relies on a built body being read-only, as the memo already does.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

_Fragment: Final = orjson.Fragment


class EncodedItems:
    """The JSON of the first `count` items of `items` (a list a body holds under `key`), comma-separated,
    without brackets."""

    __slots__ = ("count", "items", "json", "key")

    def __init__(self, key: str, items: list[Any], count: int, json: bytes) -> None:
        self.key = key
        self.items = items
        self.count = count
        self.json = json


def items_json(items: list[Any]) -> bytes:
    """The JSON of `items` comma-separated, without brackets (b"" for none)."""
    return orjson.dumps(items)[1:-1]


def joined(head: bytes, tail: bytes) -> bytes:
    """Two runs of comma-separated JSON items as one."""
    if head and tail:
        return head + b"," + tail
    return head or tail


def encode_body(body: dict[str, Any], known: tuple[EncodedItems, ...]) -> bytes:
    """`orjson.dumps(body)`, each list that `known` covers written from its kept JSON plus its other items."""
    parts: dict[str, Any] | None = None
    for encoded in known:
        items = encoded.items
        if body.get(encoded.key) is not items or len(items) < encoded.count:
            continue  # not the list the JSON was kept for: the body encodes it
        rest = items_json(items[encoded.count:]) if len(items) > encoded.count else b""
        if parts is None:
            parts = dict(body)
        parts[encoded.key] = _Fragment(b"[" + joined(encoded.json, rest) + b"]")
    return orjson.dumps(body if parts is None else parts)
