"""Anthropic hosted tools, citations and compaction on recorded traffic: exact back to Anthropic.

Every recorded answer (server tools, MCP connector, programmatic tool calling, compaction,
citations), streamed and not, is served through ModelClient over MockTransport; the parsed message
re-sent to Anthropic reproduces the recorded content sequence, and a stream agrees with the
non-streaming parse of the body it adds up to.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from adapters.hosted.wire_oracle import anthropic_message, normalized_anthropic_content
from fixture_files import HOSTED_MARK, read_bytes, read_json, wire_files
from mock_http import MODEL, serve, sse_response

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.anthropic.adapter import AnthropicAdapter
from metis_core.adapters.base import AdapterOptions
from metis_core.errors import CapabilityMismatchError
from metis_core.messages import (
    CompactionBlock,
    Message,
    MessageComplete,
    MessageStatus,
    ProviderToolCallBlock,
    ProviderToolResultBlock,
    StreamEvent,
    TextBlock,
    ToolUseStart,
    user_message,
)

HISTORY = [user_message("go")]
RESPONSES = [p.name for p in wire_files("anthropic", "response") if HOSTED_MARK in p.name]
STREAMS = [p.name for p in wire_files("anthropic", "stream") if HOSTED_MARK in p.name]


def streamed(name: str, tool_ids: ToolIdMap | None = None) -> tuple[Message, list[StreamEvent]]:
    client, _ = serve(sse_response(read_bytes("anthropic", name)))
    events = list(client.stream(HISTORY, model=MODEL, tool_ids=tool_ids))
    assert isinstance(events[-1], MessageComplete)
    message: Message = events[-1].message
    return message, events


def parsed(body: dict[str, Any], tool_ids: ToolIdMap | None = None) -> Message:
    client, _ = serve(httpx.Response(200, content=json.dumps(body).encode()))
    return client.complete(HISTORY, model=MODEL, tool_ids=tool_ids)


def replayed_content(message: Message, tool_ids: ToolIdMap) -> list[dict[str, Any]]:
    """The assistant turn `message` becomes when the conversation goes back to Anthropic."""
    wire = AnthropicAdapter().to_wire([*HISTORY, message], [], AdapterOptions(model=MODEL), tool_ids)
    assert wire.dropped == []
    (turn,) = [t for t in wire.body["messages"] if t["role"] == "assistant"]
    content: list[dict[str, Any]] = turn["content"]
    return content


def test_every_hosted_block_kind_the_issue_names_is_recorded() -> None:
    kinds = set()
    for name in RESPONSES:
        for block in read_json("anthropic", name)["content"]:
            kinds.add(block["type"])
            kinds.update(c["type"] for c in block.get("citations") or ())
    assert {
        "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
        "bash_code_execution_tool_result", "text_editor_code_execution_tool_result", "tool_search_tool_result",
        "mcp_tool_use", "mcp_tool_result", "advisor_tool_result", "compaction", "web_search_result_location",
    } <= kinds


@pytest.mark.parametrize("name", RESPONSES)
def test_a_recorded_body_sent_back_to_anthropic_reproduces_its_content(name: str) -> None:
    body = read_json("anthropic", name)
    ids = ToolIdMap()
    message = parsed(body, ids)
    assert message.status is MessageStatus.COMPLETE
    assert replayed_content(message, ids) == normalized_anthropic_content(body["content"])


@pytest.mark.parametrize("name", STREAMS)
def test_a_recorded_stream_sent_back_to_anthropic_reproduces_what_it_streamed(name: str) -> None:
    ids = ToolIdMap()
    message, _ = streamed(name, ids)
    assert message.status is MessageStatus.COMPLETE
    recorded = anthropic_message(read_bytes("anthropic", name))
    assert replayed_content(message, ids) == normalized_anthropic_content(recorded["content"])


@pytest.mark.parametrize("name", STREAMS)
def test_streamed_and_non_streamed_parses_agree(name: str) -> None:
    from_stream, _ = streamed(name)
    from_body = parsed(anthropic_message(read_bytes("anthropic", name)))
    fresh = {id(theirs): mine.id for mine, theirs in zip(from_stream.tool_uses(), from_body.tool_uses(), strict=True)}
    relabeled = [b.model_copy(update={"id": fresh[id(b)]}) if id(b) in fresh else b for b in from_body.content]
    assert relabeled == from_stream.content  # canonical ids are issued fresh per call
    assert from_body.metadata.stop_reason == from_stream.metadata.stop_reason


@pytest.mark.parametrize("name", STREAMS)
def test_no_hosted_tool_reaches_the_assembler_as_a_client_call(name: str) -> None:
    message, events = streamed(name)
    recorded = anthropic_message(read_bytes("anthropic", name))
    client_calls = [b for b in recorded["content"] if b["type"] == "tool_use"]
    starts = [e for e in events if isinstance(e, ToolUseStart)]
    assert [s.name for s in starts] == [b.name for b in message.tool_uses()] == [b["name"] for b in client_calls]
    assert all(b.id and b.name for b in message.tool_uses())
    hosted = [b for b in recorded["content"] if b["type"] in ("server_tool_use", "mcp_tool_use")]
    calls = [b for b in message.content if isinstance(b, ProviderToolCallBlock)]
    assert [c.id for c in calls] == [b["id"] for b in hosted]


def test_a_streamed_server_tool_keeps_its_streamed_input_not_a_phantom_call() -> None:
    message, events = streamed("stream__hosted_web_search_citations.sse")
    assert not any(isinstance(e, ToolUseStart) for e in events)
    call = next(b for b in message.content if isinstance(b, ProviderToolCallBlock))
    assert call.name == "web_search" and call.input == {"query": "tech news today September 26 2025"}
    assert call.payload["input"] == call.input and call.origin.provider == "anthropic"
    result = next(b for b in message.content if isinstance(b, ProviderToolResultBlock))
    assert result.tool_use_id == call.id and "<https://" in result.text
    cited = [b for b in message.content if isinstance(b, TextBlock) and b.citations]
    sources = [c for b in cited for c in b.citations or ()]
    assert sources and all(c.url and c.payload["type"] == "web_search_result_location" for c in sources)


def test_content_and_stop_reason_inside_message_start_count() -> None:
    ids = ToolIdMap()
    message, events = streamed("stream__hosted_programmatic_message_start_content.sse", ids)
    assert message.status is MessageStatus.COMPLETE and message.metadata.stop_reason == "tool_use"
    (use,) = message.tool_uses()
    assert use.name == "rollDie" and use.input == {"player": "player2"}
    assert [type(e).__name__ for e in events if isinstance(e, ToolUseStart)] == ["ToolUseStart"]
    (sent,) = replayed_content(message, ids)
    assert sent["id"] == "toolu_015dGLMbwBKv1ZRQr6KdJzeH"
    assert sent["caller"] == {"type": "code_execution_20250825", "tool_id": "srvtoolu_01MzSrFWsmzBdcoQkGWLyRjK"}


def test_a_compaction_block_keeps_its_summary_streamed_or_not() -> None:
    message, _ = streamed("stream__hosted_compaction.sse")
    block = message.content[0]
    assert isinstance(block, CompactionBlock) and block.text.startswith("## Summary")
    assert block.payload == {"type": "compaction", "content": block.text}
    body = parsed(read_json("anthropic", "response__hosted_compaction.json"))
    assert isinstance(body.content[0], CompactionBlock) and body.content[0].text.startswith("## Summary")


def test_hosted_blocks_survive_storage_and_hash_stably() -> None:
    message, _ = streamed("stream__hosted_web_search_live.sse")
    again = Message.from_json(message.to_json())
    assert again == message and again.content_hash() == message.content_hash()
    assert again.schema_version == 2


def test_hosted_tools_are_asked_for_through_adapter_options() -> None:
    options = AdapterOptions(model=MODEL, hosted_tools={"web_search": {"max_uses": 3}, "code_execution": {}})
    wire = AnthropicAdapter().to_wire(HISTORY, [], options, ToolIdMap())
    assert wire.body["tools"] == [
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
        {"type": "code_execution_20250825", "name": "code_execution"},
    ]
    assert wire.headers["anthropic-beta"] == "code-execution-2025-08-25"
    with pytest.raises(CapabilityMismatchError, match="file_search"):
        AnthropicAdapter().to_wire(HISTORY, [], AdapterOptions(model=MODEL, hosted_tools={"file_search": {}}), None)


def test_the_request_reader_carries_server_tool_definitions_and_replayed_server_blocks() -> None:
    from metis_core.adapters.anthropic.request_reader import read_request

    body = read_json("anthropic", "request__hosted_web_search_tool_definition.json")
    read = read_request(body)
    assert read.tools == [] and read.options.provider_tools == body["tools"]
    replay = read_request(read_json("anthropic", "request__hosted_web_search_replay.json"))
    assistant = next(m for m in replay.messages if m.role.value == "assistant")
    assert [b.type for b in assistant.content][:3] == ["thinking", "provider_tool_call", "provider_tool_result"]


def test_results_for_calls_made_from_code_execution_name_their_container() -> None:
    from metis_core.messages import tool_result_message

    ids = ToolIdMap()
    message, _ = streamed("stream__hosted_programmatic_code_execution.sse", ids)
    assert (message.metadata.provider_raw or {})["container"]["id"] == "container_011CWHPPTDTn1XufeRB9uHeH"
    (call,) = message.tool_uses()
    history = [*HISTORY, message, tool_result_message(call.id, "6")]
    wire = AnthropicAdapter().to_wire(history, [], AdapterOptions(model=MODEL), ids)
    assert wire.body["container"] == "container_011CWHPPTDTn1XufeRB9uHeH"
    plain, _ = streamed("stream__hosted_web_search_citations.sse")
    later = AnthropicAdapter().to_wire([*HISTORY, plain, user_message("more")], [], AdapterOptions(model=MODEL), None)
    assert "container" not in later.body


@pytest.mark.parametrize("name", [*STREAMS, "stream__redacted_thinking.sse"])
def test_every_block_without_deltas_is_announced_whole_where_it_stands(name: str) -> None:
    """Each hosted block and redacted-thinking block is one `whole_block` event carrying the very block the
    final message holds at that index, before any later block's events; each citation a `citation_delta`."""
    from metis_core.messages import CitationDelta, RedactedThinkingBlock, ThinkingBlock, WholeBlock

    message, events = streamed(name)
    signed = [e for e in events if isinstance(e, WholeBlock) and isinstance(e.block, ThinkingBlock)]
    assert [e.index for e in signed] == [i for i, b in enumerate(message.content)
                                         if isinstance(b, ThinkingBlock) and b.signature]
    assert all(message.content[e.index] == e.block for e in signed)  # complete once signed, as the message holds it
    wholes = [e for e in events if isinstance(e, WholeBlock) and e not in signed]
    kinds = (ProviderToolCallBlock, ProviderToolResultBlock, CompactionBlock, RedactedThinkingBlock)
    silent = [i for i, b in enumerate(message.content) if isinstance(b, kinds)]
    assert [e.index for e in wholes] == silent  # every one (the message_start recording has none)
    assert all(message.content[e.index] is e.block for e in wholes)
    indexed = [e.index for e in events if hasattr(e, "index")]
    for event in wholes:  # nothing of a later block came before it
        position = next(i for i, e in enumerate(events) if e is event)
        assert all(index <= event.index for index in indexed[:position])
    cited = [(i, c) for i, b in enumerate(message.content) if isinstance(b, TextBlock) for c in b.citations or ()]
    assert [(e.index, e.citation) for e in events if isinstance(e, CitationDelta)] == cited
