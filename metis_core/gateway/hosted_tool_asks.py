"""An OpenAI client's web search, asked of another provider's model: the canonical hosted tool instead.

OpenAI asks for web search in its own words (Chat `web_search_options`, a Responses `web_search`
tool) that no other API takes. When a call may go to a provider outside the shape's own API, the
ask becomes `AdapterOptions.hosted_tools["web_search"]`, which each adapter writes in its own wire
(Claude's `web_search_20250305`, Gemini's `googleSearch`), with the settings that have a canonical
meaning (`user_location`, `allowed_domains`); each setting that has none is named in a WARN line.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from metis_core.gateway.shapes.base import InboundRequest

log = logging.getLogger("metis_core.gateway")
OPENAI_WEB_SEARCH_TOOLS = frozenset({"web_search", "web_search_preview", "web_search_2025_08_26",
                                     "web_search_preview_2025_03_11"})
"""Responses `tools[].type` values that ask for OpenAI's hosted web search."""
LOCATION_FIELDS = ("city", "region", "country", "timezone")
"""Fields of an approximate user location; OpenAI's and Anthropic's share these names and meanings."""
NO_MEANING = {
    "search_context_size": "it sets how much retrieved text OpenAI's model reads; no other provider's search "
                           "has a matching knob (Claude's max_uses bounds the number of searches, not their size)",
}  # fmt: skip


def web_search_settings(ask: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Canonical `web_search` settings of an OpenAI ask (Chat `web_search_options` or a Responses tool), and
    each OpenAI setting left out with why. Canonical names are Claude's (`user_location`, `allowed_domains`)."""
    settings: dict[str, Any] = {}
    left_out: dict[str, str] = {}
    for key, value in ask.items():
        if key == "type" or value is None:
            continue
        if key == "user_location" and isinstance(value, dict):
            nested = value.get("approximate")
            where: dict[str, Any] = nested if isinstance(nested, dict) else value  # Chat nests the fields
            location = {f: where[f] for f in LOCATION_FIELDS if isinstance(where.get(f), str) and where[f]}
            if location:
                settings["user_location"] = {"type": "approximate", **location}
            else:
                left_out[key] = "it names no city, region, country or timezone"
        elif key == "filters" and isinstance(value, dict):
            domains = value.get("allowed_domains")
            if isinstance(domains, list) and domains and all(isinstance(d, str) for d in domains):
                settings["allowed_domains"] = list(domains)
            others = sorted(k for k in value if k != "allowed_domains")
            if others:
                left_out[f"filters.{','.join(others)}"] = "no canonical web-search filter has that name"
        else:
            left_out[key] = NO_MEANING.get(key, "no canonical web-search setting has that meaning")
    return settings, left_out


def carry_web_search(request: InboundRequest, members: list[str], own_providers: frozenset[str]) -> None:
    """Turn an OpenAI web-search ask into the canonical hosted tool when a member is outside
    `own_providers` (where the ask would be dropped or refused); a call within them keeps it verbatim."""
    if all(m.partition(":")[0] in own_providers for m in members):
        return
    options = request.options
    chat_ask = options.extra.pop("web_search_options", None)
    asks = [t for t in options.provider_tools if t.get("type") in OPENAI_WEB_SEARCH_TOOLS]
    if chat_ask is None and not asks:
        return
    options.provider_tools = [t for t in options.provider_tools if t.get("type") not in OPENAI_WEB_SEARCH_TOOLS]
    settings: dict[str, Any] = {}
    left_out: dict[str, str] = {}
    for ask in [*([chat_ask] if isinstance(chat_ask, dict) else []), *asks]:
        found, lost = web_search_settings(ask)
        settings.update(found)
        left_out.update(lost)
    options.hosted_tools = {**options.hosted_tools, "web_search": settings}
    session_id = request.messages[0].session_id if request.messages else ""
    log.info("web search asked in OpenAI's words for %s: asked as the hosted web_search tool with %s",
             members, sorted(settings) or "no settings", extra={"session_id": session_id})
    for key, reason in left_out.items():  # the canonical format's honest projection: named, never silent
        log.warning("web search setting %r of the OpenAI ask was not carried to %s: %s", key, members, reason,
                    extra={"session_id": session_id, "adapter": "gateway", "block_type": "web_search",
                           "reason": reason})
