"""The OpenAI-compatible vendors known by name, on their recorded traffic (tests/data/vendors,
PROVENANCE.md): with only the vendor's usual key variable set, `<vendor>:<model>` reaches the
vendor's base URL with that key, each vendor's deviations from the OpenAI shape are read
(reasoning_content, reasoning, <think> tags, Mistral thinking chunks, Perplexity search results),
usage is priced from the table, and the thinking is never sent back."""

from __future__ import annotations

import contextlib
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.client import ModelClient
from metis_core.config import load_config
from metis_core.errors import InvalidRequestError, MetisError, MissingAPIKeyError
from metis_core.messages import Message, MessageComplete, user_message
from metis_core.models.pricing import PriceTable
from metis_core.models.registry import ModelRegistry
from metis_core.provider_presets import VENDOR_PRESETS
from metis_core.transport.retry import RetryPolicy

DATA = Path(__file__).resolve().parents[2] / "data" / "vendors"
SECRET = "sk-vendor-SECRET-42424242"


class Vendor:
    def __init__(self, name: str, body: bytes, *, sse: bool, tmp_path: Path) -> None:
        self.requests: list[httpx.Request] = []
        content_type = "text/event-stream" if sse else "application/json"

        def answer(request: httpx.Request) -> httpx.Response:
            request.read()
            self.requests.append(request)
            return httpx.Response(200, content=body, headers={"content-type": content_type})

        transport = httpx.MockTransport(answer)
        config = load_config(tmp_path, environ={VENDOR_PRESETS[name].key_variable: SECRET})
        registry = ModelRegistry.load(config)
        self.client = ModelClient(config=config, registry=registry, prices=PriceTable.load(config),
                                  http_client=httpx.Client(transport=transport),
                                  async_http_client=httpx.AsyncClient(transport=transport),
                                  retry=RetryPolicy(max_retries=0))

    def ask(self, model: str, *, stream: bool) -> Message:
        history = [user_message("go")]
        if not stream:
            return self.client.complete(history, model=model)
        events = list(self.client.stream(history, model=model))
        assert isinstance(events[-1], MessageComplete)
        message: Message = events[-1].message
        return message


FIREWORKS_GPT_OSS = "accounts/fireworks/models/gpt-oss-120b"
CASES = [
    ("deepseek", "deepseek_model_thinking_part__0.json", "deepseek-reasoner", "Okay, the user is asking how to cross"),
    ("deepseek", "deepseek_model_thinking_stream__0.sse", "deepseek-reasoner", "Hmm, the user just said"),
    ("cerebras", "cerebras_thinking_part_survives_multiturn__0.json", "gpt-oss-120b", "User asks simple"),
    ("cerebras", "cerebras_model_simple__0.json", "llama-3.3-70b", None),
    ("groq", "groq_model_thinking_part__0.json", "deepseek-r1-distill-llama-70b", "Okay, so I want to make"),
    ("groq", "groq_model_thinking_part_iter__0.sse", "deepseek-r1-distill-llama-70b", "Okay, so I want to make"),
    ("groq", "groq_model_instructions__0.json", "llama-3.3-70b-versatile", None),
    ("mistral", "mistral_model_thinking_part__1.json", "magistral-medium-latest", "**Analogizing crossing a river**"),
    ("mistral", "mistral_model_thinking_part_iter__0.sse", "magistral-medium-latest", None),
    ("xai", "xai-text.json", "grok-3-mini", "First, the user said"),
    ("xai", "xai-text.sse", "grok-3-mini", None),
    ("xai", "xai-tool-call.json", "grok-3-mini", None),
    ("xai", "xai-tool-call.sse", "grok-3-mini", None),
    ("perplexity", "perplexity-text.json", "sonar", None),
    ("perplexity", "perplexity-citations.json", "sonar", None),
    ("perplexity", "perplexity-citations.sse", "sonar", None),
    ("together", "together-tool-call.json", "meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo", None),
    ("together", "together-json-mode.json", "meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo", None),
    ("fireworks", "fireworks-gpt-oss-tool-call.sse", FIREWORKS_GPT_OSS, "We need to call get_time"),
    ("fireworks", "fireworks-gpt-oss-tool-result.sse", FIREWORKS_GPT_OSS, None),
]


@pytest.mark.parametrize(("vendor", "name", "model", "thought"), CASES, ids=[c[1] for c in CASES])
def test_a_recorded_vendor_answer_parses_with_its_thinking_and_its_price(
    vendor: str, name: str, model: str, thought: str | None, tmp_path: Path,
) -> None:
    body = (DATA / vendor / name).read_bytes()
    server = Vendor(vendor, body, sse=name.endswith(".sse"), tmp_path=tmp_path)
    message = server.ask(f"{vendor}:{model}", stream=name.endswith(".sse"))

    (request,) = server.requests
    assert str(request.url).startswith(VENDOR_PRESETS[vendor].base_url)
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert message.text().strip() or message.tool_uses()
    assert "<think>" not in message.text() and "</think>" not in message.text()
    thinking = message.thinking()
    if thought is not None:
        assert thinking and thinking[0].text.lstrip().startswith(thought) and thinking[0].signature is None
    elif name.startswith(("mistral", "xai-text")):
        assert thinking  # the streamed Magistral and Grok answers think too
    if name.startswith("perplexity-citations"):
        citations = [c for block in message.content for c in (getattr(block, "citations", None) or [])]
        assert citations and all(c.url and c.url.startswith("https://") for c in citations)
    usage = message.metadata.usage
    assert usage is not None and usage.output_tokens > 0
    assert usage.cost_usd is not None and usage.cost_usd > 0, "priced from the vendor's table entry"
    assert message.metadata.provider == vendor and message.metadata.model == f"{vendor}:{model}"

    # Sent back to the vendor, the thinking stays out of the history (DeepSeek rejects it there).
    wire = _request_body(server, message, f"{vendor}:{model}")
    assistant = [m for m in wire["messages"] if m["role"] == "assistant"]
    assert assistant and "reasoning_content" not in assistant[0]
    assert all("<think>" not in str(m.get("content")) for m in assistant)


def _request_body(server: Vendor, message: Message, model: str) -> dict[str, Any]:
    server.requests.clear()
    with contextlib.suppress(MetisError):  # only the request matters: the canned answer may be a stream
        server.client.complete([user_message("go"), message, user_message("and then?")], model=model)
    body: dict[str, Any] = json.loads(server.requests[0].content)
    return body


def test_together_tool_calls_go_back_with_the_vendors_id_and_its_extra_fields_are_ignored(tmp_path: Path) -> None:
    """Together's answer carries `prompt: []`, a `seed` above 2**63 and an `index` on each tool call;
    none of them reaches the canonical message, and the call goes back as a plain OpenAI tool call."""
    model = "together:meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo"
    server = Vendor("together", (DATA / "together" / "together-tool-call.json").read_bytes(), sse=False,
                    tmp_path=tmp_path)
    message = server.ask(model, stream=False)
    (call,) = message.tool_uses()
    assert (call.name, call.input) == ("get_weather", {"location": "Tokyo, Japan", "num_days": "3"})
    assert message.metadata.stop_reason == "tool_use" and "seed" not in str(message.metadata.provider_raw)
    wire = _request_body(server, message, model)
    (sent,) = [m for m in wire["messages"] if m["role"] == "assistant"]
    (tool_call,) = sent["tool_calls"]
    assert set(tool_call) == {"id", "type", "function"} and tool_call["function"]["name"] == "get_weather"
    assert json.loads(tool_call["function"]["arguments"]) == call.input

    no_finish = Vendor("together", (DATA / "together" / "together-json-mode.json").read_bytes(), sse=False,
                       tmp_path=tmp_path).ask("together:meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo", stream=False)
    assert no_finish.metadata.stop_reason == "end_turn"  # Together left `finish_reason` out of this answer


def test_fireworks_streams_a_gpt_oss_tool_loop_with_its_cached_tokens_priced(tmp_path: Path) -> None:
    """Fireworks' recorded gpt-oss-120b tool loop: `reasoning_content` deltas, a call whose argument
    fragments repeat `"id": null`, usage on a last chunk with `choices: []` (reasoning counted under
    both `completion_tokens_details` and `output_tokens_details`), then the follow-up whose prompt
    was read from Fireworks' prompt cache (1,521 of 1,594 tokens, priced at the cached rate)."""
    model = f"fireworks:{FIREWORKS_GPT_OSS}"
    server = Vendor("fireworks", (DATA / "fireworks" / "fireworks-gpt-oss-tool-call.sse").read_bytes(), sse=True,
                    tmp_path=tmp_path)
    ids = ToolIdMap()
    call = list(server.client.stream([user_message("go")], model=model, tool_ids=ids))[-1].message  # type: ignore[attr-defined]
    (use,) = call.tool_uses()
    assert (use.name, use.input) == ("get_time", {"timezone": "UTC"}) and call.metadata.stop_reason == "tool_use"
    assert ids.provider_id("fireworks", use.id) == "call_5nSCoKuFlaW6nTzHuTXembDc"  # not reset by `"id": null`
    assert [b.text for b in call.thinking()] == ["We need to call get_time with timezone UTC."]
    usage = call.metadata.usage
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == (1522, 37, 10)
    assert usage.cost_usd == (1522 * Decimal("0.15") + 37 * Decimal("0.60")) / 1_000_000

    answer = Vendor("fireworks", (DATA / "fireworks" / "fireworks-gpt-oss-tool-result.sse").read_bytes(), sse=True,
                    tmp_path=tmp_path).ask(model, stream=True)
    assert answer.text() == "It is currently 12:00 PM UTC." and answer.metadata.stop_reason == "end_turn"
    usage = answer.metadata.usage
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens) == (1594 - 1521, 1521, 15)
    assert usage.cost_usd == (73 * Decimal("0.15") + 1521 * Decimal("0.075") + 15 * Decimal("0.60")) / 1_000_000


def test_fireworks_unknown_model_is_a_named_error_with_its_request_id(tmp_path: Path) -> None:
    """Fireworks' recorded 404 for a model name it does not serve (`code: NOT_FOUND`); its request id
    is read from the body's `request_id` when no `x-request-id` header reaches the client."""
    body = (DATA / "fireworks" / "fireworks-error-model-not-found.json").read_bytes()
    transport = httpx.MockTransport(lambda request: httpx.Response(404, content=body,
                                                                   headers={"content-type": "application/json"}))
    config = load_config(tmp_path, environ={"FIREWORKS_API_KEY": SECRET})
    client = ModelClient(config=config, registry=ModelRegistry.load(config), prices=PriceTable.load(config),
                         http_client=httpx.Client(transport=transport),
                         async_http_client=httpx.AsyncClient(transport=transport), retry=RetryPolicy(max_retries=0))
    with pytest.raises(InvalidRequestError) as caught:
        client.complete([user_message("go")], model="fireworks:no-such-model-m95")
    error = caught.value
    assert "Model not found, inaccessible, and/or not deployed" in str(error) and "check the model name" in str(error)
    assert (error.status, error.provider_code, error.retryable) == (404, "NOT_FOUND", False)
    assert error.request_id == "chatcmpl-a1e41670cf5f40a5a1d13e57bf153e66" and SECRET not in repr(error)


def test_perplexity_search_results_become_citations_of_the_answer(tmp_path: Path) -> None:
    recorded = {
        "id": "pplx-1", "model": "sonar", "object": "chat.completion", "created": 1764300000,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Paris is the capital of France [1]."}}],
        "citations": ["https://en.wikipedia.org/wiki/Paris"],
        "search_results": [{"title": "Paris - Wikipedia", "url": "https://en.wikipedia.org/wiki/Paris",
                            "date": "2026-11-01"}],
        "usage": {"prompt_tokens": 8, "completion_tokens": 9, "total_tokens": 17},
    }
    server = Vendor("perplexity", json.dumps(recorded).encode(), sse=False, tmp_path=tmp_path)
    message = server.ask("perplexity:sonar", stream=False)
    (citation,) = message.content[0].citations or []
    assert (citation.url, citation.title) == ("https://en.wikipedia.org/wiki/Paris", "Paris - Wikipedia")
    assert citation.payload["date"] == "2026-11-01"


def test_a_vendor_without_its_key_says_which_variable_to_set(tmp_path: Path) -> None:
    config = load_config(tmp_path, environ={})
    assert not config.is_keyless("mistral") and config.is_keyless("openai_compatible")
    with pytest.raises(MissingAPIKeyError, match="MISTRAL_API_KEY"):
        config.require_api_key("mistral")
    assert config.base_url("groq") == "https://api.groq.com/openai/v1"
    moved = load_config(tmp_path, environ={"METIS_GROQ_BASE_URL": "http://127.0.0.1:9/v1"})
    assert moved.base_url("groq") == "http://127.0.0.1:9/v1"


def test_every_vendor_has_a_registry_entry_and_a_priced_model(tmp_path: Path) -> None:
    registry = ModelRegistry.load(load_config(tmp_path, environ={}))
    prices = PriceTable.load()
    for name in VENDOR_PRESETS:
        assert registry.get(f"{name}:some-new-model").capabilities.max_context_tokens > 0  # any model resolves
        priced = [m.id for m in registry.models(name) if prices.price_for(m.id) is not None]
        assert priced, f"{name} has no priced model in the table"
