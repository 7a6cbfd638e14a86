"""@tool functions in a scripted chat: a good call, input the types reject, and a tool that raises.

The model's replies are the recorded Anthropic tool_use stream with the tool name and input
replaced (support_servers.tool_call_stream), served over the real HTTP and SSE path.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Literal

import pytest
from pydantic import AfterValidator, BaseModel, Field
from support_servers import Reply, tool_call_stream

from metis_core import ToolContext, ToolOutcome, tool
from metis_core.agent.confirmation import ConfirmationAnswer
from metis_core.agent.tools.python_tool import PythonTool, load_tool_module, outcome_from_value
from metis_core.agent.tools.registry import ToolRegistry
from metis_core.errors import ToolModuleError, ToolSchemaError
from metis_core.events.envelope import Event
from metis_core.messages import ImageBlock, ImageSource, Role, SideEffects, ToolDefinition

from .conftest import Harness

PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


class Forecast(BaseModel):
    location: str
    days: int
    summary: str


calls: list[tuple[str, object]] = []


@tool(side_effects="read")
def forecast(location: str, days: Annotated[int, Field(ge=1, le=7)] = 1) -> Forecast:
    """Weather forecast for a city.

    Args:
        location: City name, e.g. Paris.
        days: How many days ahead.
    """
    calls.append(("forecast", (location, days)))
    return Forecast(location=location, days=days, summary="sunny")


def _lower_case(text: str) -> str:
    if text != text.lower():
        raise ValueError("write it in lower case")
    return text


@tool(side_effects="network")
async def post_note(
    text: Annotated[str, AfterValidator(_lower_case)], step: Annotated[int, Field(multiple_of=5)] = 5
) -> dict[str, object]:
    """Post a note (asks first: network side effect)."""
    await asyncio.sleep(0)
    calls.append(("post_note", (text, step)))
    return {"posted": text, "step": step}


@tool(side_effects="none")
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


@tool(name="snapshot", side_effects="read")
def take_snapshot(caption: str, context: ToolContext) -> list[object]:
    """An image of the workspace, with a caption."""
    calls.append(("snapshot", context.workspace.name))
    return [caption, ImageBlock(source=ImageSource(kind="base64", data=PIXEL), media_type="image/png")]


@pytest.fixture(autouse=True)
def _registered(harness: Harness) -> None:
    calls.clear()
    for made in (forecast, post_note, explode, take_snapshot):
        harness.runtime.tools.register(made)


def _script(h: Harness, *uses: tuple[str, object]) -> None:
    replies = [Reply(200, tool_call_stream(name, tool_input, f"toolu_{i:02d}"), {"content-type": "text/event-stream"})
               for i, (name, tool_input) in enumerate(uses)]
    h.script.script("anthropic", [*replies, Reply.fixture("anthropic", "stream__text_basic.sse")])


def _of(events: list[Event], kind: str) -> list[Event]:
    return [e for e in events if e.type == kind]


async def test_a_scripted_chat_runs_good_calls_reports_invalid_input_and_survives_an_exception(
    harness: Harness,
) -> None:
    h = harness
    h.confirmer.answers = [ConfirmationAnswer("allow", "once")]
    _script(h,
            ("forecast", {"location": "Paris", "days": 3}),
            ("forecast", {"location": "Paris", "days": "three"}),  # the JSON Schema rejects it
            ("post_note", {"text": "hi", "step": 7}),  # multipleOf: said in words to the model, still enforced
            ("post_note", {"text": "HI"}),  # only the function's own validator rejects it
            ("post_note", {"text": "hi", "step": 10}),
            ("explode", {"reason": "on purpose"}))
    session = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(session, "forecast and note")

    assert result.answer == "Hello there!"
    assert calls == [("forecast", ("Paris", 3)), ("post_note", ("hi", 10))]
    events = h.events(session.id)
    invalid = _of(events, "tool.input_invalid")
    assert [e.payload["tool_name"] for e in invalid] == ["forecast", "post_note", "post_note"]
    assert invalid[0].payload["validation_errors"] == ["$.days: 'three' is not of type 'integer'"]
    assert invalid[1].payload["validation_errors"] == ["$.step: 7 is not a multiple of 5"]
    assert invalid[2].payload["validation_errors"] == ["$.text: Value error, write it in lower case"]
    completed = _of(events, "tool.completed")
    assert len(completed) == 2
    failed = _of(events, "tool.failed")
    assert [(e.payload["error_class"], e.payload["error_message"]) for e in failed] == [
        ("execution_error", "error: RuntimeError: boom: on purpose")]
    assert len(_of(events, "tool.confirmation_requested")) == 1  # post_note, the valid call only

    results = [m.tool_results()[0] for m in session.history if m.role is Role.TOOL]
    assert json.loads(results[0].text()) == {"location": "Paris", "days": 3, "summary": "sunny"}
    assert results[1].is_error and "$.days" in results[1].text()
    assert results[2].is_error and "multiple of 5" in results[2].text()
    assert results[3].is_error and "lower case" in results[3].text()
    assert json.loads(results[4].text()) == {"posted": "hi", "step": 10}
    assert results[5].is_error and "boom: on purpose" in results[5].text()

    sent_tools = {t["name"]: t for t in h.requests_to("anthropic.test")[0]["tools"]}
    assert sent_tools["forecast"]["description"] == "Weather forecast for a city."
    assert sent_tools["forecast"]["input_schema"] == {
        "type": "object",
        "properties": {
            "location": {"type": "string", "description": "City name, e.g. Paris."},
            "days": {"type": "integer", "description": "How many days ahead. Default: 1.", "minimum": 1,
                     "maximum": 7},
        },
        "required": ["location"],
        "additionalProperties": False,
    }
    assert "Must be a multiple of 5." in sent_tools["post_note"]["input_schema"]["properties"]["step"]["description"]


async def test_an_image_result_reaches_the_model_as_an_image_block(harness: Harness) -> None:
    h = harness
    _script(h, ("snapshot", {"caption": "the desk"}))
    session = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(session, "show me")
    assert calls == [("snapshot", h.workspace.name)]
    block = next(m for m in session.history if m.role is Role.TOOL).tool_results()[0]
    assert [b.type for b in block.content] == ["text", "image"]
    second = h.requests_to("anthropic.test")[1]
    sent = second["messages"][-1]["content"][0]["content"]
    assert [part["type"] for part in sent] == ["text", "image"]
    assert sent[1]["source"]["data"] == PIXEL


# --- the decorator and its values ----------------------------------------------------------------


def test_the_decorated_function_is_still_a_function_with_a_definition() -> None:
    assert forecast("Rome", 2) == Forecast(location="Rome", days=2, summary="sunny")
    assert forecast.__name__ == "forecast" and forecast.__doc__ is not None
    assert isinstance(forecast, PythonTool)
    assert post_note.definition.side_effects is SideEffects.NETWORK and post_note.definition.needs_confirmation
    assert "context" not in take_snapshot.definition.input_schema["properties"]
    assert take_snapshot.definition.name == "snapshot"


def test_tool_with_a_registry_registers_itself() -> None:
    registry = ToolRegistry()

    @tool(registry=registry, side_effects=SideEffects.READ)
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    assert registry.get("lookup") is lookup


def test_a_function_whose_types_cannot_be_carried_is_refused_at_decoration() -> None:
    with pytest.raises(ToolSchemaError) as info:
        @tool
        def untyped(anything) -> str:  # type: ignore[no-untyped-def]
            return ""
    assert info.value.path == "$.properties.anything"
    with pytest.raises(ToolSchemaError) as info:
        @tool
        def free_form(labels: dict[str, str]) -> str:
            return ""
    assert info.value.construct == "additionalProperties"


@pytest.mark.parametrize(("value", "content"), [
    ("plain text", "plain text"),
    (Forecast(location="a", days=1, summary="s"), '{"location":"a","days":1,"summary":"s"}'),
    ({"a": [1, 2]}, '{"a":[1,2]}'),
    (None, "null"),
    (Literal, None),
])
def test_return_values_become_text_results(value: object, content: str | None) -> None:
    if content is None:
        with pytest.raises(TypeError, match="not JSON-serializable"):
            outcome_from_value(value)
    else:
        assert outcome_from_value(value).content == content


def test_a_returned_tool_outcome_is_used_as_it_is() -> None:
    outcome = ToolOutcome.failure("not_found", "no such city")
    assert outcome_from_value(outcome) is outcome


# --- modules of tools ------------------------------------------------------------------------------


def test_a_module_of_tools_is_loaded_in_definition_order(tmp_path: Path) -> None:
    module = tmp_path / "my_tools.py"
    module.write_text(
        "from metis_core import tool\n\n"
        "@tool\ndef add(a: int, b: int) -> int:\n    '''Add two integers.'''\n    return a + b\n\n"
        "@tool(side_effects='write')\ndef save(text: str) -> str:\n    '''Save text.'''\n    return 'saved'\n\n"
        "alias = add\n"
        "def helper() -> None: ...\n")
    loaded = load_tool_module(module)
    assert [t.definition.name for t in loaded] == ["add", "save"]
    assert loaded[0](2, 3) == 5


@pytest.mark.parametrize(("source", "problem"), [
    (None, "no such file"),
    ("def plain() -> None: ...\n", "defines no @tool functions"),
    ("raise ValueError('broken on purpose')\n", "ValueError: broken on purpose"),
    ("from metis_core import tool\n@tool\ndef bad(x) -> None: ...\n", "ToolSchemaError"),
])
def test_a_module_that_cannot_give_tools_is_a_named_error(tmp_path: Path, source: str | None, problem: str) -> None:
    module = tmp_path / "tools.py"
    if source is not None:
        module.write_text(source)
    with pytest.raises(ToolModuleError) as info:
        load_tool_module(module)
    assert problem in str(info.value) and str(module) in str(info.value)


# --- undeclared side effects -----------------------------------------------------------------------


def test_a_tool_that_declares_no_side_effects_runs_as_writing_and_says_how_to_declare(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @tool
    def tidy(path: str) -> str:
        """Tidy a file (its author forgot to say it writes)."""
        return path

    @tool(side_effects="read")
    def peek(path: str) -> str:
        """Look at a file."""
        return path

    assert not tidy.definition.declares_side_effects and peek.definition.declares_side_effects
    assert not ToolDefinition.from_function(tidy.fn).declares_side_effects
    registry = ToolRegistry([tidy, peek])
    assert tidy.definition.side_effects is SideEffects.WRITE and tidy.definition.needs_confirmation
    assert peek.definition.side_effects is SideEffects.READ and not peek.definition.needs_confirmation
    assert "tool 'tidy' does not declare its side effects, so metis asks as if it writes" in caplog.text
    note = registry.undeclared_note("tidy")
    assert note is not None and '@tool(side_effects="none" | "read"' in note
    assert registry.undeclared_note("peek") is None
    assert registry.extended([]).undeclared_note("tidy") == note  # a session's registry keeps the note


async def test_an_undeclared_tool_asks_first_and_the_question_says_how_to_declare_it(harness: Harness) -> None:
    h = harness
    ran: list[str] = []

    @tool(registry=h.runtime.tools)
    def tidy(path: str) -> str:
        """Tidy a file."""
        ran.append(path)
        return "tidied"

    _script(h, ("tidy", {"path": "notes.txt"}))  # the harness's confirmer denies
    session = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(session, "tidy my notes")

    assert ran == []  # denied: the undeclared tool never ran unasked
    (asked,) = h.confirmer.asked
    assert asked.side_effects == "write" and asked.note is not None and "side_effects=" in asked.note
    (requested,) = _of(h.events(session.id), "tool.confirmation_requested")
    assert requested.payload["side_effects"] == "write"
