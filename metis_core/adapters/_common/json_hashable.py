"""Whether tool arguments can be canonically hashed (RFC 8785), as every stored tool input must be.

Every parsed tool call is walked once here.
"""

from __future__ import annotations

import math
from typing import Any

MAX_TOOL_INPUT_DEPTH = 100
"""Tool arguments nested deeper are refused: no real tool takes them, and hashing, storing and
validating them recursively would run out of stack somewhere later, far from the cause."""


_SAFE_INTEGER = 2**53 - 1
"""RFC 8785 numbers are IEEE doubles: integers past this cannot be hashed exactly."""


def _plain_string(value: str) -> bool:
    if value.isascii():
        return True
    try:
        value.encode("utf-8")  # a lone surrogate cannot be canonicalized
    except UnicodeEncodeError:
        return False
    return True


def _walk(value: Any, limit: int) -> tuple[bool, bool]:
    """(nesting within `limit`, made only of plainly hashable JSON values), in one pass.

    Plainly hashable: exact dict/list/str/int/float/bool/None, string keys, integers within
    +-(2^53-1), finite floats, strings without lone surrogates. Anything else is not "plain"
    and the caller asks the canonicalizer itself. A string member (most arguments are strings)
    is judged where it is met; other members wait on the stack."""
    plain = True
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is dict:
            if depth > limit:
                return False, False
            for key, child in item.items():
                if type(key) is not str or not (key.isascii() or _plain_string(key)):
                    plain = False
                if type(child) is str:
                    if not (child.isascii() or _plain_string(child)):
                        plain = False
                else:
                    stack.append((child, depth + 1))
        elif kind is list:
            if depth > limit:
                return False, False
            for child in item:
                if type(child) is str:
                    if not (child.isascii() or _plain_string(child)):
                        plain = False
                else:
                    stack.append((child, depth + 1))
        elif kind is str:
            plain = plain and _plain_string(item)
        elif kind is int:
            plain = plain and -_SAFE_INTEGER <= item <= _SAFE_INTEGER
        elif kind is float:
            plain = plain and math.isfinite(item)
        elif item is not None and kind is not bool:
            if isinstance(item, dict | list):  # a subclass: still counts for nesting
                if depth > limit:
                    return False, False
                stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
            plain = False
    return True, plain


def hashable_json(value: Any) -> bool:
    """True if `value` can be canonically hashed (RFC 8785), as every stored tool input must be.

    One walk settles the usual case; anything unusual is canonicalized to find out (~5 µs)."""
    within, plain = _walk(value, MAX_TOOL_INPUT_DEPTH)
    if not within:
        return False
    if plain:
        return True
    from metis_core.hashing import canonical_json  # rfc8785 loads only for unusual arguments

    try:
        canonical_json(value)
    except (ValueError, TypeError, RecursionError):
        return False
    return True
