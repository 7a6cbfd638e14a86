"""Every usage field Gemini reports, on every recorded Gemini answer, lands in the canonical Usage.

Over the project's recordings and the held-out ones (tests/data/heldout/gemini): the token counts by
Gemini's own arithmetic (prompt includes cached content, thoughts sit outside candidates, built-in
tool prompts are input), every per-modality breakdown, and the service tier. A count field no rule
here knows fails the test, so a new one cannot go unread.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from fixture_files import wire_dir
from mock_http import serve, sse_response

from metis_core.messages import MessageComplete, Usage, user_message
from metis_core.transport.framing import decode_all

HELDOUT = Path(__file__).resolve().parents[2] / "data" / "heldout" / "gemini"
COUNTS = {"promptTokenCount", "candidatesTokenCount", "totalTokenCount", "cachedContentTokenCount",
          "thoughtsTokenCount", "toolUsePromptTokenCount"}
BREAKDOWNS = {"promptTokensDetails": "prompt", "candidatesTokensDetails": "candidates",
              "cacheTokensDetails": "cache", "toolUsePromptTokensDetails": "tool_use_prompt"}
LABELS = {"serviceTier": "service_tier", "trafficType": "traffic_type"}
ANSWERS = sorted(p for folder in (wire_dir("gemini"), HELDOUT) for p in folder.glob("*")
                 if p.name.startswith(("response__", "stream__")) and not p.name.endswith(".source.txt"))


def reported_usage(path: Path) -> dict[str, Any]:
    """The usageMetadata the answer ends with (a stream's is cumulative: the last one counts)."""
    if path.suffix != ".sse":
        found: dict[str, Any] = json.loads(path.read_bytes()).get("usageMetadata") or {}
        return found
    last: dict[str, Any] = {}
    for chunk in decode_all(path.read_bytes(), "sse"):
        if chunk.data and chunk.data != "[DONE]":
            last = json.loads(chunk.data).get("usageMetadata") or last
    return last


def parsed_usage(path: Path) -> tuple[Usage, dict[str, Any]]:
    data = path.read_bytes()
    if path.suffix == ".sse":
        client, _ = serve(sse_response(data), provider="gemini")
        events = list(client.stream([user_message("go")], model="gemini:gemini-2.5-flash"))
        assert isinstance(events[-1], MessageComplete)
        message = events[-1].message
    else:
        client, _ = serve(httpx.Response(200, content=data), provider="gemini")
        message = client.complete([user_message("go")], model="gemini:gemini-2.5-flash")
    assert message.metadata.usage is not None
    return message.metadata.usage, message.metadata.provider_raw or {}


@pytest.mark.parametrize("path", ANSWERS, ids=[f"{p.parent.name}/{p.name}" for p in ANSWERS])
def test_every_reported_usage_field_lands_in_usage(path: Path) -> None:
    meta = reported_usage(path)
    unknown = {k for k in meta if k not in COUNTS | set(BREAKDOWNS) | set(LABELS)}
    assert not unknown, f"usageMetadata fields no rule reads: {unknown}"
    usage, raw = parsed_usage(path)
    count = {name: meta.get(name, 0) for name in COUNTS}
    assert usage.input_tokens == count["promptTokenCount"] - count["cachedContentTokenCount"] + count[
        "toolUsePromptTokenCount"]
    assert usage.cached_input_tokens == count["cachedContentTokenCount"]
    assert usage.output_tokens == count["candidatesTokenCount"] + count["thoughtsTokenCount"]
    assert usage.reasoning_tokens == count["thoughtsTokenCount"]
    details = usage.details
    assert (details.tool_use_prompt_tokens if details else 0) == count["toolUsePromptTokenCount"]
    modalities = (details.modalities if details else None) or {}
    for field, name in BREAKDOWNS.items():
        want = {e["modality"]: e.get("tokenCount", 0) for e in meta.get(field) or ()}
        assert modalities.get(name, {}) == want, field
    for field, key in LABELS.items():
        assert raw.get(key) == meta.get(field)


def test_the_recordings_cover_every_usage_field() -> None:
    seen = set().union(*(reported_usage(p) for p in ANSWERS))
    assert seen >= COUNTS | set(BREAKDOWNS) | set(LABELS)
