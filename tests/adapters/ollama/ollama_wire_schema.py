"""Test-only oracle: the `/api/chat` request schema, transcribed from Ollama's docs/api.md
("Generate a chat completion" > Parameters) and docs/capabilities/{tool-calling,thinking}.mdx.

There is no official Ollama SDK in the environment, so wire requests we build are validated
against this JSON Schema instead. Messages are closed (`additionalProperties: false`) so a field
name we get wrong fails here rather than being silently ignored by the server.
"""

from __future__ import annotations

from typing import Any

TOOL_CALL: dict[str, Any] = {
    "type": "object",
    "required": ["function"],
    "additionalProperties": False,
    "properties": {
        "function": {
            "type": "object",
            "required": ["name", "arguments"],
            "additionalProperties": False,
            "properties": {
                "index": {"type": "integer", "minimum": 0},
                "name": {"type": "string", "minLength": 1},
                "arguments": {"type": "object"},  # an object, never a JSON string
            },
        }
    },
}

MESSAGE: dict[str, Any] = {
    "type": "object",
    "required": ["role", "content"],
    "additionalProperties": False,
    "properties": {
        "role": {"enum": ["system", "user", "assistant", "tool"]},
        "content": {"type": "string"},
        "thinking": {"type": "string"},
        "images": {"type": "array", "items": {"type": "string", "pattern": "^[A-Za-z0-9+/=]+$"}},
        "tool_calls": {"type": "array", "items": TOOL_CALL},
        "tool_name": {"type": "string"},
    },
}

CHAT_REQUEST: dict[str, Any] = {
    "type": "object",
    "required": ["model", "messages", "stream"],
    "properties": {
        "model": {"type": "string", "minLength": 1},
        "messages": {"type": "array", "items": MESSAGE},
        "stream": {"type": "boolean"},
        "think": {"oneOf": [{"type": "boolean"}, {"enum": ["low", "medium", "high"]}]},
        "format": {"oneOf": [{"const": "json"}, {"type": "object"}]},
        "keep_alive": {"type": ["string", "number"]},
        "tools": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["type", "function"],
                "properties": {
                    "type": {"const": "function"},
                    "function": {
                        "type": "object",
                        "required": ["name", "parameters"],
                        "properties": {
                            "name": {"type": "string"},
                            "description": {"type": "string"},
                            "parameters": {"type": "object"},
                        },
                    },
                },
            },
        },
        "options": {
            "type": "object",
            "properties": {
                "temperature": {"type": "number"},
                "top_p": {"type": "number"},
                "num_predict": {"type": "integer"},
                "stop": {"type": "array", "items": {"type": "string"}},
            },
        },
    },
}
