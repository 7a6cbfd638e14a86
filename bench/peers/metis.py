"""metis-core under test: the canonical conversation, ModelClient calls and the stream consumer.

Builds the 40-message conversation as canonical Messages once, makes the calls the suite times
(complete / acomplete / stream / astream through one ModelClient per provider set, pointed at the
local server) and reduces each result to the fields checked against the expected answer.
It measures nothing itself: timing lives in the cases.
"""

from __future__ import annotations

from typing import Any

from bench.scenarios import (
    ANTHROPIC_MODEL,
    GEMINI_MODEL,
    MAX_TOKENS,
    OLLAMA_MODEL,
    OPENAI_MODEL,
    OPENROUTER_MODEL,
    TOOLS,
    conversation,
)
from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.client import ModelClient
from metis_core.messages import (
    Message,
    MessageComplete,
    Role,
    TextBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
)
from metis_core.messages.metadata import MessageMetadata, RoutingDecisionRecord, RoutingMode, Usage
from metis_core.transport.retry import RetryPolicy

NAME = "metis-core"

MODELS: dict[str, str] = {
    "anthropic": f"anthropic:{ANTHROPIC_MODEL}",
    "openai": f"openai:{OPENAI_MODEL}",
    "openai_responses": f"openai_responses:{OPENAI_MODEL}",
    "gemini": f"gemini:{GEMINI_MODEL}",
    "ollama": f"ollama:{OLLAMA_MODEL}",
    "openrouter": f"openrouter:{OPENROUTER_MODEL}",
}
"""The canonical model id the suite uses for each provider key."""


ASSISTANT_METADATA = MessageMetadata(
    model=MODELS["anthropic"],
    provider="anthropic",
    routing=RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model=MODELS["anthropic"], reason="bench"),
    usage=Usage(input_tokens=900, output_tokens=60),
    stop_reason="tool_use",
)
"""What an earlier assistant turn carries: who answered and what it cost (required when COMPLETE)."""


def base_urls(server: str) -> dict[str, str]:
    """Each provider's base URL on the local server, as its real API nests its paths."""
    return {
        "anthropic": server,
        "openai": f"{server}/v1",
        "openai_responses": f"{server}/v1",
        "gemini": server,
        "ollama": server,
        "openrouter": f"{server}/api/v1",
    }


def canonical_tools() -> list[ToolDefinition]:
    return [ToolDefinition(name=t.name, description=t.description, input_schema=t.schema) for t in TOOLS]


def canonical_conversation() -> list[Message]:
    """The 40 messages as canonical Messages; tool ids are `tu_<core>`."""
    out: list[Message] = []
    for turn in conversation():
        if turn.role == "tool":
            assert turn.tool_result is not None
            core, _, output = turn.tool_result
            block = ToolResultBlock(tool_use_id=f"tu_{core}", content=[TextBlock(text=output)])
            metadata = MessageMetadata(parent_tool_use_id=f"tu_{core}")
            out.append(Message(role=Role.TOOL, content=[block], metadata=metadata))
            continue
        content: list[Any] = [TextBlock(text=turn.text)]
        if turn.tool_call is not None:
            core, name, args = turn.tool_call
            content.append(ToolUseBlock(id=f"tu_{core}", name=name, input=args))
        role = Role(turn.role)
        metadata = ASSISTANT_METADATA.model_copy(deep=True) if role is Role.ASSISTANT else MessageMetadata()
        out.append(Message(role=role, content=content, metadata=metadata))
    return out


def options_for(provider: str, *, stream: bool = False) -> AdapterOptions:
    return AdapterOptions(model=MODELS[provider], max_tokens=MAX_TOKENS, stream=stream)


def make_client(server: str) -> ModelClient:
    """One client for every provider, pointed at the local server, with no retries (a failure is a bug)."""
    keys = {provider: "sk-bench-not-a-real-key" for provider in MODELS}
    return ModelClient(base_urls=base_urls(server), api_keys=keys, retry=RetryPolicy(max_retries=0))


def fields_of(message: Message) -> tuple[str, str, Any, tuple[int, int]]:
    """(text, tool name, tool args, (input, output) tokens) of a final message."""
    uses = message.tool_uses()
    usage = message.metadata.usage
    tokens = (usage.input_tokens, usage.output_tokens) if usage is not None else (-1, -1)
    return message.text(), uses[0].name if uses else "", uses[0].input if uses else None, tokens


PROVIDERS = ("anthropic", "openai")
STREAM_PROVIDERS = tuple(MODELS)


class MetisCaller:
    """The calls the suite times, bound to one client, conversation and tool list."""

    fields = staticmethod(fields_of)

    def __init__(self, server: str) -> None:
        self.client = make_client(server)
        self.messages = canonical_conversation()
        self.tools = canonical_tools()

    def complete(self, provider: str) -> Message:
        return self.client.complete(self.messages, tools=self.tools, options=options_for(provider),
                                    tool_ids=ToolIdMap())

    async def acomplete(self, provider: str) -> Message:
        return await self.client.acomplete(self.messages, tools=self.tools, options=options_for(provider),
                                           tool_ids=ToolIdMap())

    def stream(self, provider: str) -> tuple[Message, int]:
        """The final message and how many canonical events the stream produced."""
        final: Message | None = None
        count = 0
        for event in self.client.stream(self.messages, tools=self.tools, options=options_for(provider, stream=True),
                                        tool_ids=ToolIdMap()):
            count += 1
            if isinstance(event, MessageComplete):
                final = event.message
        assert final is not None, "the stream ended without message_complete"
        return final, count

    async def astream(self, provider: str) -> tuple[Message, int]:
        final: Message | None = None
        count = 0
        async for event in self.client.astream(self.messages, tools=self.tools,
                                               options=options_for(provider, stream=True), tool_ids=ToolIdMap()):
            count += 1
            if isinstance(event, MessageComplete):
                final = event.message
        assert final is not None, "the stream ended without message_complete"
        return final, count

    def close(self) -> None:
        self.client.close()

    async def aclose(self) -> None:
        await self.client.aclose()
