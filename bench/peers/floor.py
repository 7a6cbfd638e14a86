"""The floor: raw httpx posting a prebuilt body, orjson parsing, a minimal SSE/NDJSON reader.

What a call costs with nothing but the HTTP client and a JSON parser: the request body is
serialized once, and the answer is read straight out of the provider's JSON. Every other figure
is reported as a ratio to this one, measured in the same run. It does no validation beyond what
the suite's answer check does afterwards, and it knows only the benchmark's answer shapes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson

from bench import handwritten
from bench.peers.metis import base_urls, canonical_conversation

NAME = "raw httpx (floor)"
KEY = "sk-bench-not-a-real-key"
PATHS = {
    "anthropic": "/v1/messages",
    "openai": "/chat/completions",
    "openai_responses": "/responses",
    "gemini": "/v1beta/models/gemini-2.5-flash:generateContent",
    "ollama": "/api/chat",
    "openrouter": "/chat/completions",
}
STREAM_PATHS = {**PATHS, "gemini": "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"}
Fields = tuple[str, str, Any, tuple[int, int]]


def headers_for(provider: str) -> dict[str, str]:
    if provider == "anthropic":
        return {"x-api-key": KEY, "anthropic-version": "2023-06-01", "content-type": "application/json"}
    if provider == "gemini":
        return {"x-goog-api-key": KEY, "content-type": "application/json"}
    return {"authorization": f"Bearer {KEY}", "content-type": "application/json"}


def prebuilt_body(provider: str, *, stream: bool) -> bytes:
    """The conversation through the hand-written mapping, serialized once."""
    return orjson.dumps(handwritten.MAPPINGS[provider](canonical_conversation(), stream=stream))


# --- reading answers -------------------------------------------------------------------------


def fields_from_json(provider: str, data: dict[str, Any]) -> Fields:
    if provider == "anthropic":
        text = "".join(b["text"] for b in data["content"] if b["type"] == "text")
        call = next(b for b in data["content"] if b["type"] == "tool_use")
        usage = data["usage"]
        return text, call["name"], call["input"], (usage["input_tokens"], usage["output_tokens"])
    if provider in ("openai", "openrouter"):
        message = data["choices"][0]["message"]
        call = message["tool_calls"][0]["function"]
        usage = data["usage"]
        return (message["content"], call["name"], orjson.loads(call["arguments"]),
                (usage["prompt_tokens"], usage["completion_tokens"]))
    if provider == "openai_responses":
        text = "".join(c["text"] for item in data["output"] if item["type"] == "message" for c in item["content"])
        call = next(item for item in data["output"] if item["type"] == "function_call")
        usage = data["usage"]
        return text, call["name"], orjson.loads(call["arguments"]), (usage["input_tokens"], usage["output_tokens"])
    if provider == "gemini":
        parts = data["candidates"][0]["content"]["parts"]
        text = "".join(p.get("text", "") for p in parts)
        call = next(p["functionCall"] for p in parts if "functionCall" in p)
        usage = data["usageMetadata"]
        return text, call["name"], call["args"], (usage["promptTokenCount"], usage["candidatesTokenCount"])
    message = data["message"]
    call = message["tool_calls"][0]["function"]
    return message["content"], call["name"], call["arguments"], (data["prompt_eval_count"], data["eval_count"])


def _lines(raw: Iterator[bytes]) -> Iterator[bytes]:
    buffer = b""
    for chunk in raw:
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        yield from lines
    if buffer:
        yield buffer


class StreamAccumulator:
    """Reads decoded stream events of one provider into text, one tool call and usage."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.text: list[str] = []
        self.args: list[str] = []
        self.name = ""
        self.whole_args: Any = None
        self.usage = (0, 0)
        self.events = 0

    def feed(self, data: dict[str, Any]) -> None:
        self.events += 1
        p = self.provider
        if p == "anthropic":
            kind = data["type"]
            if kind == "content_block_delta":
                delta = data["delta"]
                if delta["type"] == "text_delta":
                    self.text.append(delta["text"])
                else:
                    self.args.append(delta["partial_json"])
            elif kind == "content_block_start" and data["content_block"]["type"] == "tool_use":
                self.name = data["content_block"]["name"]
            elif kind == "message_delta":
                self.usage = (data["usage"]["input_tokens"], data["usage"]["output_tokens"])
        elif p in ("openai", "openrouter"):
            if data["usage"]:
                self.usage = (data["usage"]["prompt_tokens"], data["usage"]["completion_tokens"])
            for choice in data["choices"]:
                delta = choice["delta"]
                if delta.get("content"):
                    self.text.append(delta["content"])
                for call in delta.get("tool_calls") or ():
                    function = call["function"]
                    if "name" in function:
                        self.name = function["name"]
                    self.args.append(function["arguments"])
        elif p == "openai_responses":
            kind = data["type"]
            if kind == "response.output_text.delta":
                self.text.append(data["delta"])
            elif kind == "response.function_call_arguments.delta":
                self.args.append(data["delta"])
            elif kind == "response.output_item.added" and data["item"]["type"] == "function_call":
                self.name = data["item"]["name"]
            elif kind == "response.completed":
                usage = data["response"]["usage"]
                self.usage = (usage["input_tokens"], usage["output_tokens"])
        elif p == "gemini":
            for part in data["candidates"][0]["content"]["parts"]:
                if "text" in part:
                    self.text.append(part["text"])
                elif "functionCall" in part:
                    self.name, self.whole_args = part["functionCall"]["name"], part["functionCall"]["args"]
            if "usageMetadata" in data:
                usage = data["usageMetadata"]
                self.usage = (usage["promptTokenCount"], usage["candidatesTokenCount"])
        else:
            message = data["message"]
            self.text.append(message["content"])
            for call in message.get("tool_calls") or ():
                self.name, self.whole_args = call["function"]["name"], call["function"]["arguments"]
            if data["done"]:
                self.usage = (data["prompt_eval_count"], data["eval_count"])

    def fields(self) -> Fields:
        args = self.whole_args if self.whole_args is not None else orjson.loads("".join(self.args))
        return "".join(self.text), self.name, args, self.usage


def read_stream(provider: str, raw: Iterator[bytes]) -> tuple[Fields, int]:
    """Minimal SSE (or NDJSON) parse: `data:` lines through orjson, the rest skipped."""
    acc = StreamAccumulator(provider)
    ndjson = provider == "ollama"
    for line in _lines(raw):
        if ndjson:
            if line.strip():
                acc.feed(orjson.loads(line))
        elif line.startswith(b"data:") and line[5:].strip() != b"[DONE]":
            acc.feed(orjson.loads(line[5:]))
    return acc.fields(), acc.events


PROVIDERS = ("anthropic", "openai")
STREAM_PROVIDERS = tuple(PATHS)


class FloorCaller:
    """Its results are already the checked fields: reading them out of the JSON is its whole parse."""

    def __init__(self, server: str) -> None:
        self.urls = base_urls(server)
        self.client = httpx.Client()
        self.async_client = httpx.AsyncClient()
        self.bodies = {p: prebuilt_body(p, stream=False) for p in PATHS}
        self.stream_bodies = {p: prebuilt_body(p, stream=True) for p in PATHS}
        self.headers = {p: headers_for(p) for p in PATHS}

    def complete(self, provider: str) -> Fields:
        response = self.client.post(self.urls[provider] + PATHS[provider], content=self.bodies[provider],
                                    headers=self.headers[provider])
        response.raise_for_status()
        return fields_from_json(provider, orjson.loads(response.content))

    async def acomplete(self, provider: str) -> Fields:
        response = await self.async_client.post(self.urls[provider] + PATHS[provider],
                                                content=self.bodies[provider], headers=self.headers[provider])
        response.raise_for_status()
        return fields_from_json(provider, orjson.loads(response.content))

    def stream(self, provider: str) -> tuple[Fields, int]:
        url = self.urls[provider] + STREAM_PATHS[provider]
        with self.client.stream("POST", url, content=self.stream_bodies[provider],
                                headers=self.headers[provider]) as response:
            response.raise_for_status()
            return read_stream(provider, response.iter_raw())

    @staticmethod
    def fields(result: Fields) -> Fields:
        return result

    def close(self) -> None:
        self.client.close()

    async def aclose(self) -> None:
        await self.async_client.aclose()
