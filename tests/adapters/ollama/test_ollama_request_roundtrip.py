"""Every recorded Ollama request is read into canonical form and rebuilt by to_wire.

All Ollama samples are DOCS-EXAMPLE tier (none is LIVE-VERBATIM), so the comparison is semantic:
`normalize` applies exactly the differences that are legitimate, and nothing else —
  * `stream` left out means true (Ollama's default); we always write it;
  * an assistant message without `content` is the same as `content: ""` (we always write it);
  * tool calls: the newer docs add `"type": "function"` (not part of Ollama's message schema, and
    ignored by the server) and the older ones omit `function.index`; we send the index, no type.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest
from adapters.ollama.ollama_wire_schema import CHAT_REQUEST
from fixture_files import fidelity_tier, read_json, wire_files

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.ollama.adapter import OllamaAdapter
from metis_core.adapters.ollama.request_reader import read_chat_request
from metis_core.messages import Role, ThinkingBlock, ToolUseBlock

REQUESTS = [p.name for p in wire_files("ollama", "request")]


def normalize(body: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(body)
    body.setdefault("stream", True)
    for message in body["messages"]:
        if message["role"] == "assistant":
            message.setdefault("content", "")
        for position, call in enumerate(message.get("tool_calls", [])):
            call.pop("type", None)
            call["function"].setdefault("index", position)
    return body


def test_the_folder_holds_the_samples_this_file_expects() -> None:
    assert len(REQUESTS) == 14
    assert all(fidelity_tier("ollama", name) == "DOCS-EXAMPLE" for name in REQUESTS)


@pytest.mark.parametrize("name", REQUESTS)
def test_request_is_rebuilt_from_canonical_form(name: str) -> None:
    original = read_json("ollama", name)
    read = read_chat_request(original)
    rebuilt = OllamaAdapter().to_wire(read.messages, read.tools, read.options).body
    assert rebuilt == normalize(original)
    jsonschema.validate(rebuilt, CHAT_REQUEST)


@pytest.mark.parametrize("name", REQUESTS)
def test_rebuilding_twice_from_the_same_reading_is_identical(name: str) -> None:
    read = read_chat_request(read_json("ollama", name))
    adapter = OllamaAdapter()
    first = adapter.to_wire(read.messages, read.tools, read.options).body
    second = adapter.to_wire(read.messages, read.tools, read.options).body
    assert first == second


def test_history_with_tool_result_pairs_the_result_with_its_call_and_names_the_tool() -> None:
    read = read_chat_request(read_json("ollama", "request__chat_history_tool_result.jsonc"))
    _user, assistant, tool = read.messages
    call = assistant.tool_uses()[0]
    assert (call.name, call.input) == ("get_weather", {"city": "Toronto"})
    assert tool.role is Role.TOOL
    assert tool.tool_results()[0].tool_use_id == call.id == tool.metadata.parent_tool_use_id
    assert tool.tool_results()[0].text() == "11 degrees celsius"
    assert read.options.stream is False and read.tools[0].name == "get_weather"


def test_parallel_results_pair_in_order_by_tool_name() -> None:
    read = read_chat_request(read_json("ollama", "request__tool_calling_parallel_with_results.json"))
    calls = read.messages[1].tool_uses()
    assert [(c.name, c.input["city"]) for c in calls] == [
        ("get_temperature", "New York"),
        ("get_conditions", "New York"),
        ("get_temperature", "London"),
        ("get_conditions", "London"),
    ]
    answered = {m.tool_results()[0].tool_use_id: m.tool_results()[0].text() for m in read.messages[2:]}
    assert [answered[c.id] for c in calls] == ["22°C", "Partly cloudy", "15°C", "Rainy"]


def test_reading_the_same_history_again_with_the_same_map_gives_the_same_tool_ids() -> None:
    body = read_json("ollama", "request__tool_calling_parallel_with_results.json")
    ids = ToolIdMap()
    first = [c.id for c in read_chat_request(body, tool_ids=ids).messages[1].tool_uses()]
    grown = copy.deepcopy(body)
    grown["messages"].append({"role": "assistant", "content": "New York is 22°C and partly cloudy."})
    again = [c.id for c in read_chat_request(grown, tool_ids=ids).messages[1].tool_uses()]
    assert first == again and len(set(first)) == 4
    fresh = [c.id for c in read_chat_request(body).messages[1].tool_uses()]
    assert set(fresh).isdisjoint(first)  # a new map means new canonical ids


def test_think_true_becomes_a_reasoning_effort_and_goes_back_as_true() -> None:
    read = read_chat_request(read_json("ollama", "request__chat_think.json"))
    assert read.options.reasoning_effort == "medium" and "think" not in read.options.extra
    assert OllamaAdapter().to_wire(read.messages, read.tools, read.options).body["think"] is True


def test_structured_output_schema_becomes_response_format() -> None:
    read = read_chat_request(read_json("ollama", "request__chat_structured_output_format_schema.json"))
    assert read.options.response_format is not None
    assert read.options.response_format["schema"]["required"] == ["age", "available"]
    assert read.options.temperature == 0


def test_images_are_read_as_base64_png_blocks() -> None:
    read = read_chat_request(read_json("ollama", "request__chat_image_base64.json"))
    image = read.messages[0].content[1]
    assert image.type == "image" and image.source.kind == "base64"
    assert image.media_type == "image/png" and image.source.data.startswith("iVBORw0KGgo")


def test_assistant_thinking_in_a_request_is_bound_to_that_model() -> None:
    body = {
        "model": "qwen3:8b",
        "messages": [
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "4", "thinking": "simple sum"},
            {"role": "user", "content": "and 3+3?"},
        ],
        "stream": False,
    }
    read = read_chat_request(body)
    thinking = read.messages[1].content[0]
    assert isinstance(thinking, ThinkingBlock) and thinking.origin is not None
    assert thinking.origin.matches("ollama", "ollama_chat", "qwen3:8b")
    assert OllamaAdapter().to_wire(read.messages, read.tools, read.options).body == body


def test_unknown_top_level_and_runtime_options_travel_through_extra() -> None:
    body = {
        "model": "llama3.2",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "keep_alive": "5m",
        "think": False,
        "options": {"num_ctx": 32768, "seed": 7, "temperature": 0.2, "num_predict": 64, "stop": ["\n\n"]},
    }
    read = read_chat_request(body)
    assert read.options.max_tokens == 64 and read.options.stop == ["\n\n"]
    assert read.options.extra == {"options": {"num_ctx": 32768, "seed": 7}, "think": False, "keep_alive": "5m"}
    assert OllamaAdapter().to_wire(read.messages, read.tools, read.options).body == body


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"messages": []}, "`model` is missing"),
        ({"model": "m", "messages": {}}, "`messages` must be a list"),
        ({"model": "m", "messages": [{"role": "robot", "content": "x"}]}, "is not system, user"),
        ({"model": "m", "messages": [{"role": "tool", "content": "x", "tool_name": "f"}]}, "no earlier tool call"),
        (
            {"model": "m", "messages": [{"role": "assistant", "tool_calls": [{"function": {"arguments": {}}}]}]},
            "has no function name",
        ),
        (
            {
                "model": "m",
                "messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": 1}}]}],
            },
            "must be a JSON object",
        ),
    ],
)
def test_bad_requests_are_rejected_naming_the_problem(body: dict[str, Any], problem: str) -> None:
    from metis_core.errors import InvalidRequestError

    with pytest.raises(InvalidRequestError, match=problem):
        read_chat_request(body)


def test_string_arguments_from_openai_habits_are_parsed() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": '{"a": 1}'}}]}],
    }
    block = read_chat_request(body).messages[0].content[0]
    assert isinstance(block, ToolUseBlock) and block.input == {"a": 1}
