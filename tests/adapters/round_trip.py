"""The same-API round trip of one recorded answer: parse it through ModelClient, write it back.

`sent_back` serves a recorded body or stream over MockTransport, parses it, and writes the
conversation back with the same adapter. Per API, `recorded_turn` is what of the recorded answer
that API accepts back as an assistant turn and `sent_turn` the turn actually written; both go
through the same `projection` (equivalent spellings only), so a difference is a loss.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx
from adapters.hosted.wire_oracle import anthropic_message, normalized_anthropic_content, responses_completed
from bedrock_recordings import converse_message
from bedrock_recordings import index as bedrock_index
from bedrock_recordings import model_of as bedrock_model
from mock_http import serve, sse_response

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.registry import get_adapter
from metis_core.errors import UnknownModelError
from metis_core.messages import Message, MessageComplete, user_message
from metis_core.models.registry import default_registry
from metis_core.transport.framing import decode_all

HISTORY = [user_message("go")]
Json = dict[str, Any]


@dataclass(frozen=True)
class Api:
    provider: str
    default_model: str
    recorded_answer: Callable[[bytes, bool], Json]
    """The answer a recording adds up to (a stream accumulated by the API's documented rules)."""
    recorded_turn: Callable[[Json], Any]
    sent_turn: Callable[[Json], Any]
    projection: Callable[[Any], Any]


def sent_back(api: Api, data: bytes, streamed: bool, model: str) -> tuple[Message, Json]:
    client, _ = serve(
        sse_response(data) if streamed else httpx.Response(200, content=data),
        provider=api.provider,
        api_key="sk-test-SECRET-0123",
    )
    ids = ToolIdMap()
    if streamed:
        events = list(client.stream(HISTORY, model=model, tool_ids=ids))
        assert isinstance(events[-1], MessageComplete)
        message = events[-1].message
    else:
        message = client.complete(HISTORY, model=model, tool_ids=ids)
    adapter = get_adapter(api.provider)
    wire = adapter.to_wire([*HISTORY, message], [], AdapterOptions(model=model), ids)
    return message, wire.body


# --- Anthropic: content blocks exactly -----------------------------------------------------------


def _anthropic_answer(data: bytes, streamed: bool) -> Json:
    return anthropic_message(data) if streamed else dict(json.loads(data))


def _anthropic_recorded(answer: Json) -> Any:
    """A tool_use cut off mid-input (max_tokens) has no input object, so the API takes no such block."""
    return [block for block in answer["content"] if "partial_json" not in block]


def _assistant_turn(turns: list[Json], role: str, empty: Json) -> Json:
    """The one assistant turn of a written body; an answer with nothing to send writes none."""
    found = [turn for turn in turns if turn["role"] == role]
    assert len(found) <= 1, found
    return found[0] if found else empty


def _anthropic_sent(body: Json) -> Any:
    content = _assistant_turn(body["messages"], "assistant", {"content": []})["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


ANTHROPIC = Api(
    "anthropic",
    "anthropic:claude-sonnet-4-5",
    _anthropic_answer,
    _anthropic_recorded,
    _anthropic_sent,
    normalized_anthropic_content,
)


# --- OpenAI Chat Completions: the assistant message of the first choice --------------------------


def _chat_stream_message(data: bytes) -> Json:
    message: Json = {"role": "assistant", "content": None, "refusal": None}
    calls: dict[int, Json] = {}
    for chunk in decode_all(data, "sse"):
        if not chunk.data or chunk.data == "[DONE]":
            continue
        for choice in json.loads(chunk.data).get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            for key in ("content", "refusal"):
                value = delta.get(key)
                if isinstance(value, list):  # content parts (Mistral's thinking streams)
                    value = "".join(part.get("text") or "" for part in value)
                if value:
                    message[key] = (message[key] or "") + value
            for fragment in delta.get("tool_calls") or ():
                call = calls.setdefault(fragment["index"], {"function": {"name": "", "arguments": ""}})
                for key in ("id", "type"):
                    if fragment.get(key):
                        call[key] = fragment[key]
                function = fragment.get("function") or {}
                call["function"]["name"] += function.get("name") or ""
                call["function"]["arguments"] += function.get("arguments") or ""
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


def _chat_answer(data: bytes, streamed: bool) -> Json:
    if streamed:
        return _chat_stream_message(data)
    message: Json = json.loads(data)["choices"][0]["message"]
    return message


def _chat_sent(body: Json) -> Any:
    return _assistant_turn(body["messages"], "assistant", {"role": "assistant"})


def _chat_projection(message: Json) -> Json:
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(part.get("text") or "" for part in content)
    calls = []
    for call in message.get("tool_calls") or ():
        kept = {"id": call.get("id"), "type": call.get("type", "function")}
        for kind in ("function", "custom"):
            if call.get(kind) and any(call[kind].values()):  # Snowflake's empty `custom` beside `function`
                kept[kind] = dict(call[kind])
        if "function" in kept and not kept["function"].get("arguments"):
            kept["function"]["arguments"] = "{}"  # a call recorded without arguments is sent with none: `{}`
        calls.append(kept)
    audio = message.get("audio")
    return {
        "role": message["role"],
        "content": content or None,
        "refusal": message.get("refusal") or None,
        "tool_calls": calls,
        "audio": {"id": audio["id"]} if audio and audio.get("id") else None,
    }


OPENAI_CHAT = Api("openai", "openai:gpt-4.1-mini", _chat_answer, lambda m: m, _chat_sent, _chat_projection)


# --- OpenAI Responses: every output item the API accepts as input -------------------------------


def _responses_answer(data: bytes, streamed: bool) -> Json:
    return responses_completed(data) if streamed else dict(json.loads(data))


def _responses_recorded(answer: Json) -> Any:
    """Output items as input: reasoning without `encrypted_content` cannot be replayed statelessly,
    so it is not sent back (docs/adapters/openai_responses.md); a message without text is not either."""
    out = []
    for item in answer["output"]:
        if item["type"] == "reasoning" and not item.get("encrypted_content"):
            continue
        if item["type"] == "message" and not any(p.get("text") or p.get("refusal") for p in item["content"]):
            continue
        out.append(item)
    return out


REPAIR_OUTPUTS = ("function_call_output", "custom_tool_call_output", "shell_call_output", "local_shell_call_output",
                  "apply_patch_call_output", "computer_call_output")
"""Items history repair adds to answer a client call left open; not part of the answer. A hosted
`shell_call_output` the answer itself carries has an `id`; a repair's has none."""
STATELESS_ITEMS = ("message", "reasoning", "function_call", "custom_tool_call")
"""Items whose `id` and `status` are not sent: under `store: false` an echoed id fails
("Items are not persisted when `store` is set to false"; docs/adapters/openai_responses.md)."""


def _responses_sent(body: Json) -> Any:
    items = body["input"][1:]
    return [i for i in items if (i.get("type") not in REPAIR_OUTPUTS or "id" in i) and i.get("role") != "user"]


def _responses_projection(items: list[Json]) -> list[Json]:
    out = []
    for item in items:
        item = dict(item)
        if item.get("type", "message") in STATELESS_ITEMS:
            item.pop("id", None)
            item.pop("status", None)
        if item.get("type") == "reasoning" and not item.get("content"):
            item.pop("content", None)  # `content: []` is no content
        if item.get("type") == "message" or item.get("role") == "assistant":
            content = item.get("content")
            if isinstance(content, str):
                content = [{"type": "output_text", "text": content}]
            parts = []
            for part in content or ():
                part = dict(part)
                if part.get("type") == "output_text" and not part.get("logprobs"):
                    part.pop("logprobs", None)
                if part.get("type") == "output_text":
                    part.setdefault("annotations", [])
                parts.append(part)
            item["content"] = parts
            item.setdefault("type", "message")
        out.append(item)
    return out


OPENAI_RESPONSES = Api(
    "openai_responses",
    "openai_responses:gpt-5-mini",
    _responses_answer,
    _responses_recorded,
    _responses_sent,
    _responses_projection,
)


# --- Gemini: candidate content parts -------------------------------------------------------------


def _gemini_answer(data: bytes, streamed: bool) -> Json:
    if not streamed:
        return dict(json.loads(data))
    parts: list[Json] = []
    answer: Json = {}
    added: Json = {"content": {"role": "model", "parts": parts}}
    for chunk in decode_all(data, "sse"):
        if not chunk.data:
            continue
        body = json.loads(chunk.data)
        answer.setdefault("modelVersion", body.get("modelVersion"))
        for candidate in body.get("candidates") or ():
            for part in (candidate.get("content") or {}).get("parts") or ():
                _add_streamed_part(parts, part)
            if candidate.get("finishReason"):
                added["finishReason"] = candidate["finishReason"]
    answer["candidates"] = [added]
    return answer


def _add_streamed_part(parts: list[Json], part: Json) -> None:
    """A call streamed with `streamFunctionCallArguments` comes as a named part, then unnamed parts
    whose `partialArgs` set (and for strings, extend) the value at a JSON path, then `{}`."""
    call = part.get("functionCall")
    if call is None or "name" in call:
        if call is not None:
            part = {**part, "functionCall": {k: v for k, v in call.items() if k != "willContinue"}}
        parts.append(part)
        return
    current = parts[-1]["functionCall"]
    for piece in call.get("partialArgs") or ():
        _set_at_path(current.setdefault("args", {}), piece)


def _set_at_path(args: Json, piece: Json) -> None:
    keys: list[str | int] = [int(k) if k.isdigit() else k for k in re.findall(r"\w+", piece["jsonPath"][1:])]
    node: Any = args
    for key, following in pairwise(keys):
        empty: Any = [] if isinstance(following, int) else {}
        if isinstance(node, list):
            while len(node) <= int(key):
                node.append(None)
            node[int(key)] = node[int(key)] if node[int(key)] is not None else empty
        else:
            node.setdefault(key, empty)
        node = node[key]
    last = keys[-1]
    if isinstance(node, list):
        while len(node) <= int(last):
            node.append(None)
    if "stringValue" in piece:
        before = node[last] if isinstance(node, list) else node.get(last)
        node[last] = (before or "") + piece["stringValue"]
    else:
        value_key = next(k for k in piece if k.endswith("Value"))
        node[last] = None if value_key == "nullValue" else piece[value_key]


def _gemini_sent(body: Json) -> Any:
    return _assistant_turn(body["contents"], "model", {"parts": []})["parts"]


def _signature_bytes(signature: str) -> bytes:
    """Gemini reads a bytes field in either base64 alphabet; the adapter sends the URL-safe one."""
    return base64.urlsafe_b64decode(signature.replace("+", "-").replace("/", "_"))


def _gemini_projection(parts: list[Json]) -> list[Json]:
    """Equivalent spellings only: streamed text pieces of one kind (thought or not) are one part,
    carrying the one signature they had; empty text without a signature is not a part; a thought
    summary without a signature is not replayed (Gemini does not need it, docs/adapters/gemini.md);
    bytes fields in either base64 alphabet; a functionCall without `args` has empty ones."""
    out: list[Json] = []
    for part in parts:
        part = dict(part)
        if "thoughtSignature" in part:
            part["thoughtSignature"] = _signature_bytes(part["thoughtSignature"])
        if "inlineData" in part:  # a generated image's bytes, in either alphabet
            part["inlineData"] = {**part["inlineData"], "data": _signature_bytes(part["inlineData"]["data"])}
        if "functionCall" in part:  # no `args` is an empty Struct
            part["functionCall"] = {"args": {}, **part["functionCall"]}
        if "text" in part:
            if part.get("thought") and "thoughtSignature" not in part:
                continue
            previous = out[-1] if out else None
            if (
                previous is not None
                and "text" in previous
                and bool(previous.get("thought")) == bool(part.get("thought"))
                and not ("thoughtSignature" in previous and "thoughtSignature" in part)
            ):
                previous["text"] += part["text"]
                if "thoughtSignature" in part:
                    previous["thoughtSignature"] = part["thoughtSignature"]
                continue
            if not part["text"] and "thoughtSignature" not in part:
                continue
        out.append(part)
    return out


FAILED_CALL_REASONS = ("MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS")


def _gemini_recorded(answer: Json) -> Any:
    """An answer that ends in a failed call (e.g. UNEXPECTED_TOOL_CALL: a function nobody declared)
    is an error turn: nothing ran its calls, so they are not sent back (docs/adapters/gemini.md)."""
    candidate = (answer.get("candidates") or [{}])[0]
    parts = (candidate.get("content") or {}).get("parts") or []
    if candidate.get("finishReason") in FAILED_CALL_REASONS:
        return [part for part in parts if "functionCall" not in part]
    return parts


GEMINI = Api("gemini", "gemini:gemini-2.5-flash", _gemini_answer, _gemini_recorded, _gemini_sent, _gemini_projection)


# --- OpenRouter (Chat Completions plus `reasoning_details`) and Ollama's native /api/chat ---------


def _openrouter_answer(data: bytes, streamed: bool) -> Json:
    """A stream's detail fragments of one (index, type) join their strings, as OpenRouter documents."""
    if not streamed:
        message: Json = json.loads(data)["choices"][0]["message"]
        return message
    answer = _chat_stream_message(data)
    details: dict[tuple[Any, Any], Json] = {}
    for chunk in decode_all(data, "sse"):
        if not chunk.data or chunk.data == "[DONE]":
            continue
        for choice in json.loads(chunk.data).get("choices") or ():
            for fragment in (choice.get("delta") or {}).get("reasoning_details") or ():
                merged = details.setdefault((fragment.get("index", 0), fragment.get("type")), {})
                for key, value in fragment.items():
                    if key in ("text", "summary", "data", "signature") and isinstance(value, str):
                        merged[key] = (merged.get(key) or "") + value
                    elif merged.get(key) is None:
                        merged[key] = value
    if details:
        answer["reasoning_details"] = list(details.values())
    return answer


def _openrouter_projection(message: Json) -> Json:
    return {**_chat_projection(message), "reasoning_details": message.get("reasoning_details") or None}


OPENROUTER = Api(
    "openrouter", "openrouter:openai/gpt-4.1-mini", _openrouter_answer, lambda m: m, _chat_sent, _openrouter_projection
)


def _ollama_answer(data: bytes, streamed: bool) -> Json:
    """A stream's lines add up: content and thinking concatenate, tool calls accumulate."""
    if not streamed:
        return dict(json.loads(data))
    message: Json = {"role": "assistant", "content": "", "thinking": "", "tool_calls": []}
    model = None
    for chunk in decode_all(data, "ndjson"):
        line = json.loads(chunk.data)
        model = model or line.get("model")
        part = line.get("message") or {"content": line.get("response")}  # /api/generate lines
        for key in ("content", "thinking"):
            message[key] += part.get(key) or ""
        message["tool_calls"] += part.get("tool_calls") or []
    return {"model": model, "message": message}


def _ollama_projection(message: Json) -> Json:
    calls = [{"name": c["function"]["name"], "arguments": c["function"].get("arguments") or {}}
             for c in message.get("tool_calls") or ()]
    return {"content": message.get("content") or None, "thinking": message.get("thinking") or None,
            "tool_calls": calls, "images": message.get("images") or None}


OLLAMA = Api(
    "ollama",
    "ollama:llama3.2",
    _ollama_answer,
    lambda answer: answer["message"],
    lambda body: _assistant_turn(body["messages"], "assistant", {"role": "assistant"}),
    _ollama_projection,
)

THINK = re.compile(r"^\s*<think>.*?(</think>|$)", re.DOTALL)


def _compatible_recorded(message: Json) -> Json:
    """Reasoning a server puts in the content (`<think>…</think>`, Qwen, DeepSeek R1) is not sent back:
    those models' chat templates drop it from history (docs/adapters/openai_compatible.md)."""
    content = message.get("content")
    return {**message, "content": THINK.sub("", content)} if isinstance(content, str) else message


def _compatible_projection(message: Json) -> Json:
    """As Chat Completions, but for the whitespace that opened the answer after its reasoning."""
    projected = _chat_projection(message)
    return {**projected, "content": (projected["content"] or "").lstrip() or None,
            "extra_content": message.get("extra_content") or None}  # Gemini's thought signature


OPENAI_COMPATIBLE = Api("openai_compatible", "openai_compatible:served-model", _chat_answer, _compatible_recorded,
                        _chat_sent, _compatible_projection)


# --- Bedrock Converse: the output message's content blocks -------------------------------------


def _converse_projection(content: list[Json]) -> list[Json]:
    """Equivalent spellings only: an empty text block is no block."""
    return [block for block in content if block != {"text": ""}]


BEDROCK = Api(
    "bedrock",
    "bedrock:us.amazon.nova-micro-v1:0",
    converse_message,
    lambda message: message["content"],
    lambda body: _assistant_turn(body["messages"], "assistant", {"content": []})["content"],
    _converse_projection,
)

APIS = {"anthropic": ANTHROPIC, "openai_chat": OPENAI_CHAT, "openai_responses": OPENAI_RESPONSES, "gemini": GEMINI,
        "openrouter": OPENROUTER, "ollama": OLLAMA, "openai_compatible": OPENAI_COMPATIBLE, "bedrock": BEDROCK}


def model_of(api: Api, answer: Json, path: Path | None = None) -> str:
    """Gemini's recorded model (its signatures go back only to the model that made them), when the
    registry knows it; a Bedrock recording's model from its request (recordings.json); the API's
    default model otherwise."""
    if api is BEDROCK and path is not None:
        return bedrock_model(next(n for n, entry in bedrock_index().items() if entry["file"] == path.name))
    if api is OLLAMA and answer.get("model"):
        return f"ollama:{answer['model']}"  # thinking goes back only to the model that thought it
    name = answer.get("modelVersion")
    if api is GEMINI and name:
        try:
            return default_registry().get(f"gemini:{name}").id
        except UnknownModelError:
            pass
    return api.default_model
