"""Test-only oracle: validate a Gemini request body we built against the official google-genai types.

The SDK's pydantic models accept camelCase aliases and forbid unknown keys, so a body that validates
has only fields Gemini knows, with the right shapes. Re-dumping a validated Content must give back
the exact dict: that proves our bytes fields use the SDK's own encoding (URL-safe base64).
"""

from __future__ import annotations

from typing import Any

from google.genai import types

MODEL = "gemini:gemini-2.5-pro"

FIXTURE_MODELS = {
    "request__file_data_image_url_vertex.json": "gemini:gemini-2.0-flash",
    "request__file_data_youtube_url.json": "gemini:gemini-2.5-flash",
    "request__function_response_with_thought_signature_replay.json": "gemini:gemini-2.5-pro",
    "request__hosted_code_execution_history_replay.json": "gemini:gemini-3-flash-preview",
    "request__hosted_file_search_tool_gemini3.json": "gemini:gemini-3-flash-preview",
    "request__hosted_google_search_tool.json": "gemini:gemini-2.5-pro",
    "request__image_inline_data_base64.json": "gemini:gemini-2.0-flash",
    "request__parallel_function_responses.json": "gemini:gemini-3-flash-preview",
    "request__stream_function_response_after_signature.json": "gemini:gemini-3-pro-preview",
    "request__system_instruction_function_declarations.json": "gemini:gemini-2.5-pro",
}
"""The model each recorded request was sent to (from its URL in fixtures/INDEX.md)."""


def validate_with_sdk(body: dict[str, Any]) -> None:
    """Raise pydantic.ValidationError (or AssertionError) if the SDK would not accept the body."""
    allowed = {"contents", "systemInstruction", "tools", "toolConfig", "generationConfig"}
    assert set(body) <= allowed, f"unexpected top-level keys {set(body) - allowed}"
    for content in body["contents"]:
        parsed = types.Content.model_validate(content)
        assert parsed.model_dump(mode="json", by_alias=True, exclude_none=True) == content
    if "systemInstruction" in body:
        types.Content.model_validate(body["systemInstruction"])
    for tool in body.get("tools", []):
        types.Tool.model_validate(tool)
    if "toolConfig" in body:
        types.ToolConfig.model_validate(body["toolConfig"])
    types.GenerationConfig.model_validate(body.get("generationConfig", {}))
