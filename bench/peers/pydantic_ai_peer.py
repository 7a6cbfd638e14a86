"""Pydantic AI as a peer, through its direct model API (`pydantic_ai.direct`), not an Agent.

An Agent would run the tool the model asks for and call the model again; the direct API makes
exactly one model request, as ModelClient does. The conversation is built as Pydantic AI's own
ModelRequest / ModelResponse parts; AnthropicModel and OpenAIChatModel point at the local
server through their providers' `base_url`. Imported only inside bench/.venv.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import version
from typing import Any

from genai_prices import calc_price
from pydantic_ai import direct
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import RequestUsage

from bench.scenarios import ANTHROPIC_MODEL, MAX_TOKENS, OPENAI_MODEL, TOOLS, conversation

NAME = f"pydantic-ai {version('pydantic-ai-slim')}"
PROVIDERS = ("anthropic", "openai")
STREAM_PROVIDERS = ("anthropic", "openai")
Fields = tuple[str, str, Any, tuple[int, int]]


def pydantic_ai_conversation(id_prefix: str) -> list[ModelMessage]:
    """The 40 messages as Pydantic AI parts; tool call ids carry the provider's prefix."""
    out: list[ModelMessage] = []
    for turn in conversation():
        if turn.role == "system":
            out.append(ModelRequest(parts=[SystemPromptPart(content=turn.text)]))
        elif turn.role == "user":
            previous = out[-1] if out else None
            if isinstance(previous, ModelRequest) and isinstance(previous.parts[-1], SystemPromptPart):
                previous.parts.append(UserPromptPart(content=turn.text))
            else:
                out.append(ModelRequest(parts=[UserPromptPart(content=turn.text)]))
        elif turn.role == "assistant":
            parts: list[Any] = [TextPart(content=turn.text)]
            if turn.tool_call is not None:
                core, name, args = turn.tool_call
                parts.append(ToolCallPart(tool_name=name, args=args, tool_call_id=f"{id_prefix}{core}"))
            out.append(ModelResponse(parts=parts, model_name=ANTHROPIC_MODEL))
        else:
            assert turn.tool_result is not None
            core, name, output = turn.tool_result
            out.append(ModelRequest(parts=[ToolReturnPart(tool_name=name, content=output,
                                                          tool_call_id=f"{id_prefix}{core}")]))
    return out


class PydanticAICaller:
    def __init__(self, server: str) -> None:
        key = "sk-bench-not-a-real-key"
        self.models = {
            "anthropic": AnthropicModel(ANTHROPIC_MODEL, provider=AnthropicProvider(base_url=server, api_key=key)),
            "openai": OpenAIChatModel(OPENAI_MODEL, provider=OpenAIProvider(base_url=f"{server}/v1", api_key=key)),
        }
        self.messages = {"anthropic": pydantic_ai_conversation("toolu_"), "openai": pydantic_ai_conversation("call_")}
        tools = [ToolDefinition(name=t.name, description=t.description, parameters_json_schema=t.schema)
                 for t in TOOLS]
        self.parameters = ModelRequestParameters(function_tools=tools)
        self.settings = ModelSettings(max_tokens=MAX_TOKENS)

    def complete(self, provider: str) -> ModelResponse:
        return direct.model_request_sync(self.models[provider], self.messages[provider],
                                         model_settings=self.settings, model_request_parameters=self.parameters)

    async def acomplete(self, provider: str) -> ModelResponse:
        return await direct.model_request(self.models[provider], self.messages[provider],
                                          model_settings=self.settings, model_request_parameters=self.parameters)

    def stream(self, provider: str) -> tuple[ModelResponse, int]:
        count = 0
        with direct.model_request_stream_sync(self.models[provider], self.messages[provider],
                                              model_settings=self.settings,
                                              model_request_parameters=self.parameters) as stream:
            for _ in stream:
                count += 1
            return stream.response, count

    @staticmethod
    def fields(response: ModelResponse) -> Fields:
        text = "".join(part.content for part in response.parts if isinstance(part, TextPart))
        call = next(part for part in response.parts if isinstance(part, ToolCallPart))
        return text, call.tool_name, call.args_as_dict(), (response.usage.input_tokens, response.usage.output_tokens)

    def close(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


def cost_action(input_tokens: int, output_tokens: int) -> Callable[[], Any]:
    """Costing one response as Pydantic AI does: genai-prices' `calc_price` on the request usage."""
    usage = RequestUsage(input_tokens=input_tokens, output_tokens=output_tokens)
    return lambda: calc_price(usage, model_ref=ANTHROPIC_MODEL, provider_id="anthropic").total_price
