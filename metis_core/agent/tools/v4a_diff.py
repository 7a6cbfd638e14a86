"""The V4A diff format OpenAI's `apply_patch` tool sends, applied to text.

A create diff is the new file's lines, each prefixed `+`. An update diff is hunks: optional `@@ <line>`
anchors that move the search forward past a matching line, then lines prefixed ` ` (context), `-`
(removed) or `+` (added); `*** End of File` pins a hunk to the file's end. Context is matched exactly,
then ignoring trailing, then surrounding whitespace. Line endings follow the file's own (CRLF kept).
Pure text in, text out: no file access here (agent/tools/patch.py does that).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from metis_core.errors import ToolError

END_OF_FILE = "*** End of File"
_STOPS = ("*** End Patch", "*** Update File:", "*** Delete File:", "*** Add File:")


class PatchFormatError(ToolError):
    """The diff is not valid V4A, or its context does not occur in the file; nothing is written."""


@dataclass(slots=True)
class _Hunk:
    anchors: list[str] = field(default_factory=list)
    lines: list[tuple[str, str]] = field(default_factory=list)
    """(prefix, text) with prefix one of ' ', '-', '+'."""
    at_end: bool = False


def _diff_lines(diff: str) -> list[str]:
    lines = [line.rstrip("\r") for line in re.split(r"\r?\n", diff)]
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def apply_create(diff: str) -> str:
    """The content of a new file from its create diff."""
    out = []
    for line in _diff_lines(diff):
        if line.startswith(_STOPS):
            break
        if not line.startswith("+"):
            raise PatchFormatError(f"a create_file diff has only '+' lines; found {line[:80]!r}")
        out.append(line[1:])
    return _newline(diff).join(out)


def _hunks(diff: str) -> list[_Hunk]:
    hunks: list[_Hunk] = []
    current = _Hunk()
    for raw in _diff_lines(diff):
        if raw.startswith(_STOPS):
            break
        if raw == "@@" or raw.startswith("@@ "):
            if current.lines:
                hunks.append(current)
                current = _Hunk()
            if raw.strip() != "@@":
                current.anchors.append(raw[3:])
            continue
        if raw == END_OF_FILE:
            current.at_end = True
            hunks.append(current)
            current = _Hunk()
            continue
        line = raw or " "
        if line[0] not in " +-":
            raise PatchFormatError(f"a diff line starts with ' ', '-' or '+'; found {raw[:80]!r}")
        current.lines.append((line[0], line[1:]))
    if current.lines or current.anchors:
        hunks.append(current)
    if not any(hunk.lines for hunk in hunks):
        raise PatchFormatError("the update_file diff changes nothing")
    return hunks


def _find(lines: list[str], wanted: list[str], start: int, at_end: bool) -> int:
    """Where `wanted` occurs in `lines` from `start`: exact first, then with whitespace loosened."""
    if not wanted:
        return len(lines) if at_end else start
    starts = [len(lines) - len(wanted)] if at_end else []
    starts += list(range(start, len(lines) - len(wanted) + 1))
    for loosen in (lambda s: s, str.rstrip, str.strip):
        target = [loosen(line) for line in wanted]
        for index in starts:
            if index >= 0 and [loosen(line) for line in lines[index : index + len(wanted)]] == target:
                return index
    return -1


def apply_update(text: str, diff: str) -> str:
    """`text` with the update diff applied; PatchFormatError if a hunk's context is not found."""
    newline = _newline(text) if "\n" in text else _newline(diff)
    lines = text.replace("\r\n", "\n").split("\n")
    ends_with_newline = len(lines) > 1 and lines[-1] == ""
    if ends_with_newline:
        lines.pop()
    out: list[str] = []
    cursor = 0
    for hunk in _hunks(diff):
        for anchor in hunk.anchors:
            found = _find(lines, [anchor], cursor, False)
            if found < 0:
                raise PatchFormatError(f"the anchor line {anchor[:80]!r} is not in the file after line {cursor}")
            out.extend(lines[cursor : found + 1])
            cursor = found + 1
        old = [body for prefix, body in hunk.lines if prefix != "+"]
        found = _find(lines, old, cursor, hunk.at_end)
        if found < 0:
            shown = "\n".join(old)[:400]
            raise PatchFormatError(f"these lines are not in the file (after line {cursor}):\n{shown}")
        out.extend(lines[cursor:found])
        cursor = found
        for prefix, body in hunk.lines:  # context keeps the file's own spelling of the line
            if prefix == "+":
                out.append(body)
            else:
                if prefix == " ":
                    out.append(lines[cursor])
                cursor += 1
    out.extend(lines[cursor:])
    return newline.join(out) + (newline if ends_with_newline else "")
