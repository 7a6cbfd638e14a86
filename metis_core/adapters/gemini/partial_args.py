"""Gemini's streamed function-call arguments (`partialArgs` / `willContinue`) -> one argument object.

A streamed call opens with a `functionCall` part holding its name and `willContinue: true`; the
parts after it carry `partialArgs` (a JSONPath and a string, number, bool or null value; a string
may arrive in pieces, each piece `willContinue` until an empty closing piece), and a bare
`functionCall: {}` closes it. Continuation parts have no name: they extend the open call and are
never calls of their own.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

_TOKEN = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]")


class PartialArgsError(ValueError):
    """A jsonPath this reader cannot place (not `$` followed by .key / [index] steps)."""


def path_steps(path: str) -> list[str | int]:
    if not path.startswith("$"):
        raise PartialArgsError(f"jsonPath {path!r} does not start at $")
    steps: list[str | int] = []
    position = 1
    while position < len(path):
        match = _TOKEN.match(path, position)
        if match is None:
            raise PartialArgsError(f"jsonPath {path!r} has a step this reader does not know at {position}")
        key, index, quoted, double = match.groups()
        steps.append(int(index) if index is not None else (key or quoted or double or ""))
        position = match.end()
    if not steps:
        raise PartialArgsError("jsonPath `$` names the whole argument object, not one value")
    return steps


def _value(partial: dict[str, Any]) -> tuple[bool, Any]:
    """(is_string, value) of one partial argument."""
    if "stringValue" in partial:
        return True, str(partial["stringValue"])
    for key in ("numberValue", "boolValue", "structValue", "listValue"):
        if key in partial:
            return False, partial[key]
    return False, None  # nullValue


def apply_partial(args: dict[str, Any], partial: dict[str, Any]) -> None:
    """Place one partial argument in `args`; string pieces at the same path are appended."""
    steps = path_steps(str(partial.get("jsonPath") or ""))
    container: Any = args
    for step, following in itertools.pairwise(steps):
        empty: Any = [] if isinstance(following, int) else {}
        container = _child(container, step, empty)
    last = steps[-1]
    is_string, value = _value(partial)
    if isinstance(last, int):
        if not isinstance(container, list):
            raise PartialArgsError(f"jsonPath {partial.get('jsonPath')!r} indexes something that is not a list")
        while len(container) <= last:
            container.append(None)
        current = container[last]
        container[last] = current + value if is_string and isinstance(current, str) else value
    else:
        if not isinstance(container, dict):
            raise PartialArgsError(f"jsonPath {partial.get('jsonPath')!r} names a key of something not an object")
        current = container.get(last)
        container[last] = current + value if is_string and isinstance(current, str) else value


def _child(container: Any, step: str | int, empty: Any) -> Any:
    if isinstance(step, int):
        if not isinstance(container, list):
            raise PartialArgsError("a list index applied to something that is not a list")
        while len(container) <= step:
            container.append(None)
        if container[step] is None:
            container[step] = empty
        return container[step]
    if not isinstance(container, dict):
        raise PartialArgsError("an object key applied to something that is not an object")
    if container.get(step) is None:
        container[step] = empty
    return container[step]
