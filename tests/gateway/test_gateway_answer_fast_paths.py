"""The Anthropic answer's exact-class block dispatch gives what isinstance gives (bench/results/gateway-history.md).

`AnthropicMessagesShape.content` decides each block's class by `type(block) is cls` when the block is an
instance of one of the nine canonical block classes themselves, and by isinstance otherwise. That is the
same only while no block class subclasses another: held here, and the whole answer body is compared with
the general path (every block through isinstance) for every recorded Anthropic response and for blocks of
a subclass.
"""

from __future__ import annotations

from typing import Any, get_args

import pytest
from fixture_files import wire_files

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.anthropic.response import parse_response
from metis_core.adapters.base import RequestContext
from metis_core.gateway.shapes import anthropic_messages
from metis_core.gateway.shapes.anthropic_messages import AnthropicMessagesShape
from metis_core.messages import ContentBlock, Message, TextBlock, ThinkingBlock, ToolUseBlock, blocks
from metis_core.models.pricing import default_price_table
from metis_core.transport.wire import WireResponse

SHAPE = AnthropicMessagesShape()
RESPONSES = wire_files("anthropic", "response")


def test_the_exact_classes_are_the_content_block_union_and_none_subclasses_another() -> None:
    union = set(get_args(get_args(ContentBlock)[0]))
    assert set(blocks.BLOCK_CLASSES) == union
    for cls in union:
        for other in union - {cls}:
            assert not issubclass(cls, other), (cls, other)


def _answered(path: Any) -> tuple[Message, ToolIdMap]:
    ids = ToolIdMap()
    context = RequestContext(model="anthropic:claude-sonnet-4-5", session_id="sess_fp", tool_ids=ids,
                             prices=default_price_table())
    return parse_response(WireResponse(200, path.read_bytes(), {}), context), ids


def _bodies(message: Message, ids: ToolIdMap, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    fast = SHAPE.response_body(message, "claude-sonnet-4-5", ids)
    with monkeypatch.context() as patch:
        for module in (blocks, anthropic_messages):  # every block through isinstance
            patch.setattr(module, "BLOCK_CLASSES", frozenset())
        general = SHAPE.response_body(message, "claude-sonnet-4-5", ids)
    return fast, general


@pytest.mark.parametrize("path", RESPONSES, ids=[p.name for p in RESPONSES])
def test_every_recorded_answer_is_written_as_the_general_path_writes_it(path: Any,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    message, ids = _answered(path)
    fast, general = _bodies(message, ids, monkeypatch)
    assert fast == general
    assert len(fast["content"]) >= 1 or not message.content


class _Text(TextBlock):
    pass


class _Thinking(ThinkingBlock):
    pass


class _ToolUse(ToolUseBlock):
    pass


def test_blocks_of_a_subclass_take_isinstance(monkeypatch: pytest.MonkeyPatch) -> None:
    message, ids = _answered(next(p for p in RESPONSES if p.name == "response__tool_use_with_thinking.json"))
    content: list[Any] = []
    for block in message.content:
        cls = {TextBlock: _Text, ThinkingBlock: _Thinking, ToolUseBlock: _ToolUse}.get(type(block), type(block))
        content.append(cls.model_construct(**block.__dict__))
    assert {type(block) for block in content} & {_Text, _Thinking, _ToolUse}
    subclassed = message.model_copy(update={"content": content})
    fast, general = _bodies(subclassed, ids, monkeypatch)
    assert fast == general == SHAPE.response_body(message, "claude-sonnet-4-5", ids)
