"""Test-only oracles for normalized tool schemas: every adapter's request, the SDKs' types, the rules.

A normalized schema is put in a one-message request by each adapter and the body validated against
the official SDK's request type (anthropic, openai chat, openai responses, google-genai, whose
pydantic Schema forbids unknown keys). Two rule sets the SDK types do not encode are checked here:
Gemini's function-declaration rules and OpenAI strict mode's, the latter on the strict projection an
adapter makes (every property required, the optional ones nullable, every object closed).
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

from google.genai import types as genai_types
from openai.types.chat import completion_create_params
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import TypeAdapter

from metis_core.adapters.anthropic.adapter import AnthropicAdapter
from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.gemini.adapter import GeminiAdapter
from metis_core.adapters.gemini.schema import parameters_for
from metis_core.adapters.openai_chat.adapter import OpenAIChatAdapter
from metis_core.adapters.openai_responses.adapter import OpenAIResponsesAdapter
from metis_core.messages import ToolDefinition, user_message

_ANTHROPIC: TypeAdapter[Any] | None = None
_CHAT: TypeAdapter[Any] = TypeAdapter(completion_create_params.CompletionCreateParamsNonStreaming)
_RESPONSES: TypeAdapter[Any] = TypeAdapter(ResponseCreateParamsNonStreaming)

# OpenAI's documented strict-mode keywords (Structured Outputs, "Supported schemas"), plus the
# subset's minLength/maxLength, which the portable subset admits (docs/tool-schema-subset.md).
STRICT_KEYWORDS = frozenset({
    "type", "description", "title", "properties", "required", "additionalProperties", "items", "anyOf", "enum",
    "const", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minItems", "maxItems", "minLength", "maxLength",
})
STRICT_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
GEMINI_TYPES = frozenset({"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"})


def _materialize(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _materialize(v) for k, v in value.items()}
    if isinstance(value, list | tuple) or type(value).__name__ == "ValidatorIterator":
        return [_materialize(v) for v in value]
    return value


def check_every_adapter_accepts(tool: ToolDefinition) -> None:
    """Build a request with the tool through each adapter and validate it with that provider's SDK."""
    global _ANTHROPIC
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
    from anthropic.types.tool_param import InputSchemaTyped

    if _ANTHROPIC is None:
        _ANTHROPIC = TypeAdapter(MessageCreateParamsNonStreaming)
    messages = [user_message("use the tool")]
    body = AnthropicAdapter().to_wire(messages, [tool], AdapterOptions(model="anthropic:claude-sonnet-4-6",
                                                                        max_tokens=100)).body
    _materialize(_ANTHROPIC.validate_python(body))
    # The request type also takes any dict; the typed form is the one that says the root is an object.
    TypeAdapter(InputSchemaTyped).validate_python(body["tools"][0]["input_schema"], strict=True)
    body = OpenAIChatAdapter().to_wire(messages, [tool], AdapterOptions(model="openai:gpt-4o")).body
    _materialize(_CHAT.validate_python(body))
    body = OpenAIResponsesAdapter().to_wire(messages, [tool], AdapterOptions(model="openai:gpt-5")).body
    _materialize(_RESPONSES.validate_python(body))
    body = GeminiAdapter().to_wire(messages, [tool], AdapterOptions(model="gemini:gemini-2.5-pro")).body
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the SDK only warns on an unknown type name
        for wire_tool in body.get("tools", []):
            genai_types.Tool.model_validate(wire_tool)


def gemini_violations(tool: ToolDefinition) -> list[str]:
    """Gemini function-declaration rules on the projected parameters (OpenAPI 3.0 Schema subset)."""
    parameters = parameters_for(tool.input_schema, tool.name)
    problems: list[str] = []
    if parameters is not None:
        _gemini_walk(parameters, "$", problems, top=True)
    return problems


def _gemini_walk(schema: dict[str, Any], path: str, problems: list[str], *, top: bool = False) -> None:
    if "anyOf" in schema:
        for i, branch in enumerate(schema["anyOf"]):
            _gemini_walk(branch, f"{path}.anyOf[{i}]", problems)
        return
    kind = schema.get("type")
    if kind not in GEMINI_TYPES:
        problems.append(f"{path}: type {kind!r} is not a Gemini type")
    if "additionalProperties" in schema:
        problems.append(f"{path}: Gemini has no additionalProperties")
    if "enum" in schema and kind != "STRING":
        problems.append(f"{path}: Gemini enums are strings only")
    if kind == "ARRAY":
        if "items" not in schema:
            problems.append(f"{path}: ARRAY without items")
        else:
            _gemini_walk(schema["items"], f"{path}.items", problems)
    if kind == "OBJECT":
        properties = schema.get("properties") or {}
        if not properties and not top:
            problems.append(f"{path}: OBJECT without properties")
        for name in schema.get("required", []):
            if name not in properties:
                problems.append(f"{path}: required {name!r} is not a property")
        for name, sub in properties.items():
            _gemini_walk(sub, f"{path}.properties.{name}", problems)


def strict_projection(schema: dict[str, Any]) -> dict[str, Any]:
    """What strict mode needs: every object closed, every property required, the optional ones nullable."""
    out = copy.deepcopy(schema)
    _close(out)
    return out


def _nullable(schema: dict[str, Any]) -> None:
    if "anyOf" in schema:
        if {"type": "null"} not in schema["anyOf"]:
            schema["anyOf"].append({"type": "null"})
        return
    kind = schema["type"]
    if isinstance(kind, str) and kind != "null":
        schema["type"] = [kind, "null"]
    if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
        schema["enum"].append(None)


def _close(schema: dict[str, Any]) -> None:
    for branch in schema.get("anyOf", []):
        _close(branch)
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "object" in kinds:
        properties = schema.setdefault("properties", {})
        required = set(schema.get("required", []))
        for name, sub in properties.items():
            _close(sub)
            if name not in required:
                _nullable(sub)
        schema["required"] = list(properties)
        schema["additionalProperties"] = False
    if "array" in kinds and isinstance(schema.get("items"), dict):
        _close(schema["items"])


def strict_violations(schema: dict[str, Any]) -> list[str]:
    """OpenAI strict-mode rules: plain object root, closed objects, all required, known keywords, limits."""
    problems: list[str] = []
    if schema.get("type") != "object" or "anyOf" in schema:
        problems.append("$: the root must be a plain object")
    counts = {"properties": 0, "enum": 0, "depth": 0}
    _strict_walk(schema, "$", problems, counts, depth=1)
    if counts["properties"] > 5000:
        problems.append(f"{counts['properties']} properties (strict mode allows 5000)")
    if counts["enum"] > 1000:
        problems.append(f"{counts['enum']} enum values (strict mode allows 1000)")
    if counts["depth"] > 10:
        problems.append(f"nesting depth {counts['depth']} (strict mode allows 10)")
    return problems


def _strict_walk(schema: dict[str, Any], path: str, problems: list[str], counts: dict[str, int], depth: int) -> None:
    counts["depth"] = max(counts["depth"], depth)
    for key in schema:
        if key not in STRICT_KEYWORDS:
            problems.append(f"{path}: {key!r} is not a strict-mode keyword")
    if schema.get("format") is not None and schema["format"] not in STRICT_FORMATS:
        problems.append(f"{path}: format {schema['format']!r} is not a strict-mode format")
    counts["enum"] += len(schema.get("enum", []))
    for i, branch in enumerate(schema.get("anyOf", [])):
        _strict_walk(branch, f"{path}.anyOf[{i}]", problems, counts, depth)
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if isinstance(kind, list) and (len(kind) != 2 or "null" not in kind):
        problems.append(f"{path}: a type list must be one type and null")
    if "object" in kinds:
        properties = schema.get("properties", {})
        counts["properties"] += len(properties)
        if schema.get("additionalProperties") is not False:
            problems.append(f"{path}: additionalProperties must be false")
        if set(schema.get("required", [])) != set(properties):
            problems.append(f"{path}: every property must be required")
        for name, sub in properties.items():
            _strict_walk(sub, f"{path}.properties.{name}", problems, counts, depth + 1)
    if "array" in kinds and "items" in schema:
        _strict_walk(schema["items"], f"{path}.items", problems, counts, depth + 1)
