"""Structured answers in each provider's exact wire format, built on recorded bodies.

Every body starts from a recording in tests/data/shared/fixtures/wire (named per provider below) and
only the answer text, stop reason or tool input is replaced, so the real parsers read real shapes.
Recordings used verbatim where one shows the case: OpenAI `refusal` and `finish_reason: length`,
Anthropic `max_tokens`, Ollama's structured-output answer. Also reads what a request carried.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

import httpx
from fixture_files import read_bytes


def _json(provider: str, name: str) -> Any:
    return json.loads(read_bytes(provider, name))


def _response(body: Any) -> httpx.Response:
    return httpx.Response(200, json=body)


@dataclass(frozen=True)
class Wire:
    """One provider's wire: the model used, and how answers and requests look on it."""

    key: str
    model: str
    mode: str

    # --- answers -------------------------------------------------------------------------------

    def answer(self, text: str) -> httpx.Response:
        return _response(self._text_body(text, stop=True))

    def truncated(self, text: str) -> httpx.Response:
        return _response(self._text_body(text, stop=False))

    def tool_answer(self, name: str, value: dict[str, Any]) -> httpx.Response:
        assert self.key == "anthropic"
        body = _json("anthropic", "response__tool_use.json")
        body["content"][0].update(name=name, input=value)
        return _response(body)

    def refusal(self) -> httpx.Response:
        if self.key in ("openai_chat", "openai_compatible"):
            return httpx.Response(200, content=read_bytes("openai_chat", "response__refusal.json"))
        if self.key == "openrouter":
            body = _json("openrouter", "response__no_reasoning_leading_whitespace.json")
            choice = body["choices"][0]
            choice["message"].update(content=None, refusal="I'm sorry, I can't help with that.")
            return _response(body)
        if self.key == "openai_responses":
            body = _json("openai_responses", "response__text.json")
            body["output"][0]["content"] = [{"type": "refusal", "refusal": "I'm sorry, I can't help with that."}]
            return _response(body)
        if self.key == "anthropic":
            body = _json("anthropic", "response__text.json")
            body["content"] = []
            body["stop_reason"] = "refusal"
            body["stop_details"] = {"type": "refusal", "category": "cyber",
                                    "explanation": "This request was refused due to policy."}
            return _response(body)
        if self.key == "gemini":
            body = _json("gemini", "response__text.json")
            body["candidates"][0]["content"]["parts"] = [{"text": ""}]
            body["candidates"][0]["finishReason"] = "SAFETY"
            return _response(body)
        raise AssertionError(f"{self.key} has no refusal signal")

    def _text_body(self, text: str, *, stop: bool) -> Any:
        key = self.key
        if key in ("openai_chat", "openai_compatible"):
            if not stop and text == '{"':
                return _json("openai_chat", "response__finish_reason_length.json")  # recorded as is
            body = _json("openai_chat", "response__text.json")
            body["choices"][0]["message"]["content"] = text
            body["choices"][0]["finish_reason"] = "stop" if stop else "length"
            return body
        if key == "openrouter":
            body = _json("openrouter", "response__no_reasoning_leading_whitespace.json")
            choice = body["choices"][0]
            choice["message"]["content"] = text
            choice["finish_reason"] = choice["native_finish_reason"] = "stop" if stop else "length"
            return body
        if key == "openai_responses":
            body = _json("openai_responses", "response__text.json")
            body["output"][0]["content"][0]["text"] = text
            if not stop:
                body["status"] = "incomplete"
                body["incomplete_details"] = {"reason": "max_output_tokens"}
            return body
        if key == "anthropic":
            if not stop and text.startswith("HELLO"):
                return _json("anthropic", "response__stop_reason_max_tokens.json")
            body = _json("anthropic", "response__text.json")
            body["content"][0]["text"] = text
            body["stop_reason"] = "end_turn" if stop else "max_tokens"
            return body
        if key == "gemini":
            body = _json("gemini", "response__text.json")
            body["candidates"][0]["content"]["parts"] = [{"text": text}]
            body["candidates"][0]["finishReason"] = "STOP" if stop else "MAX_TOKENS"
            return body
        if key == "ollama":
            body = _json("ollama", "response__chat_structured_output.json")
            if text != body["message"]["content"] or not stop:
                body = copy.deepcopy(body)
                body["message"]["content"] = text
                body["done_reason"] = "stop" if stop else "length"
            return body
        raise AssertionError(key)

    # --- requests ------------------------------------------------------------------------------

    def carried(self, body: dict[str, Any]) -> tuple[str, Any]:
        """(how the schema travelled, the schema as sent)."""
        if self.key in ("openai_chat", "openrouter", "openai_compatible"):
            if "response_format" in body:
                return "json_schema", body["response_format"]["json_schema"]
            return "instructions", None
        if self.key == "openai_responses":
            return "json_schema", body["text"]["format"]
        if self.key == "anthropic":
            if "output_config" in body:
                return "json_schema", body["output_config"]["format"]
            return "tool", (body["tools"], body["tool_choice"])
        if self.key == "gemini":
            return "json_schema", body["generationConfig"]["responseJsonSchema"]
        if self.key == "ollama":
            return "json_schema", body["format"]
        raise AssertionError(self.key)

    def constrained(self, body: dict[str, Any]) -> bool:
        """Whether the request carried the schema at all (a free-form NL-to-format call does not)."""
        if self.key == "openai_responses":
            return "format" in body.get("text", {})
        if self.key == "gemini":
            return "responseJsonSchema" in body.get("generationConfig", {})
        keys = {"response_format", "output_config", "tool_choice", "format"}
        return bool(keys & set(body)) or "JSON Schema" in self.request_text(body)

    def max_tokens(self, body: dict[str, Any]) -> int | None:
        if self.key == "openai_responses":
            return body.get("max_output_tokens")
        if self.key == "gemini":
            return body.get("generationConfig", {}).get("maxOutputTokens")
        if self.key == "ollama":
            return body.get("options", {}).get("num_predict")
        return body.get("max_completion_tokens", body.get("max_tokens"))

    def request_text(self, body: dict[str, Any]) -> str:
        """Everything the request says in words (to check what a corrective fragment carried)."""
        return json.dumps(body.get("messages") or body.get("input") or body.get("contents"))


WIRES = [
    Wire("openai_chat", "openai:gpt-4o", "json_schema"),
    Wire("openai_responses", "openai_responses:gpt-4o", "json_schema"),
    Wire("anthropic", "anthropic:claude-sonnet-4-5", "json_schema"),
    Wire("anthropic", "anthropic:claude-3-5-haiku-latest", "tool"),
    Wire("gemini", "gemini:gemini-2.5-flash", "json_schema"),
    Wire("ollama", "ollama:llama3.1", "json_schema"),
    Wire("openrouter", "openrouter:openai/gpt-4o-mini", "json_schema"),
    Wire("openai_compatible", "openai_compatible:local-model", "instructions"),
]


ANTHROPIC_STRUCTURED_STREAM = "stream__recorded_structured_output.sse"
"""A live Anthropic structured-output stream (`[12345,67890]`, stop_reason end_turn)."""


def anthropic_stream(text: str | None = None, stop_reason: str = "end_turn") -> bytes:
    """The recorded structured-output stream, its text deltas replaced by one carrying `text` (None keeps
    the recorded ones) and its stop reason set to `stop_reason`."""
    body = read_bytes("anthropic", ANTHROPIC_STRUCTURED_STREAM).decode()
    events = body.split("\n\n")
    if text is not None:
        deltas = [i for i, e in enumerate(events) if "content_block_delta" in e]
        replacement = "event: content_block_delta\ndata: " + json.dumps(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}})
        events = [*events[:deltas[0]], replacement, *events[deltas[-1] + 1:]]
    joined = "\n\n".join(events)
    return joined.replace('"stop_reason":"end_turn"', f'"stop_reason":"{stop_reason}"').encode()


OPENAI_CHAT_TEXT_STREAM = "stream__text_with_usage_chunk.sse"
"""A recorded OpenAI Chat text stream (role chunk, content deltas, `stop`, a usage chunk, [DONE])."""


def openai_chat_stream(text: str) -> bytes:
    """The recorded OpenAI Chat stream with its content deltas replaced by one carrying `text`."""
    events = read_bytes("openai_chat", OPENAI_CHAT_TEXT_STREAM).decode().split("\n\n")
    deltas = [i for i, e in enumerate(events) if '"delta":{"content":' in e]
    chunk = json.loads(events[deltas[0]].removeprefix("data: "))
    chunk["choices"][0]["delta"] = {"content": text}
    return "\n\n".join([*events[:deltas[0]], "data: " + json.dumps(chunk), *events[deltas[-1] + 1:]]).encode()
