"""Every prechecked fast path gives what the validating constructors give, on every recorded exchange.

Requests (Anthropic and OpenAI Chat readers), non-streaming responses (Anthropic's direct parse and
OpenAI Chat's) and streams of every provider (the shared assembler) are run twice: as they are, and
with every module's `prechecked` replaced by the validating constructors (`prechecked_reference`).
The canonical messages (fields, fields_set, extras, tool-id bindings), the wire request bytes built
from them, and the parsed answers must be equal, or both runs fail with the same error.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from fixture_files import read_json, wire_dir, wire_files
from prechecked_reference import model_state, validating_in

from metis_core.adapters._common import tool_ids as tool_ids_module
from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import RequestContext
from metis_core.adapters.openai_chat.adapter import OpenAIChatAdapter
from metis_core.adapters.openai_chat.request_reader import ChatRequestReader
from metis_core.adapters.registry import named_adapter_class
from metis_core.messages import MessageComplete, RoutingDecisionRecord, RoutingMode
from metis_core.models.pricing import PriceTable
from metis_core.transport.framing import decode_all
from metis_core.transport.wire import WireResponse

PRICES = PriceTable.load()


def _numbered_tool_ids(monkeypatch: pytest.MonkeyPatch) -> ToolIdMap:
    counter = itertools.count(1)
    monkeypatch.setattr(tool_ids_module, "new_tool_use_id", lambda: f"tu_{next(counter):026d}")
    return ToolIdMap()


def both_paths(run: Callable[[pytest.MonkeyPatch], Any], monkeypatch: pytest.MonkeyPatch) -> Any:
    """`run` on the fast path and on the general path: equal outcomes (or the same error)."""

    def outcome(patched: pytest.MonkeyPatch) -> Any:
        try:
            return run(patched)
        except Exception as error:  # the two paths must fail alike, whatever the error
            return ("raised", type(error).__name__, re.sub(r"\b[0-9A-Z]{26}\b", "<ulid>", str(error)))

    with monkeypatch.context() as patched:
        fast = outcome(patched)
    with monkeypatch.context() as patched:
        validating_in(patched)
        general = outcome(patched)
    assert fast == general
    return fast


# --- OpenAI Chat requests -------------------------------------------------------------------------

CHAT_REQUESTS = [p.name for p in wire_files("openai_chat") if "request_" in p.name]


def _read_chat(body: dict[str, Any]) -> Callable[[pytest.MonkeyPatch], Any]:
    def run(patched: pytest.MonkeyPatch) -> Any:
        ids = _numbered_tool_ids(patched)
        read = ChatRequestReader(provider="openai", tool_ids=ids, session_id="sess_fast").read(body)
        wire = OpenAIChatAdapter().to_wire(read.messages, read.tools, read.options, ids)
        return (model_state(read.messages), model_state(read.tools), repr(read.options), orjson.dumps(wire.body),
                ids.to_dict())

    return run


def test_the_chat_request_recordings_are_found() -> None:
    assert len(CHAT_REQUESTS) >= 8


@pytest.mark.parametrize("name", CHAT_REQUESTS)
def test_every_recorded_chat_request_reads_the_same_on_the_fast_path(name: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    body = {**read_json("openai_chat", name), "model": "gpt-4o"}  # docs examples hold a placeholder model
    assert both_paths(_read_chat(body), monkeypatch)[0] != "raised"


def _chat(messages: list[Any], **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-4o", "messages": messages, **extra}


CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
ODD_CHAT_BODIES: dict[str, dict[str, Any]] = {
    "text parts of the wrong type": _chat([{"role": "user", "content": [{"type": "text", "text": 3}]}]),
    "system text of the wrong type": _chat([{"role": "system", "content": [{"type": "text", "text": None}]},
                                            {"role": "user", "content": "hi"}]),
    "a developer message": _chat([{"role": "developer", "content": "terse"}, {"role": "user", "content": "hi"}]),
    "an assistant turn with calls": _chat([{"role": "user", "content": "q"},
                                           {"role": "assistant", "content": None, "tool_calls": [CALL]},
                                           {"role": "tool", "tool_call_id": "call_1", "content": "r"}]),
    "a call name of the wrong type": _chat([{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [
        {**CALL, "function": {"name": 5, "arguments": "{}"}}]}]),
    "arguments not an object": _chat([{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [
        {**CALL, "function": {"name": "f", "arguments": "[1]"}}]}]),
    "a refusal": _chat([{"role": "user", "content": "q"}, {"role": "assistant", "content": None,
                                                           "refusal": "no"}]),
    "an empty assistant turn": _chat([{"role": "user", "content": "q"}, {"role": "assistant", "content": ""}]),
    "an empty user turn": _chat([{"role": "user", "content": []}]),
}


@pytest.mark.parametrize("name", sorted(ODD_CHAT_BODIES))
def test_odd_chat_requests_read_or_fail_the_same_on_the_fast_path(name: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    both_paths(_read_chat(ODD_CHAT_BODIES[name]), monkeypatch)


# --- non-streaming responses and streams of every provider -------------------------------------

MODELS = {"anthropic": "anthropic:claude-sonnet-4-5", "openai_chat": "openai:gpt-4o",
          "openai_responses": "openai_responses:gpt-5", "gemini": "gemini:gemini-2.5-flash",
          "ollama": "ollama:llama3.2", "openrouter": "openrouter:openai/gpt-4o"}
KIND = {"openai_chat": "openai"}
ROUTED = RoutingDecisionRecord(mode=RoutingMode.RULE, chosen_model="x:y", reason="eq", rule_name="r")


def _recordings(kind: str) -> list[Path]:
    return [p for provider in MODELS if wire_dir(provider).is_dir()
            for p in wire_files(provider, kind) if p.suffix in (".json", ".sse", ".ndjson", ".jsonl")]


def _answer(path: Path, routing: RoutingDecisionRecord | None) -> Callable[[pytest.MonkeyPatch], Any]:
    provider = path.parent.name
    model = MODELS[provider]
    adapter = named_adapter_class(KIND.get(provider, provider), model.partition(":")[0])()

    def run(patched: pytest.MonkeyPatch) -> Any:
        ids = _numbered_tool_ids(patched)
        context = RequestContext(model=model, session_id="sess_eq", tool_ids=ids, message_id="msg_eq",
                                 routing=routing, prices=PRICES)
        if path.name.startswith("response__"):
            message = adapter.from_wire_response(WireResponse(200, path.read_bytes(), {}), context)
        else:
            translator = adapter.stream_translator(context)
            events = [e for chunk in decode_all(path.read_bytes(), adapter.framing) for e in translator.feed(chunk)]
            events += translator.finish()
            message = next(e.message for e in events if isinstance(e, MessageComplete))
        return model_state(message), ids.to_dict()

    return run


RESPONSES = _recordings("response")
STREAMS = _recordings("stream")


def test_the_response_and_stream_recordings_of_several_providers_are_found() -> None:
    assert {p.parent.name for p in RESPONSES} >= {"anthropic", "openai_chat"}
    assert {p.parent.name for p in STREAMS} >= {"anthropic", "openai_chat"}


@pytest.mark.parametrize("routing", [None, ROUTED], ids=["direct", "routed"])
@pytest.mark.parametrize("path", RESPONSES + STREAMS, ids=[f"{p.parent.name}/{p.name}" for p in RESPONSES + STREAMS])
def test_every_recorded_answer_parses_the_same_on_the_fast_path(
    path: Path, routing: RoutingDecisionRecord | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    both_paths(_answer(path, routing), monkeypatch)
