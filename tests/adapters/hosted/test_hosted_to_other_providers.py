"""Hosted-tool answers sent to every other provider: text renderings or logged drops, never calls.

Each recorded Anthropic and Responses answer is parsed (bodies) or streamed (streams), then the
conversation goes to each other target. Nothing of a hosted tool becomes a tool call there (the
only calls are the answer's own client calls), every hosted block and foreign citation is in the
request's drop list, and each drop writes the §7.3 WARN line with its five fields.
"""

from __future__ import annotations

import json
import logging

import pytest
from adapters.hosted.wire_oracle import wire_tool_calls
from fixture_files import HOSTED_MARK, read_bytes, wire_files

from metis_core import get_adapter
from metis_core.adapters._common.lossy import forget_logged_drops
from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.anthropic.response import parse_response as anthropic_parse
from metis_core.adapters.anthropic.stream import AnthropicStreamTranslator
from metis_core.adapters.base import AdapterOptions, RequestContext
from metis_core.adapters.openai_responses.response import message_from_response
from metis_core.adapters.openai_responses.stream import ResponsesStreamTranslator
from metis_core.messages import (
    HOSTED_BLOCK_TYPES,
    CompactionBlock,
    Message,
    TextBlock,
    user_message,
)
from metis_core.transport.framing import decode_all
from metis_core.transport.wire import WireResponse

SOURCES = {
    "anthropic": ("anthropic:claude-sonnet-4-5", anthropic_parse),
    "openai_responses": ("openai_responses:gpt-5-mini", message_from_response),
}
TARGETS = {
    "anthropic": "anthropic:claude-sonnet-4-5",
    "openai": "openai:gpt-4.1",
    "openai_responses": "openai_responses:gpt-4.1",
    "gemini": "gemini:gemini-2.5-flash",
    "ollama": "ollama:llama3.1",
    "openrouter": "openrouter:openai/gpt-4o",
}
STREAM_TRANSLATORS = {"anthropic": AnthropicStreamTranslator, "openai_responses": ResponsesStreamTranslator}
CASES = [
    (source, path.name, target)
    for source in SOURCES
    for kind in ("response", "stream")
    for path in wire_files(source, kind)
    if HOSTED_MARK in path.name
    for target in TARGETS
    if target != source
]


def answer(source: str, name: str) -> Message:
    model, parse = SOURCES[source]
    context = RequestContext(model=model, session_id="sess_swap")
    if name.endswith(".sse"):
        translator = STREAM_TRANSLATORS[source](context)
        events = [e for chunk in decode_all(read_bytes(source, name), "sse") for e in translator.feed(chunk)]
        events += translator.finish()
        streamed: Message = events[-1].message  # type: ignore[union-attr]
        return streamed
    message: Message = parse(WireResponse(200, read_bytes(source, name)), context)
    return message


@pytest.mark.parametrize(("source", "name", "target"), CASES)
def test_another_provider_gets_text_or_a_logged_drop_never_a_tool_call(
    source: str, name: str, target: str, caplog: pytest.LogCaptureFixture
) -> None:
    message = answer(source, name)
    history = [user_message("go", session_id="sess_swap"), message, user_message("and then?", session_id="sess_swap")]
    forget_logged_drops()
    with caplog.at_level(logging.WARNING, logger="metis_core.adapters.lossy"):
        wire = get_adapter(target).to_wire(
            history, [], AdapterOptions(model=TARGETS[target], session_id="sess_swap"), ToolIdMap()
        )
    assert wire_tool_calls(target, wire.body) == len(message.tool_uses())
    hosted = [i for i, b in enumerate(message.content) if b.type in HOSTED_BLOCK_TYPES]
    cited = [i for i, b in enumerate(message.content) if isinstance(b, TextBlock) and b.citations]
    kinds = (*HOSTED_BLOCK_TYPES, "citations")
    dropped = [(d.message_id, d.block_index) for d in wire.dropped if d.block_type in kinds]
    assert sorted(dropped) == sorted((message.id, i) for i in hosted + cited)
    records = [r for r in caplog.records if r.name == "metis_core.adapters.lossy" and r.levelno == logging.WARNING]
    logged = {(r.message_id, r.block_type) for r in records}  # type: ignore[attr-defined]
    assert {(message.id, message.content[i].type) for i in hosted} <= logged
    assert all(r.session_id == "sess_swap" and r.adapter and r.reason for r in records)  # type: ignore[attr-defined]
    sent = json.dumps(wire.body)
    for block in message.content:
        if block.type in HOSTED_BLOCK_TYPES and not isinstance(block, CompactionBlock):
            assert block.payload.get("id", "§none§") not in sent or block.payload.get("id") is None
            if block.text:  # type: ignore[union-attr]
                assert json.dumps(block.text[:60])[1:-1] in sent  # type: ignore[union-attr]


def test_an_encrypted_compaction_has_no_text_and_is_dropped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    message = answer("openai_responses", "response__hosted_compaction.json")
    forget_logged_drops()
    with caplog.at_level(logging.WARNING, logger="metis_core.adapters.lossy"):
        wire = get_adapter("anthropic").to_wire(
            [user_message("go"), message], [], AdapterOptions(model=TARGETS["anthropic"]), ToolIdMap()
        )
    (drop,) = [d for d in wire.dropped if d.block_type == "compaction"]
    assert "no text" in drop.reason
    assert "encrypted_content" not in json.dumps(wire.body)
