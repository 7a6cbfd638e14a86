"""Canonical messages, tools and options -> a Bedrock Converse / ConverseStream request.

The model id (a base model id, an inference profile id such as `us.anthropic...`, or an ARN) goes
URL-encoded into the path; the body holds `messages`, `system`, `inferenceConfig`, `toolConfig`
and, for Claude, `additionalModelRequestFields.thinking`. System messages are hoisted; TOOL
messages become toolResult blocks of a user turn; same-role turns are merged. Reasoning replays
to the model that signed it, and Claude thinking signed on Anthropic direct or Vertex replays to the
same Claude model here; what Converse cannot take (other reasoning, URL or `file_ref` images,
another provider's citations) is dropped through the lossy log. A cache breakpoint on a
message (provider_raw anthropic.cache_control or bedrock.cache_point) becomes a `cachePoint` block.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

from metis_core.adapters._common.hosted import HOSTED_CLASSES, cited, note_foreign_citations, text_for_other_target
from metis_core.adapters._common.lossy import DroppedBlock, record_block_drop
from metis_core.adapters._common.platform_origin import claude_signature_travels, redacted_data
from metis_core.adapters._common.repair import repair_history
from metis_core.adapters._common.replay import origin_mismatch_reason, replayable_to
from metis_core.adapters._common.tool_ids import RequestToolIds, ToolIdMap
from metis_core.adapters.base import AdapterOptions, WireRequest
from metis_core.errors import ModelIdError, UnknownModelError
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

if TYPE_CHECKING:
    from metis_core.adapters.base import Adapter
    from metis_core.models.capabilities import AdapterCapabilities

_ASSISTANT: Final = Role.ASSISTANT  # bound once: a `Role.X` lookup costs ~750 instructions on Python 3.11
_SYSTEM: Final = Role.SYSTEM
API: Final = "converse"
ADAPTER_NAME: Final = "bedrock/converse"
CACHE_POINT: Final = {"cachePoint": {"type": "default"}}
DEFAULT_MAX_TOKENS_CAP: Final = 16_384
EFFORT_BUDGETS: Final[dict[str, int]] = {"minimal": 1_024, "low": 2_048, "medium": 8_192, "high": 16_384}
IMAGE_FORMATS: Final = {"image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg", "image/gif": "gif",
                        "image/webp": "webp"}


def model_path(model_name: str, stream: bool) -> str:
    """`/model/<id>/converse`: the id percent-encoded whole, so an ARN's `:` and `/` stay in one segment."""
    return f"/model/{quote(model_name, safe='')}/{'converse-stream' if stream else 'converse'}"


def has_cache_point(message: Message) -> bool:
    raw = message.metadata.provider_raw
    if not raw:
        return False
    bedrock, anthropic = raw.get("bedrock"), raw.get("anthropic")
    return bool((isinstance(bedrock, dict) and bedrock.get("cache_point"))
                or (isinstance(anthropic, dict) and anthropic.get("cache_control")))


def takes_anthropic_fields(model_name: str) -> bool:
    """Claude on Bedrock (base id, inference profile or its ARN) takes Anthropic's `thinking` field."""
    return "anthropic.claude" in model_name


class _Builder:
    """State of one to_wire call: the target, the id map, the drop list."""

    def __init__(self, provider: str, options: AdapterOptions, tool_ids: ToolIdMap,
                 caps: AdapterCapabilities | None) -> None:
        self.provider = provider
        self.model_name = options.model_name
        self.session_id = options.session_id
        self.caps = caps
        self.dropped: list[DroppedBlock] = []
        self.wire_id = RequestToolIds(tool_ids, provider, "anthropic")  # [a-zA-Z0-9_-]{1,64}, as Anthropic's

    def drop(self, message: Message, index: int, block_type: str, reason: str) -> None:
        record_block_drop(self.dropped, ADAPTER_NAME, self.session_id, message, index, block_type, reason)

    def image(self, message: Message, index: int, block: ImageBlock) -> dict[str, Any] | None:
        if self.caps is not None and not self.caps.supports_images:
            self.drop(message, index, "image", f"{self.model_name} takes no image input")
            return None
        image_format = IMAGE_FORMATS.get(block.media_type)
        if block.source.kind != "base64" or image_format is None:
            self.drop(message, index, "image", "Converse takes images as bytes (png, jpeg, gif, webp) or from S3; "
                      f"a {block.source.kind} {block.media_type} image must be inlined by the caller")
            return None
        return {"image": {"format": image_format, "source": {"bytes": block.source.data}}}

    def text(self, message: Message, index: int, block: TextBlock) -> dict[str, Any] | None:
        if block.citations:
            citations = cited(block, self.provider, API)
            if len(citations) != len(block.citations):
                note_foreign_citations(self.drop, message, index, block)
            if citations:
                return {"citationsContent": {"content": [{"text": block.text}], "citations": citations}}
        return {"text": block.text} if block.text else None

    def tool_result(self, message: Message, index: int, block: ToolResultBlock) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        for item in block.content:
            if isinstance(item, TextBlock):
                if item.text:
                    content.append({"text": item.text})
            else:
                image = self.image(message, index, item)
                if image is not None:
                    content.append(image)
        result: dict[str, Any] = {"toolUseId": self.wire_id(block.tool_use_id), "content": content or [{"text": ""}]}
        if block.is_error:
            result["status"] = "error"
        return {"toolResult": result}

    def reasoning(self, message: Message, index: int,
                  block: ThinkingBlock | RedactedThinkingBlock) -> dict[str, Any] | None:
        if not (replayable_to(block, self.provider, API, self.model_name)
                or claude_signature_travels(block.origin, self.model_name)):
            self.drop(message, index, block.type, origin_mismatch_reason(block, self.provider, API, self.model_name))
            return None
        if isinstance(block, RedactedThinkingBlock):
            return {"reasoningContent": {"redactedContent": redacted_data(block, API)}}
        reasoning: dict[str, Any] = {"text": block.text}
        if block.signature is not None:
            reasoning["signature"] = block.signature
        return {"reasoningContent": {"reasoningText": reasoning}}

    def blocks(self, message: Message) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for index, block in enumerate(message.content):
            wire: dict[str, Any] | None = None
            if isinstance(block, TextBlock):
                wire = self.text(message, index, block)
            elif isinstance(block, ToolUseBlock):
                if message.role is _ASSISTANT:
                    wire = {"toolUse": {"toolUseId": self.wire_id(block.id), "name": block.name,
                                        "input": block.input}}
            elif isinstance(block, ToolResultBlock):
                wire = self.tool_result(message, index, block)
            elif isinstance(block, ImageBlock):
                wire = self.image(message, index, block)
            elif isinstance(block, ThinkingBlock | RedactedThinkingBlock):
                wire = self.reasoning(message, index, block)
            elif isinstance(block, HOSTED_CLASSES):
                told = text_for_other_target(self.drop, message, index, block)  # Converse runs no hosted tools
                wire = {"text": told} if told else None
            if wire is not None:
                out.append(wire)
        if out and has_cache_point(message):
            out.append(dict(CACHE_POINT))
        return out


def _system(builder: _Builder, messages: list[Message]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for message in messages:
        for index, block in enumerate(message.content):
            if isinstance(block, TextBlock):
                if block.text:
                    blocks.append({"text": block.text})
            else:
                builder.drop(message, index, block.type, "Converse's system prompt holds text only")
        if blocks and has_cache_point(message):
            blocks.append(dict(CACHE_POINT))
    return blocks


def _turns(builder: _Builder, messages: list[Message]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for message in messages:
        blocks = builder.blocks(message)
        if not blocks:
            continue
        role = "assistant" if message.role is _ASSISTANT else "user"
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)  # Converse wants strictly alternating turns
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def _tool_config(tools: list[ToolDefinition], options: AdapterOptions) -> dict[str, Any]:
    config: dict[str, Any] = {"tools": [
        {"toolSpec": {"name": t.name, "description": t.description or t.name, "inputSchema": {"json": t.input_schema}}}
        for t in tools
    ] + list(options.provider_tools)}
    choice = options.tool_choice
    if isinstance(choice, dict):
        config["toolChoice"] = {"tool": {"name": choice["name"]}}
    elif choice == "required":
        config["toolChoice"] = {"any": {}}
    elif choice == "auto":
        config["toolChoice"] = {"auto": {}}
    return config  # "none" has no Converse form: the tools stay offered (a history with tool calls needs them)


def _capabilities(adapter: Adapter, model: str) -> AdapterCapabilities | None:
    try:
        return adapter.capabilities(model)
    except (UnknownModelError, ModelIdError):
        return None


def build_request(adapter: Adapter, messages: list[Message], tools: list[ToolDefinition], options: AdapterOptions,
                  tool_ids: ToolIdMap | None) -> WireRequest:
    caps = _capabilities(adapter, options.model)
    builder = _Builder(adapter.provider, options, tool_ids if tool_ids is not None else ToolIdMap(), caps)
    history = repair_history(messages, session_id=options.session_id)
    system = [m for m in history if m.role is _SYSTEM]
    body: dict[str, Any] = {"messages": _turns(builder, [m for m in history if m.role is not _SYSTEM])}
    system_blocks = _system(builder, system)
    if system_blocks:
        body["system"] = system_blocks
    budget = options.thinking_budget_tokens
    if budget is None and options.reasoning_effort is not None and (caps is None or caps.supports_thinking):
        budget = EFFORT_BUDGETS[options.reasoning_effort]
    if not takes_anthropic_fields(builder.model_name):
        budget = None  # other families take reasoning settings of their own, through options.extra
    inference: dict[str, Any] = {}
    max_tokens = options.max_tokens
    if max_tokens is None and caps is not None:
        max_tokens = min(caps.max_output_tokens, DEFAULT_MAX_TOKENS_CAP)
    if budget is not None and (max_tokens is None or max_tokens <= budget):
        max_tokens = budget + DEFAULT_MAX_TOKENS_CAP // 2
    if max_tokens is not None:
        inference["maxTokens"] = max_tokens
    if options.temperature is not None:
        inference["temperature"] = options.temperature
    if options.top_p is not None:
        inference["topP"] = options.top_p
    if options.stop:
        inference["stopSequences"] = list(options.stop)
    if inference:
        body["inferenceConfig"] = inference
    if tools or options.provider_tools:
        body["toolConfig"] = _tool_config(tools, options)
    if budget is not None:
        body["additionalModelRequestFields"] = {"thinking": {"type": "enabled", "budget_tokens": budget}}
    if options.extra:
        body.update(options.extra)  # e.g. guardrailConfig, performanceConfig, promptVariables
    return WireRequest(path=model_path(builder.model_name, options.stream), body=body, stream=options.stream,
                       headers={"accept": "application/vnd.amazon.eventstream" if options.stream
                                else "application/json"},
                       dropped=builder.dropped)
