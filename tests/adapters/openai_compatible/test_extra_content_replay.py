"""Gemini's OpenAI endpoint returns its thought signature in the message's `extra_content`
(a real answer from pydantic-ai's cassettes, tests/data/heldout/PROVENANCE.md): it goes back with the
assistant message to the model that made it, and to no other model.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from mock_http import serve

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.registry import get_adapter
from metis_core.messages import user_message

ANSWER = (Path(__file__).resolve().parents[2] / "data" / "heldout" / "openai_compatible"
          / "response__test_compatible_api_with_tool_calls_without_id__1.json")
GEMINI = "openai_compatible:gemini-2.5-pro"


def sent_assistant(model: str) -> dict[str, object]:
    client, _ = serve(httpx.Response(200, content=ANSWER.read_bytes()), provider="openai_compatible")
    ids = ToolIdMap()
    history = [user_message("What time is it?")]
    answer = client.complete(history, model=GEMINI, tool_ids=ids)
    body = get_adapter("openai_compatible").to_wire([*history, answer], [], AdapterOptions(model=model), ids).body
    [assistant] = [m for m in body["messages"] if m["role"] == "assistant"]
    return dict(assistant)


def test_the_signature_goes_back_to_the_model_that_made_it() -> None:
    recorded = json.loads(ANSWER.read_text())["choices"][0]["message"]["extra_content"]
    assert sent_assistant(GEMINI)["extra_content"] == recorded


def test_another_model_gets_the_text_without_the_signature() -> None:
    sent = sent_assistant("openai_compatible:qwen3-32b")
    assert "extra_content" not in sent and sent["content"] == "The current time is Noon."
