"""An OpenAI client's web search, asked of another provider's model: the canonical hosted tool instead.

OpenAI asks for web search in its own words (Chat `web_search_options`, a Responses `web_search`
tool) that no other API takes. When a call may go to a provider outside the shape's own API, the
ask becomes `AdapterOptions.hosted_tools["web_search"]`, which each adapter writes in its own wire
(Claude's `web_search_20250305`, Gemini's `googleSearch`); OpenAI's settings for it are not carried.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from metis_core.gateway.shapes.base import InboundRequest

log = logging.getLogger("metis_core.gateway")
OPENAI_WEB_SEARCH_TOOLS = frozenset({"web_search", "web_search_preview", "web_search_2025_08_26",
                                     "web_search_preview_2025_03_11"})
"""Responses `tools[].type` values that ask for OpenAI's hosted web search."""


def carry_web_search(request: InboundRequest, members: list[str], own_providers: frozenset[str]) -> None:
    """Turn an OpenAI web-search ask into the canonical hosted tool when a member is outside
    `own_providers` (where the ask would be dropped or refused); a call within them keeps it verbatim."""
    if all(m.partition(":")[0] in own_providers for m in members):
        return
    options = request.options
    chat_ask = options.extra.pop("web_search_options", None)
    kept = [t for t in options.provider_tools if t.get("type") not in OPENAI_WEB_SEARCH_TOOLS]
    if chat_ask is None and len(kept) == len(options.provider_tools):
        return
    options.provider_tools = kept
    options.hosted_tools = {**options.hosted_tools, "web_search": {}}
    log.info("web search asked in OpenAI's words for %s: asked as the hosted web_search tool (its OpenAI "
             "settings are not carried)", members)
