"""LiteLLM as a peer: `completion` / `acompletion` with OpenAI-format messages for both providers.

LiteLLM's canonical form is OpenAI's chat format, so the conversation goes in as OpenAI message
dicts and LiteLLM translates them for Anthropic itself; `api_base` points at the local server.
Streams are consumed chunk by chunk and assembled with `stream_chunk_builder`, LiteLLM's documented
way to get the final message. The remote price-map fetch is disabled (runner sets the env var).
Imported only inside bench/.venv.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import version
from typing import Any

import litellm
import orjson

from bench import handwritten
from bench.peers.metis import canonical_conversation
from bench.scenarios import ANTHROPIC_MODEL, MAX_TOKENS, OPENAI_MODEL

NAME = f"litellm {version('litellm')}"
PROVIDERS = ("anthropic", "openai")
STREAM_PROVIDERS = ("anthropic", "openai")
Fields = tuple[str, str, Any, tuple[int, int]]


class LiteLLMCaller:
    def __init__(self, server: str) -> None:
        litellm.telemetry = False
        litellm.suppress_debug_info = True
        self.targets = {
            "anthropic": {"model": f"anthropic/{ANTHROPIC_MODEL}", "api_base": server},
            "openai": {"model": f"openai/{OPENAI_MODEL}", "api_base": f"{server}/v1"},
        }
        messages = handwritten.openai_messages(canonical_conversation())
        self.request = {"messages": messages, "tools": handwritten.openai_tools(), "max_tokens": MAX_TOKENS,
                        "api_key": "sk-bench-not-a-real-key", "num_retries": 0}

    def complete(self, provider: str) -> Any:
        return litellm.completion(**self.targets[provider], **self.request)

    async def acomplete(self, provider: str) -> Any:
        return await litellm.acompletion(**self.targets[provider], **self.request)

    def stream(self, provider: str) -> tuple[Any, int]:
        chunks = []
        for chunk in litellm.completion(**self.targets[provider], **self.request, stream=True,
                                        stream_options={"include_usage": True}):
            chunks.append(chunk)
        return litellm.stream_chunk_builder(chunks, messages=self.request["messages"]), len(chunks)

    @staticmethod
    def fields(response: Any) -> Fields:
        message = response.choices[0].message
        call = message.tool_calls[0].function
        return (message.content or "", call.name, orjson.loads(call.arguments),
                (response.usage.prompt_tokens, response.usage.completion_tokens))

    def close(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


def cost_action(input_tokens: int, output_tokens: int) -> Callable[[], float]:
    """Costing one response the LiteLLM way: `completion_cost` on the response object."""
    response = litellm.ModelResponse(
        model=ANTHROPIC_MODEL,
        usage=litellm.Usage(prompt_tokens=input_tokens, completion_tokens=output_tokens,
                            total_tokens=input_tokens + output_tokens),
    )
    return lambda: litellm.completion_cost(completion_response=response, custom_llm_provider="anthropic")
