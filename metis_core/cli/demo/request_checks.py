"""Well-formedness checks the demo server applies to each request before answering.

Each check returns the list of problems (empty = well-formed) in the words the provider would
use. They cover what the translation must get right across a swap: headers, roles, block
shapes, and above all that every tool call is answered by a result carrying the same id. They
are not a full schema validator of either API.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

ANTHROPIC_BLOCK_TYPES = {"text", "image", "tool_use", "tool_result", "thinking", "redacted_thinking", "document"}
OPENAI_ROLES = {"system", "developer", "user", "assistant", "tool"}


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def anthropic_problems(headers: Mapping[str, str], body: Any, issued_tool_ids: set[str]) -> list[str]:
    problems: list[str] = []
    if not headers.get("x-api-key") and not headers.get("authorization", "").startswith("Bearer "):
        problems.append("x-api-key header: required")
    if not headers.get("anthropic-version"):
        problems.append("anthropic-version header: required")
    if not isinstance(body, dict):
        return [*problems, "body: must be a JSON object"]
    if not isinstance(body.get("model"), str):
        problems.append("model: Field required")
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        problems.append("max_tokens: must be a positive integer")
    if body.get("stream") is not True:
        problems.append("stream: this server only answers streaming requests")
    for i, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool.get("name"), str) or not isinstance(tool.get("input_schema"), dict):
            problems.append(f"tools.{i}: needs name and input_schema")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*problems, "messages: at least one message is required"]
    expected_role = "user"
    pending: set[str] = set()
    for i, message in enumerate(messages):
        role = message.get("role")
        if role != expected_role:
            problems.append(f"messages.{i}.role: expected {expected_role!r}, got {role!r} (roles must alternate)")
        blocks = _blocks(message.get("content"))
        if not blocks:
            problems.append(f"messages.{i}.content: must be a string or a non-empty list of blocks")
        for j, block in enumerate(blocks):
            if block.get("type") not in ANTHROPIC_BLOCK_TYPES:
                problems.append(f"messages.{i}.content.{j}.type: unknown block type {block.get('type')!r}")
        results = {str(b.get("tool_use_id")) for b in blocks if b.get("type") == "tool_result"}
        if role == "user":
            for missing in sorted(pending - results):
                problems.append(f"messages.{i}: tool_use ids were found without tool_result blocks immediately "
                                f"after: {missing}")
            for stray in sorted(results - pending):
                problems.append(f"messages.{i}: unexpected tool_use_id found in tool_result blocks: {stray}. "
                                "Each tool_result block must have a corresponding tool_use block in the previous "
                                "message.")
            pending = set()
        else:
            if results:
                problems.append(f"messages.{i}: tool_result blocks belong in user messages")
            pending = {str(b.get("id")) for b in blocks if b.get("type") == "tool_use"}
            for tool_id in sorted(pending - issued_tool_ids):
                problems.append(f"messages.{i}: tool_use id {tool_id} was never issued by this model")
        expected_role = "assistant" if role == "user" else "user"
    if pending:
        problems.append("messages: the last assistant tool_use has no tool_result")
    return problems


def openai_problems(headers: Mapping[str, str], body: Any) -> list[str]:
    problems: list[str] = []
    if not headers.get("authorization", "").startswith("Bearer ") or len(headers["authorization"]) <= 7:
        problems.append("Authorization header: a Bearer key is required")
    if not isinstance(body, dict):
        return [*problems, "body: must be a JSON object"]
    if not isinstance(body.get("model"), str):
        problems.append("model: you must provide a model parameter")
    if body.get("stream") is not True:
        problems.append("stream: this server only answers streaming requests")
    for i, tool in enumerate(body.get("tools") or []):
        function = tool.get("function") if isinstance(tool, dict) else None
        if tool.get("type") != "function" or not isinstance(function, dict) or not function.get("name"):
            problems.append(f"tools[{i}]: expected a function tool with a name")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*problems, "messages: must be a non-empty array"]
    pending: set[str] = set()
    for i, message in enumerate(messages):
        role = message.get("role")
        if role not in OPENAI_ROLES:
            problems.append(f"messages[{i}].role: invalid value {role!r}")
            continue
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                problems.append(f"messages[{i}]: messages with role 'tool' must be a response to a preceeding "
                                f"message with 'tool_calls' (tool_call_id {call_id!r})")
            pending.discard(call_id)
            if not isinstance(message.get("content"), str | list):
                problems.append(f"messages[{i}].content: required for a tool message")
            continue
        if pending:
            problems.append(f"messages[{i}]: an assistant message with 'tool_calls' must be followed by tool "
                            f"messages responding to each 'tool_call_id'. Missing: {', '.join(sorted(pending))}")
            pending = set()
        for j, call in enumerate(message.get("tool_calls") or []):
            if role != "assistant":
                problems.append(f"messages[{i}].tool_calls: only assistant messages carry tool calls")
            function = call.get("function") or {}
            try:
                json.loads(function.get("arguments", ""))
            except (TypeError, ValueError):
                problems.append(f"messages[{i}].tool_calls[{j}].function.arguments: must be a JSON string")
            if call.get("type") != "function" or not call.get("id") or not function.get("name"):
                problems.append(f"messages[{i}].tool_calls[{j}]: needs id, type 'function' and a function name")
            else:
                pending.add(call["id"])
    if pending:
        problems.append(f"messages: tool calls without a tool message: {', '.join(sorted(pending))}")
    return problems
