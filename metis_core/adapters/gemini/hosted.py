"""Gemini's hosted tools (Google Search, URL context, code execution): asking, grounding, replay.

The `tools` entries that enable them, grounding (`groundingMetadata`, from Google Search, URL
context or file search: not a part, so its supports become `Citation`s on the answer's text and the
metadata itself stays in `provider_raw`) and the replay of hosted parts to Gemini. The parts
themselves (code, server-side tool calls) are read in hosted_parts.py. Never a client tool call.
"""

from __future__ import annotations

import logging
from typing import Any

from metis_core.adapters._common.hosted import HostedBlock, hosted_wire
from metis_core.adapters.gemini.signatures import to_urlsafe_base64
from metis_core.messages import BlockOrigin, Citation

log = logging.getLogger("metis_core.adapters.gemini")

HOSTED_TOOL_WIRE = {"web_search": "googleSearch", "web_fetch": "urlContext", "code_execution": "codeExecution"}
"""Canonical hosted tool name -> the key of Gemini's `tools` entry that enables it."""
GROUNDING_KEY, URL_CONTEXT_KEY = "grounding_metadata", "url_context_metadata"
"""provider_raw keys: the candidate's groundingMetadata and urlContextMetadata, as sent."""


TOOL_FIELDS = {"googleSearch": frozenset({"timeRangeFilter", "searchTypes", "excludeDomains", "blockingConfidence"}),
               "urlContext": frozenset(), "codeExecution": frozenset()}
"""The fields each Gemini hosted-tool entry takes; other settings (another provider's, e.g. Claude's
`user_location` or `max_uses`) would fail the whole request."""


def hosted_tool_definitions(wanted: dict[str, dict[str, Any]], model: str) -> list[dict[str, Any]]:
    """`tools` entries for `AdapterOptions.hosted_tools`, e.g. {"googleSearch": {}}. A setting the entry has
    no field for is left out with a WARN line naming it (the canonical format's logged projection)."""
    entries: list[dict[str, Any]] = []
    for name, settings in wanted.items():
        key = hosted_wire(HOSTED_TOOL_WIRE, name, model, "Gemini hosts")
        fields = TOOL_FIELDS.get(key, frozenset())
        dropped = sorted(k for k in settings if k not in fields)
        if dropped:
            log.warning("hosted tool %s settings %s have no %s field in Gemini and were not sent", name, dropped,
                        key, extra={"adapter": "gemini", "model": model, "block_type": name})
        entries.append({key: {k: v for k, v in settings.items() if k in fields}})
    return entries


PASSED_THROUGH_TOOLS = frozenset({*HOSTED_TOOL_WIRE.values(), "fileSearch", "googleMaps"})
"""Hosted-tool entries a Gemini request may carry; `fileSearch` (its stores) and `googleMaps` have no
canonical name yet, so they are only passed through from a request the gateway read."""


def is_hosted_tool_entry(entry: Any) -> bool:
    """A request's `tools` entry that enables a hosted tool (read back by the request reader)."""
    return isinstance(entry, dict) and len(entry) == 1 and next(iter(entry)) in PASSED_THROUGH_TOOLS


def gemini_tool_entries(provider_tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The `AdapterOptions.provider_tools` Gemini can take. Another API's definitions (an Anthropic
    `web_search_20250305` read by the gateway) would fail the whole request: each is left out with a WARN."""
    kept = [entry for entry in provider_tools if is_hosted_tool_entry(entry)]
    for entry in provider_tools:
        if not is_hosted_tool_entry(entry):
            log.warning("provider tool %s is not a Gemini tool and was not sent; ask for hosted tools by "
                        "their canonical names (AdapterOptions.hosted_tools) to reach any provider",
                        entry.get("type") or entry.get("name") or sorted(entry), extra={"adapter": "gemini"})
    return kept


def grounding_citations(metadata: dict[str, Any], origin: BlockOrigin) -> list[Citation]:
    """One Citation per (support, source) pair of `groundingMetadata`, in Gemini's order.

    The payload is the support with the one chunk it points at, so the pair can be shown alone;
    an index pointing past the chunk list (a damaged body) is left out."""
    chunks = metadata.get("groundingChunks")
    chunks = chunks if isinstance(chunks, list) else []
    citations: list[Citation] = []
    for support in metadata.get("groundingSupports") or ():
        if not isinstance(support, dict):
            continue
        segment: dict[str, Any] = support["segment"] if isinstance(support.get("segment"), dict) else {}
        cited = segment.get("text") if isinstance(segment.get("text"), str) else None
        for index in support.get("groundingChunkIndices") or ():
            if not isinstance(index, int) or not 0 <= index < len(chunks) or not isinstance(chunks[index], dict):
                continue
            chunk = chunks[index]
            source = next((v for v in chunk.values() if isinstance(v, dict)), {})
            url = source.get("uri") if isinstance(source.get("uri"), str) else None
            title = source.get("title") if isinstance(source.get("title"), str) else None
            citations.append(Citation(url=url, title=title, cited_text=cited, origin=origin,
                                      payload={"segment": segment, "groundingChunkIndices": [index], "chunk": chunk}))
    return citations


def replay_part(block: HostedBlock, model: str) -> tuple[dict[str, Any], bool]:
    """The part to send back to Gemini, and whether its thought signature had to be left out.

    A signature is valid only for the model that issued it, like those on text and calls."""
    part = dict(block.payload)
    inline = part.get("inlineData")
    if isinstance(inline, dict) and isinstance(inline.get("data"), str):  # a generated image: bytes as the SDK sends
        part["inlineData"] = {**inline, "data": to_urlsafe_base64(inline["data"])}
    signature = part.get("thoughtSignature")
    if signature is None:
        return part, False
    if block.origin.model != model:
        del part["thoughtSignature"]
        return part, True
    part["thoughtSignature"] = to_urlsafe_base64(str(signature))  # as Google's SDKs encode it
    return part, False

