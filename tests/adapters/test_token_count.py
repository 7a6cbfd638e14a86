"""Exact input-token counts: Anthropic count_tokens, Gemini countTokens, tiktoken when installed;
None (the caller keeps its estimate) when a provider cannot count or the count fails."""

from __future__ import annotations

import json
import sys
import types
from typing import Any

import httpx
import pytest
from support_servers import API_KEYS, BASE_URLS

from metis_core.adapters import token_count
from metis_core.adapters.client import ModelClient
from metis_core.adapters.token_count import count_input_tokens, tiktoken_count
from metis_core.messages import Message, Role, TextBlock, ToolDefinition
from metis_core.transport.retry import RetryPolicy

HISTORY = [Message(role=Role.SYSTEM, content=[TextBlock(text="Be brief.")]),
           Message(role=Role.USER, content=[TextBlock(text="what is the weather in Paris")])]
TOOL = ToolDefinition(name="get_weather", description="Weather.", input_schema={"type": "object", "properties": {}})


def _client(answer: httpx.Response, seen: list[httpx.Request]) -> ModelClient:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answer

    transport = httpx.MockTransport(handler)
    return ModelClient(http_client=httpx.Client(transport=transport), async_http_client=httpx.AsyncClient(
        transport=transport), base_urls=BASE_URLS, api_keys=API_KEYS, retry=RetryPolicy(max_retries=0))


async def test_anthropic_counts_with_count_tokens_and_sends_no_generation_fields() -> None:
    seen: list[httpx.Request] = []
    client = _client(httpx.Response(200, json={"input_tokens": 412}), seen)
    assert await count_input_tokens(client, "anthropic:claude-haiku-4-5", HISTORY, [TOOL]) == 412
    (request,) = seen
    body = json.loads(request.content)
    assert request.url.path == "/v1/messages/count_tokens" and request.headers["x-api-key"] == API_KEYS["anthropic"]
    assert set(body) == {"model", "messages", "system", "tools"} and body["model"] == "claude-haiku-4-5"


async def test_gemini_counts_with_count_tokens_around_the_generate_content_request() -> None:
    seen: list[httpx.Request] = []
    client = _client(httpx.Response(200, json={"totalTokens": 37}), seen)
    assert await count_input_tokens(client, "gemini:gemini-2.5-flash", HISTORY) == 37
    body = json.loads(seen[0].content)
    assert seen[0].url.path.endswith("/models/gemini-2.5-flash:countTokens")
    assert body["generateContentRequest"]["model"] == "models/gemini-2.5-flash"
    assert body["generateContentRequest"]["contents"][0]["parts"][0]["text"] == "what is the weather in Paris"


@pytest.mark.parametrize("answer", [httpx.Response(400, json={"error": {"message": "no"}}),
                                    httpx.Response(200, json={"unexpected": 1})])
async def test_a_failed_count_leaves_the_estimate_in_charge(answer: httpx.Response) -> None:
    assert await count_input_tokens(_client(answer, []), "anthropic:claude-haiku-4-5", HISTORY) is None


async def test_providers_without_a_counting_endpoint_send_nothing() -> None:
    seen: list[httpx.Request] = []
    assert await count_input_tokens(_client(httpx.Response(200), seen), "ollama:llama3", HISTORY) is None
    assert seen == []


class _Encoding:
    def encode(self, text: str) -> list[str]:
        return text.split()


def test_tiktoken_counts_openai_models_when_installed_and_none_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    token_count._encoding.cache_clear()
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # not installed
    assert tiktoken_count("openai:gpt-4o", HISTORY) is None
    token_count._encoding.cache_clear()
    fake: Any = types.ModuleType("tiktoken")
    fake.encoding_for_model = lambda name: _Encoding()
    monkeypatch.setitem(sys.modules, "tiktoken", fake)
    # 3 priming + per message (3 + role word + words): system 3+1+2, user 3+1+6
    assert tiktoken_count("openai:gpt-4o", HISTORY) == 3 + (3 + 1 + 2) + (3 + 1 + 6)
    token_count._encoding.cache_clear()
