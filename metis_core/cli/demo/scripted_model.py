"""What the demo's scripted model says — computed from the request it receives.

Anthropic: a first request gets a sentence and a `read_file` call on README.md; a request that
carries the tool_result gets an answer quoting the file it read. OpenAI: an answer that recounts
the history it was sent (who called which tool, what came back), so the output shows the swap
carried the conversation over. Nothing here is canned text about a fixed file.
"""

from __future__ import annotations

import json
from typing import Any

from metis_core.cli.demo import anthropic_wire, openai_wire

ANTHROPIC_MODEL = "claude-sonnet-4-6"
OPENAI_MODEL = "gpt-4o-2024-08-06"
DEMO_FILE = "README.md"


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _text_of(content: Any) -> str:
    return "".join(b.get("text", "") for b in _blocks(content) if b.get("type") == "text")


def estimated_tokens(body: Any) -> int:
    """A stand-in for the provider's tokenizer: about four characters a token."""
    return max(1, len(json.dumps(body)) // 4)


class ScriptedModel:
    def __init__(self) -> None:
        self.issued_tool_ids: set[str] = set()

    def anthropic_reply(self, body: dict[str, Any]) -> bytes:
        last = body["messages"][-1]
        results = [b for b in _blocks(last.get("content")) if b.get("type") == "tool_result"]
        tokens = estimated_tokens(body)
        if not results:
            tool_id = anthropic_wire.new_tool_use_id()
            self.issued_tool_ids.add(tool_id)
            return anthropic_wire.message_stream(
                ANTHROPIC_MODEL, text=f"I'll read {DEMO_FILE} to find out.", input_tokens=tokens,
                tool_use=(tool_id, "read_file", {"path": DEMO_FILE}),
            )
        content = results[0].get("content")
        text = content if isinstance(content, str) else _text_of(content)
        lines = [line.strip("# ").strip() for line in text.splitlines() if line.strip()]
        headline = lines[0] if lines else "(empty)"
        answer = (f"{DEMO_FILE} is titled “{headline}” and has {len(lines)} non-empty lines. "
                  f"Its last line says: “{lines[-1] if lines else ''}”")
        return anthropic_wire.message_stream(ANTHROPIC_MODEL, text=answer, input_tokens=tokens)

    def openai_reply(self, body: dict[str, Any]) -> bytes:
        messages = body["messages"]
        calls = [c for m in messages for c in (m.get("tool_calls") or [])]
        outputs = [m for m in messages if m.get("role") == "tool"]
        users = [m for m in messages if m.get("role") == "user"]
        first_question = _text_of(users[0].get("content")) if users else ""
        if calls:
            call = calls[0]
            size = len(str(outputs[0].get("content", ""))) if outputs else 0
            answer = (f"Picking up from the previous model: you first asked “{first_question}”. It called "
                      f"{call['function']['name']}({call['function']['arguments']}) as call {call['id']} and got "
                      f"{size} characters back, which it summarised for you. I can see all "
                      f"{len(messages)} messages of this session.")
        else:
            answer = f"I can see {len(messages)} messages of this session; no tool has been called yet."
        return openai_wire.completion_stream(OPENAI_MODEL, text=answer, prompt_tokens=estimated_tokens(body))
