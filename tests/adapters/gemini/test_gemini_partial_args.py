"""Gemini streamed function-call arguments (`partialArgs` / `willContinue`), on recorded streams."""

from __future__ import annotations

from typing import Any

import pytest
from fixture_files import read_bytes

from metis_core.adapters.base import RequestContext
from metis_core.adapters.gemini.partial_args import PartialArgsError, apply_partial, path_steps
from metis_core.adapters.gemini.stream import GeminiStreamTranslator
from metis_core.messages import Message, MessageComplete, MessageStatus, StreamEvent, ToolUseEnd, ToolUseStart
from metis_core.transport.framing import decode_all

MODEL = "gemini:gemini-3.1-pro-preview"


def run(name: str) -> tuple[Message, list[StreamEvent]]:
    translator = GeminiStreamTranslator(RequestContext(model=MODEL))
    events: list[StreamEvent] = []
    for chunk in decode_all(read_bytes("gemini", name), "sse"):
        events.extend(translator.feed(chunk))
    events.extend(translator.finish())
    assert isinstance(events[-1], MessageComplete)
    message: Message = events[-1].message
    return message, events


def test_two_streamed_calls_are_two_calls_with_their_arguments() -> None:
    message, events = run("stream__function_call_partial_args.sse")
    assert message.status is MessageStatus.COMPLETE and message.metadata.stop_reason == "tool_use"
    assert [(u.name, u.input) for u in message.tool_uses()] == [
        ("getWeather", {"location": "Boston"}),
        ("getWeather", {"location": "San Francisco"}),
    ]
    assert [e.name for e in events if isinstance(e, ToolUseStart)] == ["getWeather", "getWeather"]
    ends = [e for e in events if isinstance(e, ToolUseEnd)]
    assert [e.input for e in ends] == [u.input for u in message.tool_uses()]


def test_nested_paths_and_string_pieces_build_one_object() -> None:
    message, _ = run("stream__function_call_partial_args_nested.sse")
    (call,) = message.tool_uses()
    recipe = call.input["recipe"]
    assert call.name == "cookRecipe" and recipe["name"] == "Lasagna"
    assert recipe["ingredients"][0] == {"amount": "16 oz", "name": "Lasagna noodles"}
    assert len(recipe["ingredients"]) == 10 and len(recipe["steps"]) == 10
    assert recipe["steps"][4] == "In a 9x13 baking dish, spread a thin layer of meat sauce."


def test_the_first_calls_thought_signature_stays_with_it() -> None:
    message, _ = run("stream__function_call_partial_args.sse")
    raw: dict[str, Any] = message.metadata.provider_raw or {}
    first = message.tool_uses()[0].id
    assert first in raw["thought_signatures"]["tool_use"]


@pytest.mark.parametrize(
    ("path", "steps"),
    [("$.a", ["a"]), ("$.recipe.ingredients[3].name", ["recipe", "ingredients", 3, "name"]), ("$['x y']", ["x y"])],
)
def test_json_paths_are_read_step_by_step(path: str, steps: list[Any]) -> None:
    assert path_steps(path) == steps


def test_values_of_every_kind_are_placed_and_strings_appended() -> None:
    args: dict[str, Any] = {}
    apply_partial(args, {"jsonPath": "$.n", "numberValue": 3})
    apply_partial(args, {"jsonPath": "$.ok", "boolValue": True})
    apply_partial(args, {"jsonPath": "$.none", "nullValue": None})
    apply_partial(args, {"jsonPath": "$.s", "stringValue": "ab", "willContinue": True})
    apply_partial(args, {"jsonPath": "$.s", "stringValue": "c"})
    assert args == {"n": 3, "ok": True, "none": None, "s": "abc"}


def test_an_unreadable_path_is_a_named_error() -> None:
    with pytest.raises(PartialArgsError, match="does not start"):
        path_steps("recipe.name")
    with pytest.raises(PartialArgsError):
        apply_partial({"a": "text"}, {"jsonPath": "$.a[0]", "stringValue": "x"})
