"""Canonical messages + tools + options -> a Gemini `generateContent` request body.

System messages are hoisted into `systemInstruction` (one part per text block, in order). Turns
follow Gemini's pairing rules: every tool result becomes a `functionResponse` part (named after
the call it answers), consecutive ones merged into ONE user turn in call order; same-role turns are
merged; a model turn never opens the conversation (an empty user turn is put before it, as
google-genai clients do). Thought signatures go back only to the model that issued them; Gemini 3
gets Google's documented stand-in on a foreign model turn's first call. It does not parse answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import orjson

from metis_core.adapters._common.hosted import HOSTED_CLASSES, note_foreign_citations, replayable, text_for_other_target
from metis_core.adapters._common.lossy import DroppedBlock, record_block_drop
from metis_core.adapters._common.per_tool_cache import PerToolCache
from metis_core.adapters._common.repair import repair_history
from metis_core.adapters._common.replay import origin_mismatch_reason, replayable_to
from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions, WireRequest
from metis_core.adapters.gemini.hosted import gemini_tool_entries, hosted_tool_definitions, replay_part
from metis_core.adapters.gemini.schema import parameters_for
from metis_core.adapters.gemini.signatures import (
    API,
    GEMINI_3_SKIP_SIGNATURE,
    PROVIDER,
    needs_skip_signature,
    signature_table,
    to_urlsafe_base64,
)
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

# bound once: a `Role.X` lookup costs ~750 instructions on Python 3.11, and these run per message
_SYSTEM, _USER, _ASSISTANT = Role.SYSTEM, Role.USER, Role.ASSISTANT
ADAPTER_NAME = "gemini/generate_content"

_EFFORT_BUDGET = {"minimal": 512, "low": 2048, "medium": 8192, "high": 24576}
"""Thinking budgets for models without thinkingLevel (Gemini 2.5), by reasoning effort."""
_TOOL_CHOICE_MODE = {"auto": "AUTO", "none": "NONE", "required": "ANY", "any": "ANY"}


def model_path(model_name: str, *, stream: bool) -> str:
    """`/v1beta/models/{model}:generateContent`; tuned models keep their own `tunedModels/` prefix."""
    resource = model_name if "/" in model_name else f"models/{model_name}"
    method = "streamGenerateContent" if stream else "generateContent"
    return f"/v1beta/{quote(resource, safe='/-._')}:{method}"


def tool_result_response(block: ToolResultBlock) -> dict[str, Any]:
    """Gemini's `response` object: a JSON-object result as is, else {"output": text} / {"error": text}."""
    content = block.content
    only = content[0] if len(content) == 1 else None
    text = only.text if isinstance(only, TextBlock) else block.text()
    if block.is_error:
        return {"error": text}
    if text.startswith("{"):
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
    return {"output": text}


class _Builder:
    """Walks a repaired history once, building `contents` and remembering tool names by id."""

    def __init__(self, options: AdapterOptions, tool_ids: ToolIdMap,
                 capabilities: Callable[[], AdapterCapabilities]) -> None:
        self.model_name = options.model_name
        self.session_id = options.session_id
        self.tool_ids = tool_ids
        self.dropped: list[DroppedBlock] = []
        self.system_parts: list[dict[str, Any]] = []
        self.contents: list[dict[str, Any]] = []
        self._tool_names: dict[str, str] = {}
        self._capabilities = capabilities
        self._images_ok: bool | None = None
        self._skip_signature = needs_skip_signature(self.model_name)

    def drop(self, message: Message, index: int, block_type: str, reason: str) -> None:
        record_block_drop(self.dropped, ADAPTER_NAME, self.session_id, message, index, block_type, reason)

    def _turn(self, role: str, parts: list[dict[str, Any]]) -> None:
        if not parts:
            return
        if self.contents and self.contents[-1]["role"] == role:
            self.contents[-1]["parts"].extend(parts)
        else:
            self.contents.append({"parts": parts, "role": role})

    # --- per role ------------------------------------------------------------------------------

    def add(self, message: Message) -> None:
        role = message.role
        if role is _SYSTEM:
            for block in message.content:
                if isinstance(block, TextBlock):
                    self.system_parts.append({"text": block.text})
        elif role is _USER:
            self._turn("user", self._user_parts(message))
        elif role is _ASSISTANT:
            self._turn("model", self._model_parts(message))
        else:
            self._turn("user", self._tool_parts(message))

    def _image(self, message: Message, index: int, block: ImageBlock) -> dict[str, Any] | None:
        if self._images_ok is None:
            self._images_ok = self._capabilities().supports_images
        if not self._images_ok:
            self.drop(message, index, "image", f"{self.model_name} does not accept images")
            return None
        kind = block.source.kind
        if kind == "base64":
            return {"inlineData": {"data": to_urlsafe_base64(block.source.data), "mimeType": block.media_type}}
        if kind == "url":
            return {"fileData": {"fileUri": block.source.data, "mimeType": block.media_type}}
        self.drop(message, index, "image", "a file_ref image must be read from the workspace before sending")
        return None

    def _user_parts(self, message: Message) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        for index, block in enumerate(message.content):
            if isinstance(block, TextBlock):
                parts.append({"text": block.text})
            elif isinstance(block, ImageBlock):
                part = self._image(message, index, block)
                if part is not None:
                    parts.append(part)
        return parts

    def _tool_parts(self, message: Message) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        for index, block in enumerate(message.content):
            if not isinstance(block, ToolResultBlock):
                continue
            if len(block.content) > 1 or (block.content and isinstance(block.content[0], ImageBlock)):
                for inner in block.content:
                    if isinstance(inner, ImageBlock):
                        self.drop(message, index, "image", "Gemini function responses carry JSON only; "
                                  "the image returned by the tool was not sent")
            response: dict[str, Any] = {"name": self._tool_names.get(block.tool_use_id, "unknown_tool"),
                                        "response": tool_result_response(block)}
            provider_id = self.tool_ids.provider_id(PROVIDER, block.tool_use_id)
            if provider_id is not None:
                response["id"] = provider_id
            parts.append({"functionResponse": response})
        return parts

    def _model_parts(self, message: Message) -> list[dict[str, Any]]:
        table = signature_table(message.metadata.provider_raw)
        replay = table is not None and table.model == self.model_name
        parts: list[dict[str, Any]] = []
        first_call: dict[str, Any] | None = None
        text_ordinal = -1
        for index, block in enumerate(message.content):
            signature: str | None = None
            if isinstance(block, TextBlock):
                text_ordinal += 1
                part: dict[str, Any] = {"text": block.text}
                if any(c.origin is None or not c.origin.same_api(PROVIDER, API) for c in block.citations or ()):
                    note_foreign_citations(self.drop, message, index, block)  # Gemini's own grounding stays in raw
                if table is not None:
                    signature = table.text.get(text_ordinal)
            elif isinstance(block, ToolUseBlock):
                self._tool_names[block.id] = block.name
                call: dict[str, Any] = {"args": block.input, "name": block.name}
                provider_id = self.tool_ids.provider_id(PROVIDER, block.id)
                if provider_id is not None:
                    call["id"] = provider_id
                part = {"functionCall": call}
                if first_call is None:
                    first_call = part
                if table is not None:
                    signature = table.tool_use.get(block.id)
            elif isinstance(block, ThinkingBlock | RedactedThinkingBlock):
                if isinstance(block, ThinkingBlock) and replayable_to(block, PROVIDER, API, self.model_name):
                    part = {"text": block.text, "thought": True}
                    if block.signature:
                        part["thoughtSignature"] = to_urlsafe_base64(block.signature)
                    parts.append(part)
                else:
                    self.drop(message, index, block.type,
                              origin_mismatch_reason(block, PROVIDER, API, self.model_name))
                continue
            elif isinstance(block, HOSTED_CLASSES) and replayable(block, PROVIDER, API):
                part, unsigned = replay_part(block, self.model_name)  # Gemini's own code parts, verbatim
                if unsigned:
                    self.drop(message, index, "thought_signature",
                              f"signed by {PROVIDER}/{API}/{block.origin.model}; a thought signature is only "
                              f"valid there, not at {PROVIDER}/{API}/{self.model_name}")
                parts.append(part)
                continue
            elif isinstance(block, HOSTED_CLASSES):
                text = text_for_other_target(self.drop, message, index, block)  # never a functionCall
                if text:
                    parts.append({"text": text})
                continue
            else:
                continue
            if signature is not None:
                if replay:
                    part["thoughtSignature"] = to_urlsafe_base64(signature)
                else:
                    self.drop(message, index, "thought_signature",
                              f"signed by {table.origin_label() if table else '?'}; a thought signature is "
                              f"only valid there, not at {PROVIDER}/{API}/{self.model_name}")
            parts.append(part)
        if table is not None and table.trailing is not None:
            if replay:
                parts.append({"text": "", "thoughtSignature": to_urlsafe_base64(table.trailing)})
            else:
                self.drop(message, len(message.content), "thought_signature",
                          f"signed by {table.origin_label()}; not valid at {PROVIDER}/{API}/{self.model_name}")
        if first_call is not None and self._skip_signature and "thoughtSignature" not in first_call:
            first_call["thoughtSignature"] = GEMINI_3_SKIP_SIGNATURE
        return parts

    # --- the whole body ------------------------------------------------------------------------

    def finished_contents(self) -> list[dict[str, Any]]:
        """Gemini wants the conversation to open with a user turn; add an empty one if it does not."""
        if not self.contents or self.contents[0]["role"] != "user":
            self.contents.insert(0, {"parts": [{"text": ""}], "role": "user"})
        return self.contents


def _declaration(tool: ToolDefinition) -> dict[str, Any]:
    declaration: dict[str, Any] = {"description": tool.description, "name": tool.name}
    parameters = parameters_for(tool.input_schema, tool.name)
    if parameters is not None:
        declaration["parameters"] = parameters
    return declaration


_declarations = PerToolCache(_declaration)  # converting a schema to Gemini's dialect is done once per tool


def tool_declarations(tools: list[ToolDefinition]) -> list[dict[str, Any]]:
    return [{"functionDeclarations": [_declarations(tool) for tool in tools]}]


def generation_config(options: AdapterOptions) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if options.max_tokens is not None:
        config["maxOutputTokens"] = options.max_tokens
    if options.temperature is not None:
        config["temperature"] = options.temperature
    if options.top_p is not None:
        config["topP"] = options.top_p
    if options.stop:
        config["stopSequences"] = list(options.stop)
    if options.thinking_budget_tokens is not None:
        config["thinkingConfig"] = {"includeThoughts": True, "thinkingBudget": options.thinking_budget_tokens}
    elif options.reasoning_effort is not None:
        if needs_skip_signature(options.model_name):  # Gemini 3 takes a level, not a budget
            config["thinkingConfig"] = {"includeThoughts": True, "thinkingLevel": options.reasoning_effort.upper()}
        else:
            config["thinkingConfig"] = {"includeThoughts": True,
                                        "thinkingBudget": _EFFORT_BUDGET[options.reasoning_effort]}
    if options.response_format is not None:
        config["responseMimeType"] = "application/json"
        config["responseJsonSchema"] = options.response_format.get("schema", {})
    return config


def tool_config(choice: str | dict[str, Any] | None) -> dict[str, Any] | None:
    if choice is None:
        return None
    if isinstance(choice, dict):
        return {"functionCallingConfig": {"allowedFunctionNames": [str(choice["name"])], "mode": "ANY"}}
    return {"functionCallingConfig": {"mode": _TOOL_CHOICE_MODE.get(choice, "AUTO")}}


def build_request(
    messages: list[Message],
    tools: list[ToolDefinition],
    options: AdapterOptions,
    tool_ids: ToolIdMap | None,
    capabilities: Callable[[], AdapterCapabilities],
) -> WireRequest:
    builder = _Builder(options, tool_ids if tool_ids is not None else ToolIdMap(), capabilities)
    for message in repair_history(messages, session_id=options.session_id):
        builder.add(message)
    body: dict[str, Any] = {"contents": builder.finished_contents(), "generationConfig": generation_config(options)}
    if builder.system_parts:
        body["systemInstruction"] = {"parts": builder.system_parts, "role": "user"}
    if tools:
        body["tools"] = tool_declarations(tools)
        choice = tool_config(options.tool_choice)
        if choice is not None:
            body["toolConfig"] = choice
    hosted = hosted_tool_definitions(options.hosted_tools, options.model) + gemini_tool_entries(options.provider_tools)
    if hosted:
        body["tools"] = [*body.get("tools", []), *hosted]
    for key, value in options.extra.items():  # provider-only knobs; generationConfig merges one level
        if key == "generationConfig" and isinstance(value, dict):
            body["generationConfig"] = {**body["generationConfig"], **value}
        else:
            body[key] = value
    return WireRequest(
        path=model_path(options.model_name, stream=options.stream),
        body=body,
        stream=options.stream,
        query={"alt": "sse"} if options.stream else {},
        dropped=builder.dropped,
    )
