"""estimate_tokens: the cheap pre-flight estimate the capability check compares to the context window."""

from __future__ import annotations

from metis_core.adapters._common.token_estimate import IMAGE_TOKENS, estimate_tokens
from metis_core.messages import ImageBlock, ImageSource, Message, Role, TextBlock, ToolDefinition, user_message

PNG = ImageBlock(source=ImageSource(kind="base64", data="A" * 10_000), media_type="image/png")


def test_text_costs_about_four_characters_per_token() -> None:
    short = estimate_tokens([user_message("x" * 400)], [])
    long = estimate_tokens([user_message("x" * 40_400)], [])
    assert long - short == 10_000


def test_an_image_costs_a_fixed_amount_whatever_its_payload_size() -> None:
    text_only = estimate_tokens([user_message("look")], [])
    with_image = estimate_tokens([Message(role=Role.USER, content=[TextBlock(text="look"), PNG])], [])
    assert with_image - text_only == IMAGE_TOKENS + 5  # the block overhead is 20 characters


def test_tool_definitions_count_toward_the_input() -> None:
    tool = ToolDefinition(name="read", description="d" * 400, input_schema={"type": "object", "properties": {}})
    assert estimate_tokens([], [tool]) >= 100
