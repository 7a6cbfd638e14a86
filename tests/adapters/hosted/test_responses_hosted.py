"""OpenAI Responses hosted-tool items, compaction and annotations on recorded traffic.

Each recorded answer, streamed and not, is served through ModelClient; re-sent to the Responses
API its hosted items come back verbatim and in order, a stream agrees with the non-streaming parse
of its own terminal response, and the terminal output is matched to streamed items by id.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from adapters.hosted.wire_oracle import responses_completed
from fixture_files import HOSTED_MARK, read_bytes, read_json, wire_files
from mock_http import serve, sse_response

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.openai_responses.adapter import OpenAIResponsesAdapter
from metis_core.errors import CapabilityMismatchError
from metis_core.messages import (
    CompactionBlock,
    Message,
    MessageComplete,
    MessageStatus,
    ProviderToolCallBlock,
    ProviderToolResultBlock,
    TextBlock,
    ToolUseStart,
    user_message,
)

PROVIDER = "openai_responses"
MODEL = "openai_responses:gpt-5-mini"
HISTORY = [user_message("go")]
REPAIRED = "interrupted and produced no result"
RESPONSES = [p.name for p in wire_files(PROVIDER, "response") if HOSTED_MARK in p.name]
STREAMS = [p.name for p in wire_files(PROVIDER, "stream") if HOSTED_MARK in p.name]


def client_for(response: httpx.Response) -> Any:
    client, _ = serve(response, provider=PROVIDER, api_key="sk-test-SECRET-0123")
    return client


def parsed(body: dict[str, Any], tool_ids: ToolIdMap | None = None) -> Message:
    message: Message = client_for(httpx.Response(200, content=json.dumps(body).encode())).complete(
        HISTORY, model=MODEL, tool_ids=tool_ids
    )
    return message


def streamed(body: bytes) -> tuple[Message, list[Any]]:
    events = list(client_for(sse_response(body)).stream(HISTORY, model=MODEL))
    assert isinstance(events[-1], MessageComplete)
    message: Message = events[-1].message
    return message, events


def replayable_items(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a stateless replay can carry: reasoning without encrypted_content and empty messages
    are left out by design (docs/adapters/openai_responses.md); messages compare by their text."""
    out: list[dict[str, Any]] = []
    for item in output:
        if item["type"] == "reasoning" and not item.get("encrypted_content"):
            continue
        if item["type"] == "message":
            texts = [p.get("text") or "" for p in item["content"]]
            if not any(texts):
                continue
            out.append({"message": "".join(texts)})
            continue
        out.append(item)
    return out


def sent_items(message: Message, tool_ids: ToolIdMap) -> list[dict[str, Any]]:
    wire = OpenAIResponsesAdapter().to_wire([*HISTORY, message], [], AdapterOptions(model=MODEL), tool_ids)
    assert wire.dropped == []
    out: list[dict[str, Any]] = []
    for item in wire.body["input"][1:]:
        if item.get("type") == "function_call_output" or REPAIRED in json.dumps(item):
            continue  # history repair answers the open client call (function or client shell)
        if item.get("role") == "assistant":
            content = item["content"]
            text = content if isinstance(content, str) else "".join(p["text"] for p in content)
            if out and "message" in out[-1] and not isinstance(content, list):
                out[-1]["message"] += text
            else:
                out.append({"message": text})
            continue
        if item.get("type") == "function_call":
            item = {k: v for k, v in item.items() if k in ("type", "name", "arguments", "call_id")}
        out.append(item)
    return out


def recorded_items(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keep = ("type", "name", "arguments", "call_id")
    items = replayable_items(output)
    return [{k: v for k, v in i.items() if k in keep} if i.get("type") == "function_call" else i for i in items]


def test_every_hosted_item_kind_the_issue_names_is_recorded() -> None:
    kinds = {item["type"] for name in RESPONSES for item in read_json(PROVIDER, name)["output"]}
    assert {
        "web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call", "mcp_call",
        "mcp_list_tools", "mcp_approval_request", "shell_call", "shell_call_output", "local_shell_call",
        "apply_patch_call", "tool_search_call", "tool_search_output", "compaction",
    } <= kinds


@pytest.mark.parametrize("name", RESPONSES)
def test_a_recorded_body_sent_back_to_responses_reproduces_its_output_sequence(name: str) -> None:
    body = read_json(PROVIDER, name)
    ids = ToolIdMap()
    message = parsed(body, ids)
    assert message.status is MessageStatus.COMPLETE
    assert sent_items(message, ids) == recorded_items(body["output"])


@pytest.mark.parametrize("name", STREAMS)
def test_a_recorded_stream_sent_back_reproduces_its_terminal_output(name: str) -> None:
    body = read_bytes(PROVIDER, name)
    message, _ = streamed(body)
    assert message.status is MessageStatus.COMPLETE
    ids = ToolIdMap()
    message_again = parsed(responses_completed(body), ids)  # same content, this map knows the call ids
    assert sent_items(message_again, ids) == recorded_items(responses_completed(body)["output"])


INCONSISTENT = "stream__hosted_shell_call_output.sse"
"""Hand-authored: its terminal message text differs from the text it streamed (see .source.txt)."""


@pytest.mark.parametrize("name", [n for n in STREAMS if n != INCONSISTENT])
def test_streamed_and_non_streamed_parses_agree(name: str) -> None:
    body = read_bytes(PROVIDER, name)
    from_stream, events = streamed(body)
    from_body = parsed(responses_completed(body))
    fresh = {id(theirs): mine.id for mine, theirs in zip(from_stream.tool_uses(), from_body.tool_uses(), strict=True)}
    relabeled = [b.model_copy(update={"id": fresh[id(b)]}) if id(b) in fresh else b for b in from_body.content]
    assert relabeled == from_stream.content  # canonical ids are issued fresh per call
    assert from_body.metadata.stop_reason == from_stream.metadata.stop_reason
    assert len([e for e in events if isinstance(e, ToolUseStart)]) == len(from_stream.tool_uses())
    assert all(b.id and b.name for b in from_stream.tool_uses())


def test_when_copies_of_a_text_disagree_one_is_kept_never_both() -> None:
    message, _ = streamed(read_bytes(PROVIDER, INCONSISTENT))
    assert [b.type for b in message.content] == ["provider_tool_call", "provider_tool_result", "text"]
    assert message.text().startswith("The command ran successfully")
    assert message.text().count("The command ran successfully") == 1


def test_web_search_results_and_url_citations_are_kept() -> None:
    message = parsed(read_json(PROVIDER, "response__hosted_web_search_call.json"))
    calls = [b for b in message.content if isinstance(b, ProviderToolCallBlock)]
    assert {c.name for c in calls} == {"web_search_call"} and all(c.id.startswith("ws_") for c in calls)
    assert "query:" in calls[0].text
    text = next(b for b in message.content if isinstance(b, TextBlock))
    assert text.citations and all(c.url and c.payload["type"] == "url_citation" for c in text.citations)


def test_mcp_listing_is_a_result_and_compaction_its_own_block() -> None:
    mcp = parsed(read_json(PROVIDER, "response__hosted_mcp_call.json"))
    listing = next(b for b in mcp.content if isinstance(b, ProviderToolResultBlock))
    assert listing.name == "mcp_list_tools" and listing.text
    compacted = parsed(read_json(PROVIDER, "response__hosted_compaction.json"))
    block = next(b for b in compacted.content if isinstance(b, CompactionBlock))
    assert block.text == "" and block.payload["encrypted_content"]


def test_the_terminal_output_is_matched_to_streamed_items_by_id_not_position() -> None:
    body = read_bytes(PROVIDER, "stream__hosted_web_search_call.sse")
    lines = body.decode().split("\n")
    for number, line in enumerate(lines):
        if line.startswith("data: ") and '"type":"response.completed"' in line:
            event = json.loads(line[6:])
            event["response"]["output"].reverse()  # positions now disagree with every output_index
            lines[number] = "data: " + json.dumps(event)
    reordered, _ = streamed("\n".join(lines).encode())
    original, _ = streamed(body)
    assert reordered.content == original.content
    assert reordered.text() == original.text() and original.text().count(original.text()[:40]) == 1


def test_hosted_web_and_file_search_are_asked_for_through_adapter_options() -> None:
    options = AdapterOptions(
        model=MODEL, hosted_tools={"web_search": {}, "file_search": {"vector_store_ids": ["vs_1"]}}
    )
    wire = OpenAIResponsesAdapter().to_wire(HISTORY, [], options, ToolIdMap())
    assert wire.body["tools"] == [{"type": "web_search"}, {"type": "file_search", "vector_store_ids": ["vs_1"]}]
    with pytest.raises(CapabilityMismatchError, match="vector_store_ids"):
        bare = AdapterOptions(model=MODEL, hosted_tools={"file_search": {}})
        OpenAIResponsesAdapter().to_wire(HISTORY, [], bare, None)
