"""The request reader's prechecked fast path gives what the validating constructors give, on every recording.

`read_request` builds text blocks, metadata and messages with `messages.prechecked`; run again with
those builders replaced by the validating constructors (the general path), every recorded request
and a set of odd bodies must give the same canonical messages (fields, fields_set, tool ids), tools,
options and wire request bytes, or the same error.
"""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest
from fixture_files import read_json, wire_files
from prechecked_reference import VALIDATING, model_state

from metis_core.adapters._common import tool_ids as tool_ids_module
from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.anthropic import request_reader
from metis_core.adapters.anthropic.adapter import AnthropicAdapter

REQUESTS = [p.name for p in wire_files("anthropic", "request")]


def _read(body: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Any:
    counter = itertools.count(1)
    monkeypatch.setattr(tool_ids_module, "new_tool_use_id", lambda: f"tu_{next(counter):026d}")
    ids = ToolIdMap()
    try:
        read = request_reader.read_request(body, tool_ids=ids, session_id="sess_fast")
    except Exception as error:  # the two paths must fail alike, whatever the error
        return ("raised", type(error).__name__, str(error))
    wire = AnthropicAdapter().to_wire(read.messages, read.tools, read.options, ids)
    return (model_state(read.messages), model_state(read.tools), repr(read.options), read.skipped,
            orjson.dumps(wire.body), ids.to_dict())


def same_as_general_path(body: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Any:
    fast = _read(body, monkeypatch)
    with monkeypatch.context() as patched:
        patched.setattr(request_reader, "prechecked", VALIDATING)
        general = _read(body, patched)
    assert fast == general
    return fast


@pytest.mark.parametrize("name", REQUESTS)
def test_every_recorded_request_reads_the_same_on_the_fast_path(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert same_as_general_path(read_json("anthropic", name), monkeypatch)[0] != "raised"


def _body(messages: Any, **extra: Any) -> dict[str, Any]:
    return {"model": "claude-haiku-4-5", "max_tokens": 64, "messages": messages, **extra}


CACHE = {"type": "ephemeral"}
ODD_BODIES: dict[str, dict[str, Any]] = {
    "string content": _body([{"role": "user", "content": "hi"}], system="terse"),
    "text of the wrong type": _body([{"role": "user", "content": [{"type": "text", "text": 5}]}]),
    "system text of the wrong type": _body([{"role": "user", "content": "hi"}],
                                           system=[{"type": "text", "text": ["x"]}]),
    "tool result text of the wrong type": _body([
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": [{"type": "text", "text": None}]}]}]),
    "cache breakpoints everywhere": _body([
        {"role": "user", "content": [{"type": "text", "text": "a", "cache_control": CACHE},
                                     {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "r",
                                      "cache_control": CACHE}]}],
        system=[{"type": "text", "text": "s", "cache_control": CACHE}, {"type": "text", "text": "t"}]),
    "assistant with a caller extra": _body([
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [{"type": "text", "text": "x"}, {"type": "tool_use", "id": "toolu_2",
                                           "name": "f", "input": {"a": 1}, "caller": {"type": "direct"}}]}]),
    "empty user content": _body([{"role": "user", "content": []}]),
    "empty text": _body([{"role": "user", "content": ""}]),
    "an unknown role": _body([{"role": "robot", "content": "x"}]),
}


@pytest.mark.parametrize("name", sorted(ODD_BODIES))
def test_odd_bodies_read_or_fail_the_same_on_the_fast_path(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    same_as_general_path(ODD_BODIES[name], monkeypatch)
