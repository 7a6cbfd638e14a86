"""CallRecord._stamp writes the gateway identity as pydantic's setattr would (call_record.py's fast path)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from metis_core.gateway.call_record import CallRecord
from metis_core.messages import Message, MessageMetadata, Role, TextBlock, Usage


def by_setattr(message: Message, key: Any, shape: str) -> None:
    meta = message.metadata
    meta.user_id, meta.team_id = key.user_id, key.team_id
    setattr(meta, "gateway_key_id", key.id)  # noqa: B010
    setattr(meta, "inbound_shape", shape)  # noqa: B010


def answers() -> list[Message]:
    return [
        Message(role=Role.USER, content=[TextBlock(text="hi")]),
        Message(role=Role.USER, content=[TextBlock(text="hi")], metadata=MessageMetadata(
            model="m", provider="anthropic", usage=Usage(input_tokens=3, output_tokens=2), user_id="old",
            stop_reason="end_turn")),
        Message.model_validate({"role": "user", "content": [{"type": "text", "text": "x"}],
                                "metadata": {"gateway_key_id": "earlier", "other_extra": 1}}),
    ]


def state(message: Message) -> tuple[Any, ...]:
    meta = message.metadata
    return (meta.model_dump(), meta.model_dump_json(), dict(meta.__dict__), dict(meta.__pydantic_extra__ or {}),
            set(meta.model_fields_set), message.model_dump_json(), getattr(meta, "gateway_key_id", None),
            getattr(meta, "inbound_shape", None))


@pytest.mark.parametrize("index", range(3))
@pytest.mark.parametrize("key", [SimpleNamespace(id="gk_1", user_id="u1", team_id="t1"),
                                 SimpleNamespace(id="gk_2", user_id=None, team_id=None)])
def test_stamp_matches_setattr(index: int, key: Any) -> None:
    general = answers()[index]
    fast = general.model_copy(deep=True)
    by_setattr(general, key, "anthropic")
    CallRecord._stamp(SimpleNamespace(key=key, shape="anthropic"), fast)  # type: ignore[arg-type]
    assert state(fast) == state(general)
    assert Message.model_validate_json(fast.model_dump_json()) == Message.model_validate_json(
        general.model_dump_json())


def test_stamp_twice_overwrites_like_setattr() -> None:
    first = SimpleNamespace(id="a", user_id="u", team_id="t")
    second = SimpleNamespace(id="b", user_id="v", team_id=None)
    general = answers()[1]
    fast = general.model_copy(deep=True)
    for key, shape in ((first, "openai"), (second, "anthropic")):
        by_setattr(general, key, shape)
        CallRecord._stamp(SimpleNamespace(key=key, shape=shape), fast)  # type: ignore[arg-type]
    assert state(fast) == state(general)
