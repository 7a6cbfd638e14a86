"""check_fits: the capability pre-check used before every call and on /model swaps (§8.4, §11.1 test 3)."""

from __future__ import annotations

import pytest

from metis_core.errors import CapabilityMismatchError
from metis_core.messages import (
    ImageBlock,
    ImageSource,
    Message,
    Role,
    TextBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
    system_message,
    tool_result_message,
    user_message,
)
from metis_core.messages.metadata import MessageMetadata, MessageStatus
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.models.fit import check_fits, count_images

PNG = ImageBlock(source=ImageSource(kind="base64", data="iVBORw0KGgo="), media_type="image/png")
TOOL = ToolDefinition(name="read", description="Read a file.", input_schema={"type": "object", "properties": {}})
FULL = AdapterCapabilities(supports_images=True, supports_structured_output=True, max_context_tokens=100_000)


def _call_and_result() -> list[Message]:
    use = ToolUseBlock(id="tu_01J0000000000000000000000A", name="read", input={})
    call = Message(role=Role.ASSISTANT, content=[use], metadata=MessageMetadata(status=MessageStatus.PARTIAL))
    return [call, tool_result_message(use.id, [PNG])]


def test_a_history_the_model_can_carry_passes() -> None:
    history = [system_message("sys"), Message(role=Role.USER, content=[TextBlock(text="hi"), PNG]), *_call_and_result()]
    check_fits(history, [TOOL], FULL, "anthropic:claude-sonnet-4-5", 1_000, structured_output=True)


def test_images_inside_tool_results_count_too() -> None:
    assert count_images(_call_and_result()) == 1
    with pytest.raises(CapabilityMismatchError) as raised:
        check_fits(_call_and_result(), [], AdapterCapabilities(supports_images=False), "ollama:llama3", 10)
    assert raised.value.capability == "supports_images"
    assert raised.value.model == "ollama:llama3"
    assert "cannot use ollama:llama3" in str(raised.value) and "pick a model with image support" in str(raised.value)


@pytest.mark.parametrize(
    ("history", "tools", "caps", "kwargs", "capability"),
    [
        ([user_message("q")], [TOOL], AdapterCapabilities(supports_tools=False), {}, "supports_tools"),
        (
            [user_message("q"), *_call_and_result()[:1], tool_result_message("tu_01J0000000000000000000000A", "x")],
            [], AdapterCapabilities(supports_tools=False), {}, "supports_tools",
        ),
        ([system_message("s"), user_message("q")], [], AdapterCapabilities(supports_system_prompt=False), {},
         "supports_system_prompt"),
        ([user_message("q")], [], AdapterCapabilities(), {"structured_output": True}, "supports_structured_output"),
    ],
)
def test_each_missing_capability_is_named(
    history: list[Message], tools: list[ToolDefinition], caps: AdapterCapabilities, kwargs: dict[str, bool],
    capability: str,
) -> None:
    with pytest.raises(CapabilityMismatchError) as raised:
        check_fits(history, tools, caps, "x:y", 10, **kwargs)
    assert raised.value.capability == capability


def test_estimate_over_the_context_window_is_refused_and_equal_is_allowed() -> None:
    caps = AdapterCapabilities(max_context_tokens=8_192)
    check_fits([user_message("q")], [], caps, "x:y", 8_192)
    with pytest.raises(CapabilityMismatchError, match="8,193 tokens") as raised:
        check_fits([user_message("q")], [], caps, "x:y", 8_193)
    assert raised.value.capability == "max_context_tokens"


def test_tool_result_without_images_needs_no_image_support() -> None:
    result = Message(
        role=Role.TOOL,
        content=[ToolResultBlock(tool_use_id="tu_1", content=[TextBlock(text="ok")])],
        metadata=MessageMetadata(parent_tool_use_id="tu_1"),
    )
    check_fits([result], [], AdapterCapabilities(supports_images=False), "x:y", 1)
