"""The gateway seam: a structured-output request read in one provider's shape, honoured on another model.

Ollama's recorded structured-output request (`format` with a JSON Schema) is answered by a Claude model
without native structured output (a forced tool, over the recorded tool_use body), and an OpenAI Chat
request with `response_format: json_schema` (OpenAI's documented shape) by Gemini (`responseJsonSchema`).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from fixture_files import read_bytes
from mock_http import serve
from structured_wire import WIRES

from metis_core.adapters.ollama.request_reader import read_chat_request
from metis_core.adapters.openai_chat.adapter import OpenAIChatAdapter
from metis_core.adapters.structured_calls import inbound_output


def test_an_ollama_format_request_is_honoured_by_a_forced_tool_on_claude() -> None:
    inbound = read_chat_request(json.loads(read_bytes("ollama", "request__chat_structured_output_format_schema.json")))
    spec, options = inbound_output(inbound.options)
    assert spec is not None and options.response_format is None
    target = next(w for w in WIRES if w.mode == "tool")
    client, server = serve(target.tool_answer(spec.name, {"age": 22, "available": False}))
    result: Any = client.complete(inbound.messages, target.model, output=spec,
                                  options=dataclasses.replace(options, model=target.model))
    assert result.value == {"age": 22, "available": False} and result.mode == "tool"
    sent = json.loads(server.requests[0].content)
    assert sent["tool_choice"] == {"type": "tool", "name": spec.name}
    assert sent["tools"][0]["input_schema"]["required"] == ["age", "available"]


def test_an_openai_response_format_request_is_honoured_by_gemini() -> None:
    body = {"model": "gpt-4o-2024-08-06", "messages": [{"role": "user", "content": "Ollama is 22 and busy."}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "person", "strict": True, "schema": {
                "type": "object", "properties": {"age": {"type": "integer"}, "available": {"type": "boolean"}},
                "required": ["age", "available"], "additionalProperties": False}}}}
    inbound = OpenAIChatAdapter().read_request(body)
    spec, options = inbound_output(inbound.options)
    assert spec is not None and spec.name == "person"
    gemini = next(w for w in WIRES if w.key == "gemini")
    client, server = serve(gemini.answer('{"age": 22, "available": false}'), provider="gemini")
    result: Any = client.complete(inbound.messages, gemini.model, output=spec,
                                  options=dataclasses.replace(options, model=gemini.model))
    assert result.value == {"age": 22, "available": False}
    sent = json.loads(server.requests[0].content)["generationConfig"]
    assert sent["responseMimeType"] == "application/json" and sent["responseJsonSchema"]["required"] == ["age",
                                                                                                     "available"]


def test_a_bare_json_mode_is_not_a_schema() -> None:
    body = json.loads(read_bytes("ollama", "request__chat_structured_output_format_schema.json"))
    body["format"] = "json"
    spec, options = inbound_output(read_chat_request(body).options)
    assert spec is None and options.response_format == {"name": "json"}
