"""Tool inputs that reach a stored message must be canonically hashable: the one-walk test agrees
with RFC 8785 canonicalization on every kind of value, usual and odd."""

from __future__ import annotations

import pytest

from metis_core.adapters._common.json_hashable import MAX_TOOL_INPUT_DEPTH, hashable_json
from metis_core.hashing import canonical_json


def _canonical_verdict(value: object) -> bool:
    """What the hashability test answered before it walked values itself: RFC 8785 decides."""
    depth, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            depth = max(depth, level)
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    if depth > MAX_TOOL_INPUT_DEPTH:
        return False
    try:
        canonical_json(value)
    except (ValueError, TypeError, RecursionError):
        return False
    return True


class _Mapping(dict[str, object]):
    pass


def _nested(levels: int) -> object:
    value: object = "leaf"
    for _ in range(levels - 1):
        value = {"k": value}
    return value


@pytest.mark.parametrize("value", [
    {"path": "a.py", "n": 3, "x": 1.5, "ok": True, "none": None, "list": [1, "two", [3]]},
    {"big": 2**53 - 1}, {"big": 2**53}, {"small": -(2**53) + 1}, {"small": -(2**53)},
    {"f": float("nan")}, {"f": float("inf")}, {"f": -0.0},
    {"s": "caf\u00e9 \u2603"}, {"s": "lone \ud800 surrogate"}, {"\udc00": 1},
    {1: "int key"}, {"t": (1, 2)}, _Mapping(a=1), {"m": _Mapping(b=[1, {"c": 2}])},
    {"o": object()}, {"b": b"bytes"},
    _nested(MAX_TOOL_INPUT_DEPTH), _nested(MAX_TOOL_INPUT_DEPTH + 1),
    {"wide": [[[[]]]] * 50},
])
def test_the_hashability_walk_agrees_with_canonicalization(value: object) -> None:
    assert hashable_json(value) is _canonical_verdict(value)
