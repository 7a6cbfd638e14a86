"""Canonical messages + options -> an Ollama `POST /api/chat` body.

One canonical message becomes one wire message; content is a string, images a list of bare base64
strings, tool calls carry their arguments as a JSON object and no id (Ollama has none), tool results
name the tool they answer. Thinking goes back as `message.thinking` only to the exact model that
produced it. It does not parse responses (response.py) and it never builds `/api/generate` bodies.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from metis_core.adapters._common.hosted import HOSTED_CLASSES, note_foreign_citations, text_for_other_target
from metis_core.adapters._common.lossy import DroppedBlock, record_block_drop
from metis_core.adapters._common.repair import repair_history
from metis_core.adapters._common.replay import origin_mismatch_reason, replayable_to
from metis_core.adapters.base import AdapterOptions, WireRequest
from metis_core.messages import (
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
)
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.models.model_id import parse_model_id

log = logging.getLogger("metis_core.adapters.ollama")

# bound once: a `Role.X` lookup costs ~750 instructions on Python 3.11, and these run per message
_ASSISTANT, _TOOL = Role.ASSISTANT, Role.TOOL
PROVIDER = "ollama"
API = "ollama_chat"
CHAT_PATH = "/api/chat"
ADAPTER_NAME = "ollama/ollama_chat"

_LEVEL_MODELS = ("gpt-oss",)
"""Model families whose `think` takes "low" | "medium" | "high"; all others take a boolean."""
_warned_tool_choice: set[str] = set()


def think_value(model_name: str, effort: str | None) -> bool | str:
    """`think` for a reasoning effort: a level for gpt-oss, `true` for every other thinking model."""
    if model_name.startswith(_LEVEL_MODELS):
        return "low" if effort in (None, "minimal") else str(effort)
    return True


class _Projector:
    """Walks a repaired history once; remembers tool names so results can say which tool ran."""

    def __init__(self, model_name: str, session_id: str, capabilities: Callable[[], AdapterCapabilities],
                 namespace: str = PROVIDER) -> None:
        self.model_name = model_name
        self.namespace = namespace
        """The provider key of the target (a named provider's name), which thinking origins must match."""
        self.session_id = session_id
        self.dropped: list[DroppedBlock] = []
        self._capabilities = capabilities
        self._caps: AdapterCapabilities | None = None
        self._tool_names: dict[str, str] = {}

    def _drop(self, message: Message, index: int, block_type: str, reason: str) -> None:
        record_block_drop(self.dropped, ADAPTER_NAME, self.session_id, message, index, block_type, reason)

    def _image(self, message: Message, index: int, block: ImageBlock) -> str | None:
        """The bare base64 string Ollama wants, or None after logging why the image was dropped."""
        kind = block.source.kind
        if kind == "url":
            self._drop(message, index, "image", "Ollama accepts only inline base64 images; fetch the URL first")
            return None
        if kind == "file_ref":
            self._drop(message, index, "image", "file_ref images must be resolved to base64 before to_wire")
            return None
        if self._caps is None:
            self._caps = self._capabilities()
        if not self._caps.supports_images:
            self._drop(message, index, "image", f"model {self.model_name} does not accept images")
            return None
        accepted = self._caps.accepted_image_media_types
        if accepted and block.media_type not in accepted:
            self._drop(message, index, "image", f"{block.media_type} is not one of {', '.join(accepted)}")
            return None
        data = block.source.data
        if data.startswith("data:"):  # tolerate a data URL stored as base64: Ollama wants the payload only
            data = data.partition(",")[2]
        return data

    def message(self, message: Message) -> dict[str, Any] | None:
        role = message.role
        if role is _ASSISTANT:
            return self._assistant(message)
        if role is _TOOL:
            return self._tool_result(message)
        texts: list[str] = []
        images: list[str] = []
        for index, block in enumerate(message.content):
            if isinstance(block, TextBlock):
                texts.append(block.text)
            elif isinstance(block, ImageBlock):
                image = self._image(message, index, block)
                if image is not None:
                    images.append(image)
            else:
                self._drop(message, index, block.type, f"a {role.value} message cannot carry {block.type}")
        wire: dict[str, Any] = {"role": role.value, "content": "\n".join(texts)}
        if images:
            wire["images"] = images
        return wire

    def _assistant(self, message: Message) -> dict[str, Any] | None:
        texts: list[str] = []
        thinking: list[str] = []
        calls: list[dict[str, Any]] = []
        for index, block in enumerate(message.content):
            if isinstance(block, TextBlock):
                texts.append(block.text)
                note_foreign_citations(self._drop, message, index, block)
            elif isinstance(block, HOSTED_CLASSES):
                text = text_for_other_target(self._drop, message, index, block)  # never a tool call
                if text:
                    texts.append(text)
            elif isinstance(block, ToolUseBlock):
                self._tool_names[block.id] = block.name
                calls.append({"function": {"index": len(calls), "name": block.name, "arguments": block.input}})
            elif isinstance(block, ThinkingBlock):
                if replayable_to(block, self.namespace, API, self.model_name):
                    if block.text:
                        thinking.append(block.text)
                else:
                    self._drop(
                        message, index, "thinking",
                        origin_mismatch_reason(block, self.namespace, API, self.model_name),
                    )
            elif isinstance(block, RedactedThinkingBlock):
                self._drop(message, index, "redacted_thinking", "Ollama has no field for redacted thinking")
            else:
                self._drop(message, index, block.type, f"an assistant message cannot carry {block.type}")
        if not texts and not thinking and not calls:
            return None  # everything was dropped: an empty assistant turn would only confuse the model
        wire: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts)}
        if thinking:
            wire["thinking"] = "".join(thinking)
        if calls:
            wire["tool_calls"] = calls
        return wire

    def _tool_result(self, message: Message) -> dict[str, Any] | None:
        for index, block in enumerate(message.content):
            if not isinstance(block, ToolResultBlock):
                continue
            wire: dict[str, Any] = {"role": "tool", "content": block.text()}
            name = self._tool_names.get(block.tool_use_id)
            if name is not None:
                wire["tool_name"] = name
            images = [
                image
                for part in block.content
                if isinstance(part, ImageBlock) and (image := self._image(message, index, part)) is not None
            ]
            if images:
                wire["images"] = images
            return wire
        return None


def tool_to_wire(tool: ToolDefinition) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.input_schema},
    }


def _tools_allowed(options: AdapterOptions) -> bool:
    """Ollama has no tool_choice: "none" is honoured by not sending tools; forcing a call cannot be."""
    choice = options.tool_choice
    if choice is None or choice == "auto":
        return True
    if choice == "none":
        return False
    key = str(choice)
    if key not in _warned_tool_choice:
        _warned_tool_choice.add(key)
        log.warning("Ollama cannot force a tool call (tool_choice=%s); tools are offered, not required", key)
    return True


def _generation_options(options: AdapterOptions) -> dict[str, Any]:
    wire: dict[str, Any] = {}
    if options.temperature is not None:
        wire["temperature"] = options.temperature
    if options.top_p is not None:
        wire["top_p"] = options.top_p
    if options.max_tokens is not None:
        wire["num_predict"] = options.max_tokens
    if options.stop:
        wire["stop"] = list(options.stop)
    return wire


def build_chat_request(
    messages: list[Message],
    tools: list[ToolDefinition],
    options: AdapterOptions,
    capabilities: Callable[[], AdapterCapabilities],
) -> WireRequest:
    """The whole request. `stream` is always written: Ollama streams when it is left out."""
    model_name = options.model_name
    history = repair_history(messages, session_id=options.session_id)
    projector = _Projector(model_name, options.session_id, capabilities, parse_model_id(options.model).provider)
    wire_messages = [wire for message in history if (wire := projector.message(message)) is not None]
    body: dict[str, Any] = {"model": model_name, "messages": wire_messages, "stream": options.stream}
    if tools and _tools_allowed(options):
        body["tools"] = [tool_to_wire(tool) for tool in tools]
    if options.reasoning_effort is not None or options.thinking_budget_tokens is not None:
        body["think"] = think_value(model_name, options.reasoning_effort)
    if options.response_format is not None:
        schema = options.response_format.get("schema")
        body["format"] = schema if isinstance(schema, dict) else "json"
    generation = _generation_options(options)
    for key, value in options.extra.items():
        if key == "options" and isinstance(value, dict):
            generation.update(value)
        else:
            body[key] = value
    if generation:
        body["options"] = generation
    return WireRequest(path=CHAT_PATH, body=body, stream=options.stream, dropped=projector.dropped)
