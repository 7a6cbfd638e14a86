"""Citations written back in the OpenAI shapes' one form for them: `url_citation` annotations.

Any provider's citation with a URL (Claude's web-search locations, Gemini's grounding) becomes an
annotation spanning the text block it supports, at that block's place in the answer's text; an
OpenAI url_citation keeps its own span within the block. A citation without a URL (a document or
file location) has no url_citation form: it is left out and counted in a WARN line, never silently.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from metis_core.messages import Citation, Message, TextBlock

log = logging.getLogger("metis_core.gateway")

Span = tuple[int, int, list[Citation]]
"""(start, end) of a text block within the text an annotation indexes, and the block's citations."""


def url_annotations(spans: Iterable[Span], message: Message | None = None) -> list[dict[str, Any]]:
    """Responses-form annotations (`{type: url_citation, start_index, end_index, url, title}`)."""
    out: list[dict[str, Any]] = []
    lost = 0
    for start, end, citations in spans:
        for citation in citations:
            if not citation.url:
                lost += 1
                continue
            first, last = start, end
            payload = citation.payload if isinstance(citation.payload, dict) else {}
            if isinstance(payload.get("url_citation"), dict):  # Chat's form nests the fields
                payload = {"type": payload.get("type"), **payload["url_citation"]}
            inner_start, inner_end = payload.get("start_index"), payload.get("end_index")
            if payload.get("type") == "url_citation" and isinstance(inner_start, int) and isinstance(inner_end, int):
                first, last = start + inner_start, start + inner_end  # OpenAI's own span within the block: kept
                if not start <= first <= last <= end:
                    first, last = start, end
            out.append({"type": "url_citation", "start_index": first, "end_index": last, "url": citation.url,
                        "title": citation.title or ""})
    if lost:
        log.warning("%d citation(s) without a URL have no url_citation form in the OpenAI shapes; not written",
                    lost, extra={"session_id": message.session_id if message else "",
                                 "message_id": message.id if message else "", "block_type": "citations",
                                 "adapter": "gateway"})
    return out


def chat_annotations(spans: Iterable[Span], message: Message | None = None) -> list[dict[str, Any]]:
    """Chat Completions' form: the same fields nested under `url_citation`."""
    return [{"type": "url_citation", "url_citation": {k: v for k, v in a.items() if k != "type"}}
            for a in url_annotations(spans, message)]


def message_spans(message: Message) -> list[Span]:
    """Spans of every cited text block over the answer's text blocks joined (Chat's one `content`)."""
    spans: list[Span] = []
    offset = 0
    for block in message.content:
        if isinstance(block, TextBlock):
            if block.citations:
                spans.append((offset, offset + len(block.text), list(block.citations)))
            offset += len(block.text)
    return spans
