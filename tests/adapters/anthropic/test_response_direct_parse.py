"""The direct non-streaming parse gives exactly the Message the stream assembler builds, prechecked or not.

`parse_response` reads a whole Anthropic answer straight into canonical blocks; the reference here
feeds the same blocks through `MessageAssembler` (as the stream translator does). Every recorded
response (hosted tools, citations, thinking signatures, tool calls, compaction) and a set of odd
bodies must give byte-identical messages, provider_raw key order and tool-id bindings included,
or the same error. Its prechecked fast path (blocks, usage, metadata and Message built without
pydantic re-validating them) must give what the validating constructors give, fields_set included.
"""

from __future__ import annotations

import itertools
from decimal import Decimal
from typing import Any

import orjson
import pytest
from fixture_files import wire_files
from prechecked_reference import model_state, validating_in

from metis_core.adapters._common import response_message
from metis_core.adapters._common import tool_ids as tool_ids_module
from metis_core.adapters._common.assembler import MessageAssembler
from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.anthropic import response, usage
from metis_core.adapters.anthropic.response import API, add_block, canonical_stop_reason, parse_response, raw_details
from metis_core.adapters.anthropic.usage import usage_from_wire
from metis_core.adapters.base import RequestContext
from metis_core.adapters.parse_guard import PARSE_FAILURES
from metis_core.errors import MalformedResponseError
from metis_core.messages import Message, MessageStatus, RoutingDecisionRecord, RoutingMode, ToolDefinition
from metis_core.models.pricing import PriceTable
from metis_core.transport.wire import WireResponse

MODEL = "anthropic:claude-sonnet-4-5"
OFFERED = [ToolDefinition(name="get_weather", description="weather", input_schema={
    "type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]})]


def assembled(response: WireResponse, context: RequestContext) -> Message:
    """The reference: the answer's blocks fed whole to the stream assembler."""
    data = response.json("anthropic")
    assembler = MessageAssembler(context, api=API)
    skipped: list[str] = []
    for index, block in enumerate(data["content"]):
        if isinstance(block, dict):
            add_block(assembler, index, block, skipped)
    assembler.set_usage(usage_from_wire(data.get("usage")))
    assembler.provider_raw.update(raw_details(data))
    if skipped:
        assembler.provider_raw["skipped_block_types"] = skipped
    return assembler.build(MessageStatus.COMPLETE, canonical_stop_reason(data.get("stop_reason")))


def _outcome(parse: Any, body: bytes, tools: list[ToolDefinition], monkeypatch: pytest.MonkeyPatch,
             model: str = MODEL) -> Any:
    """(message JSON with clocks zeroed, tool-id map) or the error; tool ids numbered from 1."""
    counter = itertools.count(1)
    monkeypatch.setattr(tool_ids_module, "new_tool_use_id", lambda: f"tu_{next(counter):026d}")
    ids = ToolIdMap()
    context = RequestContext(model=model, session_id="sess_eq", tool_ids=ids, tools=tools, message_id="msg_eq")
    try:
        message = parse(WireResponse(200, body, {"request-id": "req_eq"}), context)
    except PARSE_FAILURES as error:
        return ("raised", type(error).__name__, str(error))
    except MalformedResponseError as error:
        return ("raised", type(error).__name__, str(error), error.provider)
    data = message.model_dump(mode="json")
    data["created_at"] = None
    data["metadata"]["usage"]["latency_ms"] = 0
    return orjson.dumps(data), ids.to_dict()


def _same(body: bytes, monkeypatch: pytest.MonkeyPatch, tools: list[ToolDefinition] | None = None,
          model: str = MODEL) -> Any:
    direct = _outcome(parse_response, body, tools or [], monkeypatch, model)
    reference = _outcome(assembled, body, tools or [], monkeypatch, model)
    assert direct == reference
    return direct


RESPONSES = [p.name for p in wire_files("anthropic", "response")]


def test_the_recordings_cover_hosted_tools_citations_thinking_tool_calls_and_compaction() -> None:
    for part in ("hosted_web_search_citations", "hosted_compaction", "thinking_with_signature", "redacted_thinking",
                 "parallel_tool_use", "tool_use_caller_stop_details", "hosted_mcp_tool_use"):
        assert any(part in name for name in RESPONSES), part


@pytest.mark.parametrize("offered", [[], OFFERED], ids=["no tools offered", "tools offered"])
@pytest.mark.parametrize("name", RESPONSES)
def test_direct_parse_equals_the_assembler_on_every_recorded_response(
    name: str, offered: list[ToolDefinition], monkeypatch: pytest.MonkeyPatch
) -> None:
    body = (wire_files("anthropic", "response")[RESPONSES.index(name)]).read_bytes()
    outcome = _same(body, monkeypatch, offered)
    assert outcome[0] != "raised"


def _body(content: Any, **extra: Any) -> bytes:
    return orjson.dumps({"id": "msg_1", "model": "claude-sonnet-4-5", "content": content, "stop_reason": "end_turn",
                         "usage": {"input_tokens": 3, "output_tokens": 4}, **extra})


TOOL = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"location": "Paris"}}
HOSTED = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}}
RESULT = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
ODD_BODIES: dict[str, bytes] = {
    "empty content": _body([]),
    "empty text only": _body([{"type": "text", "text": ""}]),
    "text of the wrong type": _body([{"type": "text", "text": 5}]),
    "citations not dicts": _body([{"type": "text", "text": "a", "citations": [1, {"type": "char_location",
                                  "cited_text": "c", "document_index": 0, "start_char_index": 0,
                                  "end_char_index": 1}]}]),
    "citations on empty text": _body([{"type": "text", "text": "", "citations": [{"type": "char_location",
                                      "cited_text": "c", "document_index": 0, "start_char_index": 0,
                                      "end_char_index": 1}]}]),
    "citations not a list": _body([{"type": "text", "text": "a", "citations": 7}]),
    "hosted blocks between others": _body([HOSTED, {"type": "text", "text": "x"}, RESULT, RESULT, TOOL, HOSTED]),
    "hosted blocks only": _body([HOSTED, RESULT]),
    "tool without a name": _body([{"type": "text", "text": "x"}, {"type": "tool_use", "id": "t", "input": {}}]),
    "tool without an id": _body([{"type": "tool_use", "name": "get_weather", "input": {"location": "x"}}]),
    "tool input not an object": _body([{"type": "tool_use", "id": "t", "name": "get_weather", "input": [1]}]),
    "tool input past 2^53": _body([{"type": "text", "text": "x"}, {**TOOL, "input": {"n": 2**60}}, TOOL]),
    "only tool input past 2^53": _body([{**TOOL, "input": {"n": 2**60}}]),
    "tool with a caller": _body([{**TOOL, "caller": {"type": "code_execution_20250825", "tool_id": "srv"}}]),
    "tool breaking its schema": _body([{**TOOL, "input": {"location": 3}}]),
    "a tool id reused": _body([TOOL, TOOL]),
    "thinking with a signature": _body([{"type": "thinking", "thinking": "t", "signature": "sig"}]),
    "thinking without a signature": _body([{"type": "thinking", "thinking": "t"}]),
    "thinking with a numeric signature": _body([{"type": "thinking", "thinking": "t", "signature": 3}]),
    "thinking of the wrong type": _body([{"type": "thinking", "thinking": ["t"]}]),
    "redacted thinking": _body([{"type": "redacted_thinking", "data": "abc"}, {"type": "redacted_thinking"}]),
    "redacted data of the wrong type": _body([{"type": "redacted_thinking", "data": {}}]),
    "a newer block type": _body([{"type": "hologram", "x": 1}, "not a block", {"type": "text", "text": "y"}]),
    "no usage": _body([{"type": "text", "text": "y"}], usage=None),
    "usage not an object": _body([{"type": "text", "text": "y"}], usage=[1]),
    "unknown stop reason": _body([{"type": "text", "text": "y"}], stop_reason="sleepy"),
}


@pytest.mark.parametrize("model", [MODEL, "corp:claude-sonnet-4-5"], ids=["anthropic", "a named provider"])
@pytest.mark.parametrize("name", sorted(ODD_BODIES))
def test_direct_parse_equals_the_assembler_on_odd_bodies(name: str, model: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _same(ODD_BODIES[name], monkeypatch, OFFERED, model)


def test_an_unhashable_tool_input_leaves_the_call_out_and_the_message_partial(monkeypatch: pytest.MonkeyPatch) -> None:
    data, _ = _same(ODD_BODIES["tool input past 2^53"], monkeypatch)
    message = orjson.loads(data)
    assert message["metadata"]["status"] == "partial"
    assert message["metadata"]["provider_raw"]["incomplete"] == "invalid tool arguments"
    assert [b["type"] for b in message["content"]] == ["text", "tool_use"]


ROUTING = RoutingDecisionRecord(mode=RoutingMode.RULE, chosen_model=MODEL, reason="eq", rule_name="r")
PRICES = PriceTable.load()


def _parse_state(body: bytes, tools: list[ToolDefinition], routing: RoutingDecisionRecord | None,
           monkeypatch: pytest.MonkeyPatch) -> Any:
    counter = itertools.count(1)
    monkeypatch.setattr(tool_ids_module, "new_tool_use_id", lambda: f"tu_{next(counter):026d}")
    ids = ToolIdMap()
    context = RequestContext(model=MODEL, session_id="sess_eq", tool_ids=ids, tools=tools, message_id="msg_eq",
                             routing=routing, prices=PRICES)
    try:
        message = parse_response(WireResponse(200, body, {"request-id": "req_eq"}), context)
    except Exception as error:  # the two paths must fail alike, whatever the error
        return ("raised", type(error).__name__, str(error))
    assert message.id == "msg_eq"
    return model_state(message), ids.to_dict()


def same_as_general_path(body: bytes, monkeypatch: pytest.MonkeyPatch, tools: list[ToolDefinition],
                         routing: RoutingDecisionRecord | None = None) -> Any:
    fast = _parse_state(body, tools, routing, monkeypatch)
    with monkeypatch.context() as patched:
        validating_in(patched, response, usage, response_message)  # the direct routing record: response_message
        general = _parse_state(body, tools, routing, patched)
    assert fast == general
    return fast


RESPONSE_PATHS = wire_files("anthropic", "response")


@pytest.mark.parametrize("routing", [None, ROUTING], ids=["direct", "routed"])
@pytest.mark.parametrize("offered", [[], OFFERED], ids=["no tools offered", "tools offered"])
@pytest.mark.parametrize("path", RESPONSE_PATHS, ids=[p.name for p in RESPONSE_PATHS])
def test_every_recorded_response_parses_the_same_on_the_fast_path(
    path: Any, offered: list[ToolDefinition], routing: RoutingDecisionRecord | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome = same_as_general_path(path.read_bytes(), monkeypatch, offered, routing)
    assert outcome[0] != "raised"
    usage_state = outcome[0][1]["metadata"][1]["usage"][1]
    assert isinstance(usage_state["cost_usd"], Decimal)  # priced: the fast price_usage ran


WEIRD_USAGE: dict[str, Any] = {
    "usage counts as floats": {"input_tokens": 3.0, "output_tokens": 4},
    "usage count as a string": {"input_tokens": "3", "output_tokens": 4},
    "usage count as a bool": {"input_tokens": True, "output_tokens": 4},
    "usage count past the limit": {"input_tokens": 2**60, "output_tokens": 4},
    "usage with cache figures": {"input_tokens": 3, "output_tokens": 4, "cache_read_input_tokens": 9,
                                 "cache_creation_input_tokens": 2},
}


@pytest.mark.parametrize("name", sorted(ODD_BODIES) + sorted(WEIRD_USAGE))
def test_odd_bodies_parse_or_fail_the_same_on_the_fast_path(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if name in WEIRD_USAGE:
        body = orjson.dumps({"id": "msg_1", "model": "m", "content": [{"type": "text", "text": "y"}],
                             "stop_reason": "end_turn", "usage": WEIRD_USAGE[name]})
    else:
        body = ODD_BODIES[name]
    same_as_general_path(body, monkeypatch, OFFERED)
