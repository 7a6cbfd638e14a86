"""Hand-written canonical -> wire mappings: the least code that builds each provider's request.

The translation floor: plain loops over the same canonical Messages that metis translates, with
no repair, no capability checks and no lossy-projection log. Their output is also the prebuilt
body the raw-httpx floor posts and the message list handed to the SDK peers, so every
implementation sends the same conversation. Not a second adapter: it handles only what the
benchmark conversation contains (text, tool calls, tool results, one system prompt).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from bench.scenarios import ANTHROPIC_MODEL, MAX_TOKENS, OLLAMA_MODEL, OPENAI_MODEL, OPENROUTER_MODEL, TOOLS
from metis_core.messages import Message, Role, TextBlock, ToolResultBlock, ToolUseBlock


def _core(canonical_id: str) -> str:
    return canonical_id.removeprefix("tu_")


def _result_text(block: ToolResultBlock) -> str:
    return "".join(part.text for part in block.content if isinstance(part, TextBlock))


def anthropic_body(messages: list[Message], *, model: str = ANTHROPIC_MODEL, stream: bool = False) -> dict[str, Any]:
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role is Role.SYSTEM:
            system.extend({"type": "text", "text": b.text} for b in message.content if isinstance(b, TextBlock))
            continue
        role = "assistant" if message.role is Role.ASSISTANT else "user"
        blocks: list[dict[str, Any]] = []
        for block in message.content:
            if isinstance(block, TextBlock):
                blocks.append({"type": "text", "text": block.text})
            elif isinstance(block, ToolUseBlock):
                blocks.append({"type": "tool_use", "id": f"toolu_{_core(block.id)}", "name": block.name,
                               "input": block.input})
            elif isinstance(block, ToolResultBlock):
                blocks.append({"type": "tool_result", "tool_use_id": f"toolu_{_core(block.tool_use_id)}",
                               "content": _result_text(block), "is_error": block.is_error})
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": MAX_TOKENS,
        "system": system,
        "messages": turns,
        "tools": [{"name": t.name, "description": t.description, "input_schema": t.schema} for t in TOOLS],
    }
    if stream:
        body["stream"] = True
    return body


def openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role is Role.TOOL:
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    turns.append({"role": "tool", "tool_call_id": f"call_{_core(block.tool_use_id)}",
                                  "content": _result_text(block)})
            continue
        text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
        turn: dict[str, Any] = {"role": message.role.value, "content": text}
        calls = [
            {"id": f"call_{_core(b.id)}", "type": "function",
             "function": {"name": b.name, "arguments": orjson.dumps(b.input).decode()}}
            for b in message.content
            if isinstance(b, ToolUseBlock)
        ]
        if calls:
            turn["tool_calls"] = calls
        turns.append(turn)
    return turns


def openai_tools() -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.schema}}
            for t in TOOLS]


def openai_chat_body(messages: list[Message], *, model: str = OPENAI_MODEL, stream: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": openai_messages(messages), "tools": openai_tools(),
                            "max_completion_tokens": MAX_TOKENS}
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def responses_body(messages: list[Message], *, stream: bool = False) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    instructions = ""
    for message in messages:
        if message.role is Role.SYSTEM:
            instructions = message.text()
            continue
        for block in message.content:
            if isinstance(block, TextBlock):
                kind = "output_text" if message.role is Role.ASSISTANT else "input_text"
                items.append({"role": message.role.value, "content": [{"type": kind, "text": block.text}]})
            elif isinstance(block, ToolUseBlock):
                items.append({"type": "function_call", "call_id": f"call_{_core(block.id)}", "name": block.name,
                              "arguments": orjson.dumps(block.input).decode()})
            elif isinstance(block, ToolResultBlock):
                items.append({"type": "function_call_output", "call_id": f"call_{_core(block.tool_use_id)}",
                              "output": _result_text(block)})
    tools = [{"type": "function", "name": t.name, "description": t.description, "parameters": t.schema}
             for t in TOOLS]
    body: dict[str, Any] = {"model": OPENAI_MODEL, "instructions": instructions, "input": items, "tools": tools,
                            "max_output_tokens": MAX_TOKENS, "store": False}
    if stream:
        body["stream"] = True
    return body


def gemini_body(messages: list[Message], *, stream: bool = False) -> dict[str, Any]:
    """Gemini streams by path (`:streamGenerateContent`), so `stream` changes nothing in the body."""
    contents: list[dict[str, Any]] = []
    system = ""
    names: dict[str, str] = {}
    for message in messages:
        if message.role is Role.SYSTEM:
            system = message.text()
            continue
        role = "model" if message.role is Role.ASSISTANT else "user"
        parts: list[dict[str, Any]] = []
        for block in message.content:
            if isinstance(block, TextBlock):
                parts.append({"text": block.text})
            elif isinstance(block, ToolUseBlock):
                names[block.id] = block.name
                parts.append({"functionCall": {"name": block.name, "args": block.input}})
            elif isinstance(block, ToolResultBlock):
                parts.append({"functionResponse": {"name": names.get(block.tool_use_id, ""),
                                                   "response": {"output": _result_text(block)}}})
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    return {
        "contents": contents,
        "systemInstruction": {"parts": [{"text": system}]},
        "tools": [{"functionDeclarations": [{"name": t.name, "description": t.description, "parameters": t.schema}
                                            for t in TOOLS]}],
        "generationConfig": {"maxOutputTokens": MAX_TOKENS},
    }


def ollama_body(messages: list[Message], *, stream: bool = False) -> dict[str, Any]:
    turns: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for message in messages:
        if message.role is Role.TOOL:
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    turns.append({"role": "tool", "tool_name": names.get(block.tool_use_id, ""),
                                  "content": _result_text(block)})
            continue
        turn: dict[str, Any] = {"role": message.role.value, "content": message.text()}
        calls = []
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                names[block.id] = block.name
                calls.append({"function": {"name": block.name, "arguments": block.input}})
        if calls:
            turn["tool_calls"] = calls
        turns.append(turn)
    return {"model": OLLAMA_MODEL, "messages": turns, "tools": openai_tools(), "stream": stream,
            "options": {"num_predict": MAX_TOKENS}}


def openrouter_body(messages: list[Message], *, stream: bool = False) -> dict[str, Any]:
    return openai_chat_body(messages, model=OPENROUTER_MODEL, stream=stream)


MAPPINGS: dict[str, Callable[..., dict[str, Any]]] = {
    "anthropic": anthropic_body,
    "openai": openai_chat_body,
    "openai_responses": responses_body,
    "gemini": gemini_body,
    "ollama": ollama_body,
    "openrouter": openrouter_body,
}
"""Provider key -> the hand-written mapping of the conversation to that provider's request body."""
