"""Lenient recovery of a JSON answer: markdown fences, surrounding prose, the last balanced value, damage.

Tried in order, cheapest first, only after the strict parse failed: a fenced block (```json ... ```),
the last balanced {...} / [...] (a string-aware brace walk), then the `json-repair` library on what is
left (trailing commas, single quotes, unquoted keys, a cut-off tail). A `Recovery` records the path
taken and the byte offset where the recovered JSON starts — never any of the content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

import orjson

RecoveryPath = Literal["markdown-fence", "brace-walker", "jsonrepair"]
"""The OpenWOP envelope.recovery.applied paths this module can take (RFC 0032 §B.6)."""

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5)?[ \t]*\r?\n?(.*?)```", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Recovery:
    """How a damaged answer was recovered: the path and the byte offset where the JSON began."""

    path: RecoveryPath
    byte_offset: int | None


class Unrecoverable(Exception):
    """Internal: nothing JSON-like could be recovered."""


def recover_json(text: str) -> tuple[Any, Recovery]:
    """The JSON value inside `text` and how it was found; Unrecoverable if there is none.

    Call only after a strict parse failed: a clean document is never reported as recovered."""
    fence = _last_fence(text)
    if fence is not None:
        start, body = fence
        value = _loads(body)
        if value is not _NOTHING:
            return value, Recovery("markdown-fence", _byte_offset(text, start))
        return _repaired(body, text, start)
    span = last_balanced(text)
    if span is not None:
        value = _loads(text[span[0]:span[1]])
        if value is not _NOTHING:
            return value, Recovery("brace-walker", _byte_offset(text, span[0]))
    opening = _first_opening(text)
    if opening is None:
        raise Unrecoverable("no JSON object or array in the answer")
    return _repaired(text[opening:], text, opening)


_NOTHING: Any = object()


def _loads(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return _NOTHING


def _repaired(candidate: str, text: str, start: int) -> tuple[Any, Recovery]:
    import json_repair  # imported on first damage only: the clean path never pays for it

    value = json_repair.loads(candidate)
    if value == "" or not isinstance(value, dict | list):
        raise Unrecoverable("json-repair found no JSON object or array")
    return value, Recovery("jsonrepair", _byte_offset(text, start))


def _last_fence(text: str) -> tuple[int, str] | None:
    if "```" not in text:
        return None
    found = None
    for match in _FENCE.finditer(text):
        if match.group(1).strip():
            found = (match.start(1), match.group(1))
    if found is None:  # an opening fence whose closing one was cut off
        opening = re.search(r"```[ \t]*(?:json|JSON|json5)?[ \t]*\r?\n", text)
        if opening is not None:
            found = (opening.end(), text[opening.end():])
    return found


def _first_opening(text: str) -> int | None:
    positions = [p for p in (text.find("{"), text.find("[")) if p >= 0]
    return min(positions) if positions else None


def last_balanced(text: str) -> tuple[int, int] | None:
    """(start, end) of the last top-level balanced {...} or [...] in `text`, strings respected."""
    best: tuple[int, int] | None = None
    depth = 0
    start = -1
    in_string = False
    escaped = False
    closing = {"{": "}", "[": "]"}
    stack: list[str] = []
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"' and depth:
            in_string = True
        elif char in closing:
            if depth == 0:
                start = index
            stack.append(closing[char])
            depth += 1
        elif depth and char == stack[-1]:
            stack.pop()
            depth -= 1
            if depth == 0:
                best = (start, index + 1)
        elif depth and char in "}]":  # mismatched closer: abandon this candidate
            depth, stack = 0, []
    return best


def _byte_offset(text: str, char_index: int) -> int:
    return len(text[:char_index].encode("utf-8"))
