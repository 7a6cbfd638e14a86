"""turn.started's facts about a gateway request's history (`history_survey`) are what the general
reads give: the last user message's `Message.text()`, any image block, any tool use."""

from __future__ import annotations

import pytest

from metis_core.gateway.call_record import history_survey
from metis_core.messages import ImageBlock, Message, Role, TextBlock, ToolResultBlock, ToolUseBlock
from metis_core.messages.blocks import ImageSource, ThinkingBlock

IMAGE = ImageBlock(source=ImageSource(kind="url", data="http://x"), media_type="image/png")
USE = ToolUseBlock(id="toolu_1", name="search", input={"q": "x"})


def message(role: Role, *blocks: object) -> Message:
    """Unchecked: the survey reads any history a client sends, valid by the canonical rules or not."""
    return Message.model_construct(role=role, session_id="s", content=list(blocks))


HISTORIES = [
    [],
    [message(Role.SYSTEM, TextBlock(text="be brief"))],
    [message(Role.USER, TextBlock(text="héllo "), IMAGE, TextBlock(text="wörld"))],
    [message(Role.USER, TextBlock(text="first")), message(Role.ASSISTANT, ThinkingBlock(text="t"), USE),
     message(Role.USER, ToolResultBlock(tool_use_id="toolu_1", content=[TextBlock(text="r")]))],
    [message(Role.USER, IMAGE), message(Role.ASSISTANT, TextBlock(text="a")), message(Role.USER, TextBlock(text="b"),
                                                                                       TextBlock(text=""))],
    [message(Role.ASSISTANT, USE, TextBlock(text="x")), message(Role.USER, IMAGE, IMAGE),
     message(Role.ASSISTANT, USE)],
]


@pytest.mark.parametrize("history", HISTORIES)
def test_history_survey_gives_what_the_general_reads_give(history: list[Message]) -> None:
    users = [m for m in history if m.role is Role.USER]
    expected = (
        users[-1].text() if users else "",
        any(isinstance(b, ImageBlock) for m in history for b in m.content),
        any(m.tool_uses() for m in history),
    )
    assert history_survey(history) == expected
