"""Recorded Bedrock Converse / ConverseStream traffic (tests/data/bedrock, see PROVENANCE.md there).

`recordings()` names each response with the model id its request used (the URL's encoded id
decoded), so a test builds the context the real call had; `converse_message` is the assistant
message a recording holds, a stream added up by AWS's documented rules.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote

DATA = Path(__file__).resolve().parent / "data" / "bedrock"


@cache
def index() -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = json.loads((DATA / "recordings.json").read_text())
    return data


def body(name: str) -> bytes:
    return (DATA / index()[name]["file"]).read_bytes()


def model_of(name: str) -> str:
    """`bedrock:<model id>` as the recorded request's path carried it (percent-encoded there)."""
    encoded = index()[name]["request_uri"].split("/model/", 1)[1].rsplit("/", 1)[0]
    return "bedrock:" + unquote(encoded)


def names(kind: str) -> list[str]:
    """Recordings whose name starts with `kind` ("converse", "stream", "error")."""
    return [name for name in index() if name.startswith(kind + "_")]


Json = dict[str, Any]


def _converse_stream_message(data: bytes) -> Json:
    """A ConverseStream adds up by AWS's documented rules: per contentBlockIndex, text and reasoning
    text concatenate, a toolUse's input is JSON sent in fragments, and a block that received
    `citation` deltas is the `citationsContent` of its text (as Converse answers it)."""
    from botocore.eventstream import EventStreamBuffer  # framing read by botocore, not by the code under test

    frames = EventStreamBuffer()
    frames.add_data(data)
    blocks: dict[int, Json] = {}
    for frame in frames:
        event = json.loads(frame.payload) if frame.payload else {}
        block = blocks.setdefault(event.get("contentBlockIndex", -1), {})
        kind = frame.headers.get(":event-type")
        if kind == "contentBlockStart" and "toolUse" in event["start"]:
            block["toolUse"] = {**event["start"]["toolUse"], "input": ""}
        elif kind == "contentBlockDelta":
            delta = event["delta"]
            if "toolUse" in delta:
                block["toolUse"]["input"] += delta["toolUse"]["input"]
            if "text" in delta:
                block["text"] = block.get("text", "") + delta["text"]
            if "citation" in delta:
                block.setdefault("citations", []).append(delta["citation"])
            for key, piece in (delta.get("reasoningContent") or {}).items():
                reasoning = block.setdefault("reasoning", {})
                reasoning[key] = reasoning.get(key, "") + piece
    return {"role": "assistant", "content": [_converse_block(blocks[i]) for i in sorted(blocks) if i >= 0]}


def _converse_block(block: Json) -> Json:
    if "toolUse" in block:
        call = block["toolUse"]
        return {"toolUse": {**call, "input": json.loads(call["input"] or "{}")}}
    if "reasoning" in block:
        reasoning = block["reasoning"]
        if "redactedContent" in reasoning:
            return {"reasoningContent": {"redactedContent": reasoning["redactedContent"]}}
        return {"reasoningContent": {"reasoningText": reasoning}}
    if "citations" in block:
        return {"citationsContent": {"content": [{"text": block.get("text", "")}], "citations": block["citations"]}}
    return {"text": block.get("text", "")}


def converse_message(data: bytes, streamed: bool) -> Json:
    """The assistant message a recording holds: a Converse answer's `output.message`, or what a
    ConverseStream adds up to."""
    if streamed:
        return _converse_stream_message(data)
    message: Json = json.loads(data)["output"]["message"]
    return message
