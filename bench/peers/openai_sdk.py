"""The official `openai` SDK as a peer: Chat Completions, sync, async and the streaming helper.

Sends the conversation as the OpenAI message dicts a user of the SDK would hold (the hand-written
mapping's output), with `base_url` pointed at the local server. Streaming uses
`chat.completions.stream()`, the SDK's own accumulator, so the final message is built by the SDK
as metis builds its own. Imported only inside bench/.venv, where the SDK is installed.
"""

from __future__ import annotations

from typing import Any

import openai
import orjson

from bench import handwritten
from bench.peers.metis import canonical_conversation
from bench.scenarios import MAX_TOKENS, OPENAI_MODEL

NAME = f"openai SDK {openai.__version__}"
PROVIDERS = ("openai",)
STREAM_PROVIDERS = ("openai",)
Fields = tuple[str, str, Any, tuple[int, int]]


class OpenAISDKCaller:
    def __init__(self, server: str) -> None:
        self.client = openai.OpenAI(base_url=f"{server}/v1", api_key="sk-bench-not-a-real-key", max_retries=0)
        self.async_client = openai.AsyncOpenAI(base_url=f"{server}/v1", api_key="sk-bench-not-a-real-key",
                                               max_retries=0)
        self.messages = handwritten.openai_messages(canonical_conversation())
        self.tools = handwritten.openai_tools()

    def complete(self, provider: str) -> Any:
        return self.client.chat.completions.create(model=OPENAI_MODEL, messages=self.messages, tools=self.tools,
                                                   max_completion_tokens=MAX_TOKENS)

    async def acomplete(self, provider: str) -> Any:
        return await self.async_client.chat.completions.create(
            model=OPENAI_MODEL, messages=self.messages, tools=self.tools, max_completion_tokens=MAX_TOKENS
        )

    def stream(self, provider: str) -> tuple[Any, int]:
        count = 0
        with self.client.chat.completions.stream(
            model=OPENAI_MODEL, messages=self.messages, tools=self.tools, max_completion_tokens=MAX_TOKENS,
            stream_options={"include_usage": True},
        ) as stream:
            for _ in stream:
                count += 1
            return stream.get_final_completion(), count

    @staticmethod
    def fields(completion: Any) -> Fields:
        message = completion.choices[0].message
        call = message.tool_calls[0].function
        usage = completion.usage
        return (message.content, call.name, orjson.loads(call.arguments),
                (usage.prompt_tokens, usage.completion_tokens))

    def close(self) -> None:
        self.client.close()

    async def aclose(self) -> None:
        await self.async_client.close()
