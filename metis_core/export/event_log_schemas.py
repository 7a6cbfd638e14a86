"""JSON Schemas (2020-12) of the agent event log v0.2: the nine payloads of SCHEMA.md and our envelope.

The payload schemas transcribe SCHEMA.md v0.2 (frozen): its "(required)" fields are required,
sha256 values are 64 lowercase hex digits, uint64 is a non-negative integer, and a '[REDACTED]'
value makes its hash field required. Where the text is silent (a message's role) we require what
every entry we write carries. Exporters do not validate at run time; the tests do, with these.
"""

from __future__ import annotations

from typing import Any

REDACTED = "[REDACTED]"
REDACTED_OBJECT: dict[str, Any] = {REDACTED: True}
"""What an object-typed field (TOOL_CALL.args) holds when its value is withheld."""

SHA256: dict[str, Any] = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
UUID: dict[str, Any] = {"type": "string", "format": "uuid",
                        "pattern": "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"}
UINT64: dict[str, Any] = {"type": "integer", "minimum": 0, "maximum": 18446744073709551615}


def _object(properties: dict[str, Any], required: list[str], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False,
            **extra}


def _hash_required_when_redacted(field: str, hash_field: str, redacted: Any) -> dict[str, Any]:
    return {"if": {"properties": {field: {"const": redacted}}, "required": [field]},
            "then": {"required": [hash_field]}}


MESSAGE = _object(
    {"role": {"enum": ["system", "user", "assistant", "tool"]}, "content": {"type": "string"},
     "content_hash": SHA256, "name": {"type": "string"}},
    ["role", "content"],
    **_hash_required_when_redacted("content", "content_hash", REDACTED),
)

PAYLOAD_SCHEMAS: dict[str, dict[str, Any]] = {
    "SESSION_START": _object(
        {"agent_id": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
         "environment": {"enum": ["prod", "staging", "dev"]}, "framework": {"type": "string"},
         "framework_version": {"type": "string"}, "sdk_version": {"type": "string"}, "system_prompt_hash": SHA256},
        ["agent_id", "environment", "framework", "framework_version", "sdk_version"],
    ),
    "SESSION_END": _object(
        {"status": {"enum": ["success", "failure", "timeout", "cancelled"]}, "reason": {"type": "string"},
         "duration_ms": UINT64, "total_cost_usd": {"type": "number"}},
        ["status", "duration_ms"],
    ),
    "TOOL_CALL": _object(
        {"tool_name": {"type": "string"}, "tool_id": {"type": "string"}, "args": {"type": "object"},
         "args_hash": SHA256, "timeout_ms": {"type": "integer"}},
        ["tool_name", "args"],
        **_hash_required_when_redacted("args", "args_hash", REDACTED_OBJECT),
    ),
    "TOOL_RESULT": _object(
        {"tool_name": {"type": "string"}, "tool_id": {"type": "string"}, "result": {"type": ["object", "string"]},
         "result_hash": SHA256, "status": {"enum": ["success", "error"]}, "duration_ms": UINT64},
        ["tool_name", "result", "status", "duration_ms"],
        **_hash_required_when_redacted("result", "result_hash", REDACTED),
    ),
    "MODEL_REQUEST": _object(
        {"model": {"type": "string"}, "provider": {"type": "string"},
         "messages": {"type": "array", "items": MESSAGE},
         "parameters": _object({"temperature": {"type": "number"}, "top_p": {"type": "number"},
                                "max_tokens": {"type": "integer"}}, [])},
        ["model", "provider", "messages"],
    ),
    "MODEL_RESPONSE": _object(
        {"model": {"type": "string"}, "content": {"type": "string"}, "content_hash": SHA256,
         "role": {"const": "assistant"}, "finish_reason": {"enum": ["stop", "length", "tool_calls", "content_filter"]},
         "usage": _object({"prompt_tokens": {"type": "integer"}, "completion_tokens": {"type": "integer"},
                           "total_tokens": {"type": "integer"}}, [])},
        ["model", "content", "role", "finish_reason"],
        **_hash_required_when_redacted("content", "content_hash", REDACTED),
    ),
    "DECISION_TRACE": _object(
        {"decision_id": UUID, "inputs": {"type": "object"}, "outputs": {"type": "object"},
         "justification": {"type": "string"}, "policy_version": {"type": "string"}},
        ["decision_id", "inputs", "outputs", "justification"],
    ),
    "ERROR": _object(
        {"error_type": {"type": "string"}, "message": {"type": "string"}, "stack_trace": {"type": "string"},
         "fatal": {"type": "boolean"}},
        ["error_type", "message", "fatal"],
    ),
    "ANNOTATION": _object(
        {"annotator_id": {"type": "string"}, "annotation_type": {"enum": ["flag", "comment", "rating"]},
         "content": {"type": "object"}, "target_event_id": UUID},
        ["annotator_id", "annotation_type", "content"],
    ),
}
"""SCHEMA.md v0.2 payloads by event type, each a complete 2020-12 schema."""

EVENT_TYPES = tuple(PAYLOAD_SCHEMAS)

ENTRY_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    **_object(
        {"spec_version": {"const": "0.2"}, "event_id": UUID, "session_id": {"type": "string", "minLength": 1},
         "sequence": UINT64, "timestamp": {"type": "string", "format": "date-time"},
         "event_type": {"enum": list(EVENT_TYPES)}, "source_event_id": {"type": ["string", "null"]},
         "turn_id": {"type": ["string", "null"]}, "payload": {"type": "object"}, "payload_hash": SHA256,
         "prev_hash": SHA256, "entry_hash": SHA256},
        ["spec_version", "event_id", "session_id", "sequence", "timestamp", "event_type", "source_event_id",
         "turn_id", "payload", "payload_hash", "prev_hash", "entry_hash"],
    ),
}
"""Our envelope (EVENT_LOG_SPEC.md is not available to us; docs/interop.md explains the design)."""
