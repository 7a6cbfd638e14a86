"""The official `anthropic` SDK as a peer: Messages API, sync, async and `messages.stream()`.

Sends the conversation as the Anthropic dicts a user of the SDK would hold (the hand-written
mapping's output), with `base_url` pointed at the local server. Streaming uses the SDK's
MessageStream, which accumulates the final message as metis does. Imported only inside
bench/.venv, where the SDK is installed.
"""

from __future__ import annotations

from typing import Any

import anthropic

from bench import handwritten
from bench.peers.metis import canonical_conversation
from bench.scenarios import ANTHROPIC_MODEL, MAX_TOKENS

NAME = f"anthropic SDK {anthropic.__version__}"
PROVIDERS = ("anthropic",)
STREAM_PROVIDERS = ("anthropic",)
Fields = tuple[str, str, Any, tuple[int, int]]


class AnthropicSDKCaller:
    def __init__(self, server: str) -> None:
        self.client = anthropic.Anthropic(base_url=server, api_key="sk-bench-not-a-real-key", max_retries=0)
        self.async_client = anthropic.AsyncAnthropic(base_url=server, api_key="sk-bench-not-a-real-key",
                                                     max_retries=0)
        body = handwritten.anthropic_body(canonical_conversation())
        self.request = {key: body[key] for key in ("system", "messages", "tools")}

    def complete(self, provider: str) -> Any:
        return self.client.messages.create(model=ANTHROPIC_MODEL, max_tokens=MAX_TOKENS, **self.request)

    async def acomplete(self, provider: str) -> Any:
        return await self.async_client.messages.create(model=ANTHROPIC_MODEL, max_tokens=MAX_TOKENS, **self.request)

    def stream(self, provider: str) -> tuple[Any, int]:
        count = 0
        with self.client.messages.stream(model=ANTHROPIC_MODEL, max_tokens=MAX_TOKENS, **self.request) as stream:
            for _ in stream:
                count += 1
            return stream.get_final_message(), count

    @staticmethod
    def fields(message: Any) -> Fields:
        text = "".join(block.text for block in message.content if block.type == "text")
        call = next(block for block in message.content if block.type == "tool_use")
        return text, call.name, call.input, (message.usage.input_tokens, message.usage.output_tokens)

    def close(self) -> None:
        self.client.close()

    async def aclose(self) -> None:
        await self.async_client.close()
