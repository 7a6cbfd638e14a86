"""What `metis sessions export` leaves out: the text the agent gave the memory tool.

Memory is private to the machine it was written on (docs/memory-and-skills.md). The memory
tool's calls stay in the document (action, file, ids) so it still imports; their text, old text
and entries become a marker with the SHA-256 of what was there, and a failed call's result (which
may quote an entry) becomes the same. Nothing else in the document is touched.
"""

from __future__ import annotations

from typing import Any

import orjson

from metis_core.hashing import sha256_hex

MEMORY_TOOL = "memory"
TEXT_FIELDS = ("text", "old_text", "entries")


def withheld(value: Any) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return f"[memory text withheld: sha256 {sha256_hex(text)}]"


def withhold_memory_text(document: dict[str, Any]) -> dict[str, Any]:
    """The exported session `document` (changed in place and returned) without memory text."""
    memory_calls: set[str] = set()
    for message in document.get("messages", []):
        for block in message.get("content", []):
            if block.get("type") == "tool_use" and block.get("name") == MEMORY_TOOL:
                memory_calls.add(block["id"])
                arguments = block.get("input") or {}
                for field in TEXT_FIELDS:
                    if field in arguments:
                        arguments[field] = withheld(arguments[field])
            elif block.get("type") == "tool_result" and block.get("tool_use_id") in memory_calls \
                    and block.get("is_error"):
                for part in block.get("content", []):
                    if part.get("type") == "text":
                        part["text"] = withheld(part["text"])
    return document
