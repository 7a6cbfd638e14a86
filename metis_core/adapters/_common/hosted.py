"""Hosted-tool, compaction and citation blocks on their way to a target.

To the provider and API that produced them, adapters replay the payload verbatim. To any other
target a block becomes its text rendering (never a tool call), or is dropped when it has none;
either way the §7.3 WARN line is written. `readable` is the one place a provider's JSON is
turned into text another model can use: URLs and titles, code, output; never encrypted blobs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from metis_core.messages import CompactionBlock, ProviderToolCallBlock, ProviderToolResultBlock, TextBlock

if TYPE_CHECKING:
    from metis_core.messages import Message

HostedBlock = ProviderToolCallBlock | ProviderToolResultBlock | CompactionBlock
HOSTED_CLASSES = (ProviderToolCallBlock, ProviderToolResultBlock, CompactionBlock)

RENDER_LIMIT = 8_000
"""Characters of a rendering sent to another model (a fetched page can be megabytes)."""

_SKIPPED_KEYS = frozenset({
    "type", "id", "call_id", "item_id", "tool_use_id", "encrypted_content", "encrypted_index", "signature",
    "result", "page_age", "output_index", "sequence_number", "caller", "citations", "annotations",
})
"""Keys that carry ids, framing or opaque blobs: nothing another model can use."""
_BARE_KEYS = frozenset({"text", "content", "stdout", "data", "output", "logs"})
"""Keys whose value is shown without its name (the text itself)."""


Wire = TypeVar("Wire")


def hosted_wire(table: Mapping[str, Wire], name: str, model: str, who: str) -> Wire:
    """`table[name]`: what asks a provider for hosted tool `name`; CapabilityMismatchError (before
    anything is sent) naming what `who` offers instead when it has no such tool."""
    found = table.get(name)
    if found is None:
        from metis_core.errors import CapabilityMismatchError

        raise CapabilityMismatchError(model, f"hosted tool {name}", f"{who} {', '.join(sorted(table))}, not {name!r}")
    return found


def replayable(block: HostedBlock, provider: str, api: str) -> bool:
    """Hosted payloads replay to the provider and API that produced them, whatever the model."""
    return block.origin.same_api(provider, api)


def cited(block: TextBlock, provider: str, api: str) -> list[dict[str, Any]]:
    """The citation payloads of a text block that this target issued (others are left out)."""
    return [c.payload for c in block.citations or () if c.origin is not None and c.origin.same_api(provider, api)]


def readable(value: Any, limit: int = RENDER_LIMIT) -> str:
    """A provider JSON value as plain lines: the fields a reader wants, no opaque blobs."""
    lines: list[str] = []
    _walk(value, lines, 0)
    text = "\n".join(line for line in lines if line.strip())
    if len(text) > limit:
        text = text[:limit] + f"\n[... {len(text) - limit} more characters not shown]"
    return text


def _walk(value: Any, lines: list[str], depth: int) -> None:
    if depth > 10:
        return
    if isinstance(value, dict):
        title, url = value.get("title"), value.get("url")
        linked = isinstance(url, str) and isinstance(title, str)
        if linked:
            lines.append(f"- {title} <{url}>")
        for key, item in value.items():
            if item is None or item == "" or key in _SKIPPED_KEYS or (linked and key in ("title", "url")):
                continue
            if isinstance(item, str | int | float | bool):
                if isinstance(item, str) and _looks_opaque(item):
                    continue
                lines.append(str(item) if key in _BARE_KEYS else f"{key}: {item}")
            else:
                _walk(item, lines, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _walk(item, lines, depth + 1)
    elif isinstance(value, str) and not _looks_opaque(value):
        lines.append(value)


def _looks_opaque(text: str) -> bool:
    """Base64 payloads (images, encrypted blobs) carry nothing another model can read."""
    return len(text) > 256 and " " not in text[:256] and "\n" not in text[:256]


def compact_json(value: Any) -> str:
    return orjson.dumps(value).decode()


DropFn = Callable[["Message", int, str, str], None]
"""An adapter builder's `drop(message, index, block_type, reason)`: records and WARN-logs (§7.3)."""


def text_for_other_target(drop: DropFn, message: Message, index: int, block: HostedBlock) -> str | None:
    """The text a target that cannot take `block` gets instead, with the §7.3 WARN either way."""
    origin = f"{block.origin.provider}/{block.origin.api}"
    if isinstance(block, CompactionBlock):
        text = f"[Summary of the earlier conversation]\n{block.text}" if block.text else ""
        what = "compaction"
    else:
        text = block.text
        what = f"hosted {block.name}"
    if text:
        drop(message, index, block.type, f"{what} from {origin} cannot be replayed here; sent as its text rendering")
        return text
    drop(message, index, block.type, f"{what} from {origin} is opaque to any other provider and has no text; dropped")
    return None


def note_foreign_citations(drop: DropFn, message: Message, index: int, block: TextBlock) -> None:
    """A text block's citations from another provider are left out (the text itself is sent)."""
    if block.citations:
        sources = ", ".join(c.url for c in block.citations if c.url)
        reason = f"citations ({len(block.citations)}) are another provider's objects; text sent without them"
        if sources:
            reason += f" (sources: {sources[:300]})"
        drop(message, index, "citations", reason)
