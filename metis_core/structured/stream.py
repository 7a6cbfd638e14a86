"""Partial structured answers while a stream arrives, for UIs that render a form as it fills.

`PartialParser` accumulates the answer's text (or the forced tool's input fragments) and, when a
fragment may have completed a value, reads the prefix leniently (`json-repair` closes what is open).
Partials are never validated strictly; the final answer is (driver.py), and a retry starts a new
attempt whose partials begin again from nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from metis_core.structured.result import StructuredResult

_VALUE_ENDS = frozenset(',}]"')


@dataclass(frozen=True, slots=True)
class PartialOutput:
    """One update of a streamed structured answer.

    `value` is the lenient partial (a model instance once it already validates, else plain JSON data);
    the last update has `final=True` and `result` set, its value validated strictly."""

    value: Any
    attempt: int
    final: bool = False
    result: StructuredResult[Any] | None = None


class PartialParser:
    """Lenient reader of a growing JSON text. Returns a new partial value only when it changed."""

    __slots__ = ("_last", "_text")

    def __init__(self) -> None:
        self._text: list[str] = []
        self._last: Any = None

    def feed(self, fragment: str) -> Any | None:
        self._text.append(fragment)
        if not any(char in _VALUE_ENDS for char in fragment):
            return None  # nothing can have completed inside this fragment: skip the re-read
        text = "".join(self._text)
        start = min((p for p in (text.find("{"), text.find("[")) if p >= 0), default=-1)
        if start < 0:
            return None
        import json_repair

        value = json_repair.loads(text[start:])
        expected = dict if text[start] == "{" else list
        if not isinstance(value, expected) or value == self._last:
            return None  # a key still being written can read as something else: wait for more
        self._last = value
        return value
