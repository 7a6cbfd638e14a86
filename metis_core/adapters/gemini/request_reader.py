"""A Gemini `generateContent` request body -> canonical messages, tools and options.

For inbound gateway requests and imports. The inverse of request.py: `systemInstruction` becomes
one system message; `functionResponse` parts become TOOL messages paired with the calls they answer
(by `id` when present, else the next unanswered call of that name); signatures are kept as
request.py expects them (standard base64). Both camelCase and the snake_case inner keys Vertex
clients send (`file_uri`, `mime_type`) are accepted. Gemini's own work in a model turn (code, tools
Google ran, generated images) becomes hosted blocks, its tool entries `options.provider_tools`. What has
no canonical form (video, other built-in tools, unmapped config) is kept in `options.extra` when
Gemini-only, or dropped with a WARN.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import orjson

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.gemini.hosted import is_hosted_tool_entry
from metis_core.adapters.gemini.hosted_parts import HostedPartReader, is_hosted_part
from metis_core.adapters.gemini.request import tool_config
from metis_core.adapters.gemini.schema import from_gemini_schema
from metis_core.adapters.gemini.signatures import API, PROVIDER, RAW_KEY, SignatureTable, to_standard_base64
from metis_core.errors import InvalidRequestError
from metis_core.messages import (
    BlockOrigin,
    ImageBlock,
    ImageSource,
    Message,
    MessageMetadata,
    Role,
    RoutingDecisionRecord,
    RoutingMode,
    TextBlock,
    ThinkingBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)

log = logging.getLogger("metis_core.adapters.gemini")

IMPORTED_ROUTING = RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model="",
                                         reason="read from a Gemini request (not routed by metis)")
_OPTION_KEYS = {"maxOutputTokens": "max_tokens", "temperature": "temperature", "topP": "top_p",
                "stopSequences": "stop"}
_CHOICE_BY_MODE = {"AUTO": "auto", "NONE": "none", "ANY": "required"}


@dataclass(slots=True)
class GeminiRequestRead:
    messages: list[Message]
    tools: list[ToolDefinition]
    options: AdapterOptions
    skipped: list[str] = field(default_factory=list)
    """What had no canonical form and was left out (each also logged at WARN)."""


def _get(obj: dict[str, Any], camel: str, snake: str) -> Any:
    return obj[camel] if camel in obj else obj.get(snake)


class _Reader:
    def __init__(self, model: str, tool_ids: ToolIdMap, session_id: str) -> None:
        self.model = model
        self.model_name = model.partition(":")[2]
        self.tool_ids = tool_ids
        self.session_id = session_id
        self.messages: list[Message] = []
        self.skipped: list[str] = []
        self._pending: list[tuple[str, str, str | None]] = []  # (canonical id, name, provider id) unanswered

    def skip(self, what: str) -> None:
        self.skipped.append(what)
        log.warning("Gemini request: %s has no canonical form and was left out", what,
                    extra={"adapter": "gemini", "session_id": self.session_id})

    # --- parts ---------------------------------------------------------------------------------

    def _media(self, part: dict[str, Any]) -> ImageBlock | None:
        inline = _get(part, "inlineData", "inline_data")
        if isinstance(inline, dict):
            mime = str(_get(inline, "mimeType", "mime_type") or "")
            source = ImageSource(kind="base64", data=to_standard_base64(str(inline.get("data", ""))))
        else:
            file_data = _get(part, "fileData", "file_data")
            mime = str(_get(file_data, "mimeType", "mime_type") or "")
            source = ImageSource(kind="url", data=str(_get(file_data, "fileUri", "file_uri") or ""))
        if not mime.startswith("image/"):
            self.skip(f"a {mime or 'untyped'} media part (only images are canonical)")
            return None
        return ImageBlock(source=source, media_type=mime)

    def _user(self, parts: list[dict[str, Any]]) -> None:
        results: list[Message] = []
        blocks: list[Any] = []
        for part in parts:
            response = _get(part, "functionResponse", "function_response")
            if isinstance(response, dict):
                results.append(self._tool_result(response))
            elif "text" in part:
                blocks.append(TextBlock(text=str(part["text"])))
            elif any(k in part for k in ("inlineData", "inline_data", "fileData", "file_data")):
                image = self._media(part)
                if image is not None:
                    blocks.append(image)
            else:
                self.skip(f"a user part with keys {sorted(part)}")
        self.messages.extend(results)
        if blocks:
            self.messages.append(Message(role=Role.USER, session_id=self.session_id, content=blocks))

    def _tool_result(self, response: dict[str, Any]) -> Message:
        name = str(response.get("name", ""))
        provider_id = response.get("id") if isinstance(response.get("id"), str) else None
        match = next((i for i, p in enumerate(self._pending) if provider_id and p[2] == provider_id), None)
        if match is None:
            match = next((i for i, p in enumerate(self._pending) if p[1] == name), None)
        if match is None:
            raise InvalidRequestError(
                f"functionResponse for {name!r} answers no earlier functionCall; every response must "
                "follow the model turn that made the call", provider=PROVIDER)
        canonical_id = self._pending.pop(match)[0]
        value = response.get("response")
        value = value if isinstance(value, dict) else {}
        is_error = set(value) == {"error"} and isinstance(value["error"], str)
        if set(value) in ({"output"}, {"error"}) and isinstance(next(iter(value.values())), str):
            text = str(next(iter(value.values())))
        else:
            text = orjson.dumps(value).decode()
        return Message(
            role=Role.TOOL, session_id=self.session_id,
            content=[ToolResultBlock(tool_use_id=canonical_id, content=[TextBlock(text=text)], is_error=is_error)],
            metadata=MessageMetadata(parent_tool_use_id=canonical_id),
        )

    def _model(self, parts: list[dict[str, Any]]) -> None:
        origin = BlockOrigin(provider=PROVIDER, api=API, model=self.model_name)
        table = SignatureTable(model=self.model_name)
        blocks: list[Any] = []
        text_ordinal = -1
        hosted_parts = HostedPartReader()
        for part in parts:
            raw_signature = _get(part, "thoughtSignature", "thought_signature")
            signature = to_standard_base64(raw_signature) if isinstance(raw_signature, str) else None
            call = _get(part, "functionCall", "function_call")
            if isinstance(call, dict):
                provider_id = call.get("id") if isinstance(call.get("id"), str) else None
                canonical_id = self.tool_ids.canonical_for(PROVIDER, provider_id)
                name = str(call.get("name", ""))
                blocks.append(ToolUseBlock(id=canonical_id, name=name, input=call.get("args") or {}))
                self._pending.append((canonical_id, name, provider_id))
                if signature is not None:
                    table.tool_use[canonical_id] = signature
            elif is_hosted_part(part):  # code or a tool Gemini ran itself: kept as sent, replayed as is
                blocks.append(hosted_parts.builder(part)(dict(part), "", origin))
            elif part.get("thought") is True:
                blocks.append(ThinkingBlock(text=str(part.get("text", "")), signature=signature,
                                            origin=origin if signature is not None else None))
            elif "text" in part and part["text"] == "" and signature is not None:
                table.trailing = signature
            elif "text" in part:
                text_ordinal += 1
                blocks.append(TextBlock(text=str(part["text"])))
                if signature is not None:
                    table.text[text_ordinal] = signature
            else:
                self.skip(f"a model part with keys {sorted(part)}")
        metadata = MessageMetadata(
            model=self.model, provider=PROVIDER,
            routing=IMPORTED_ROUTING.model_copy(update={"chosen_model": self.model}),
            usage=Usage(), stop_reason="tool_use" if self._pending else "end_turn",
            provider_raw={RAW_KEY: table.to_raw()} if table else None,
        )
        self.messages.append(Message(role=Role.ASSISTANT, session_id=self.session_id,
                                     content=blocks or [TextBlock(text="")], metadata=metadata))

    def contents(self, contents: list[Any]) -> None:
        for content in contents:
            if not isinstance(content, dict):
                raise InvalidRequestError("every contents item must be an object with role and parts",
                                          provider=PROVIDER)
            parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
            if content.get("role") == "model":
                self._model(parts)
            else:
                self._user(parts)


def _tools(raw_tools: list[Any]) -> tuple[list[ToolDefinition], list[Any]]:
    tools: list[ToolDefinition] = []
    others: list[Any] = []
    for entry in raw_tools:
        declarations = _get(entry, "functionDeclarations", "function_declarations") if isinstance(entry, dict) else None
        if not isinstance(declarations, list):
            others.append(entry)
            continue
        for declaration in declarations:
            json_schema = _get(declaration, "parametersJsonSchema", "parameters_json_schema")
            parameters = declaration.get("parameters")
            if isinstance(json_schema, dict):
                schema = dict(json_schema)
            elif isinstance(parameters, dict):
                schema = from_gemini_schema(parameters)
            else:
                schema = {"type": "object", "properties": {}}
            tools.append(ToolDefinition(name=str(declaration.get("name", "")),
                                        description=str(declaration.get("description", "")), input_schema=schema))
    return tools, others


def _options(body: dict[str, Any], model: str) -> AdapterOptions:
    options = AdapterOptions(model=model)
    config = dict(_get(body, "generationConfig", "generation_config") or {})
    for wire_key, attr in _OPTION_KEYS.items():
        if wire_key in config:
            setattr(options, attr, config.pop(wire_key))
    thinking = config.get("thinkingConfig")
    if isinstance(thinking, dict) and thinking.get("includeThoughts") is True:
        if set(thinking) == {"includeThoughts", "thinkingBudget"}:
            options.thinking_budget_tokens = int(thinking["thinkingBudget"])
            del config["thinkingConfig"]
        elif set(thinking) == {"includeThoughts", "thinkingLevel"} and str(thinking["thinkingLevel"]).lower() in (
                "minimal", "low", "medium", "high"):
            options.reasoning_effort = str(thinking["thinkingLevel"]).lower()  # type: ignore[assignment]
            del config["thinkingConfig"]
    schema = config.get("responseJsonSchema", config.get("responseSchema"))
    if config.get("responseMimeType") == "application/json" and isinstance(schema, dict):
        json_schema = schema if "responseJsonSchema" in config else from_gemini_schema(schema)
        options.response_format = {"name": "response", "schema": json_schema}
        for key in ("responseMimeType", "responseJsonSchema", "responseSchema"):
            config.pop(key, None)
    if config:
        options.extra["generationConfig"] = config  # Gemini-only settings, sent back as they came
    choice = _get(body, "toolConfig", "tool_config")
    if isinstance(choice, dict):
        calling = _get(choice, "functionCallingConfig", "function_calling_config") or {}
        mode = calling.get("mode")
        names = _get(calling, "allowedFunctionNames", "allowed_function_names")
        if set(calling) == {"mode"} and mode in _CHOICE_BY_MODE and set(choice) == {"functionCallingConfig"}:
            options.tool_choice = _CHOICE_BY_MODE[mode]
        elif mode == "ANY" and isinstance(names, list) and len(names) == 1 and set(calling) == {
                "mode", "allowedFunctionNames"}:
            options.tool_choice = {"name": names[0]}
        else:
            options.extra["toolConfig"] = choice
        if options.tool_choice is not None and tool_config(options.tool_choice) != choice:
            options.extra["toolConfig"] = choice
            options.tool_choice = None
    known = {"contents", "systemInstruction", "system_instruction", "tools", "generationConfig",
             "generation_config", "toolConfig", "tool_config"}
    for key, value in body.items():
        if key not in known:
            options.extra[key] = value
    return options


def read_request(body: dict[str, Any], *, model: str, tool_ids: ToolIdMap | None = None,
                 session_id: str = "") -> GeminiRequestRead:
    """`model` is the canonical id the request was addressed to (from the URL), e.g. gemini:gemini-2.5-pro."""
    if not isinstance(body, dict) or not isinstance(body.get("contents"), list):
        raise InvalidRequestError("a Gemini request body must be an object with a contents list",
                                  provider=PROVIDER)
    reader = _Reader(model, tool_ids if tool_ids is not None else ToolIdMap(), session_id)
    system = _get(body, "systemInstruction", "system_instruction")
    if isinstance(system, dict):
        texts = [TextBlock(text=str(p.get("text", ""))) for p in system.get("parts") or [] if isinstance(p, dict)]
        if texts:
            reader.messages.append(Message(role=Role.SYSTEM, session_id=session_id, content=texts))
    reader.contents(body["contents"])
    raw_tools = body.get("tools")
    tools, other_tools = _tools(raw_tools) if isinstance(raw_tools, list) else ([], [])
    options = _options(body, model)
    for entry in other_tools:
        if is_hosted_tool_entry(entry):
            options.provider_tools.append(entry)  # googleSearch, urlContext, codeExecution: carried as-is
        else:
            reader.skip(f"built-in tool {sorted(entry) if isinstance(entry, dict) else entry!r}")
    return GeminiRequestRead(messages=reader.messages, tools=tools, options=options, skipped=reader.skipped)
