"""`message_row` (each JSON column dumped by its field type's serializer) against `message_row_general`
(the message's own `model_dump`): the stored text must be the same, byte for byte."""

from __future__ import annotations

import pytest

from metis_core.ids import new_session_id
from metis_core.messages import Message, MessageMetadata, MessageStatus, TextBlock, ToolUseBlock, user_message
from metis_core.messages.hosted_blocks import Citation
from metis_core.store.message_rows import message_from_row, message_row, message_row_general
from metis_core.store.records import from_us
from tests.session_samples import assistant, full_conversation, simple_exchange


def _samples() -> list[Message]:
    sid = new_session_id()
    messages, _ = full_conversation(sid)
    messages += simple_exchange(sid, 2)
    stamped = messages[2].model_copy(deep=True)  # what the gateway's record adds: extra metadata fields
    setattr(stamped.metadata, "gateway_key_id", "gk_01ABC")  # noqa: B010
    setattr(stamped.metadata, "inbound_shape", "anthropic")  # noqa: B010
    stamped.metadata.user_id, stamped.metadata.team_id = "usr_1", "team_1"
    messages.append(stamped)
    messages.append(assistant(sid, [
        TextBlock(text="floats and big ints", citations=[Citation(url="https://example.invalid", payload={"f": 1e-7})]),
        ToolUseBlock(id="tu_01J0000000000000000000000Z", name="calc",
                     input={"x": 0.1, "y": 1e300, "z": -0.0, "n": 2**62, "s": "\u2028\x00\"\\", "e": []}),
    ], cost="0.000000001"))  # fmt: skip
    messages.append(user_message("ünï ✓ \U0001f600", session_id=sid))
    messages += _near_default_metadata(sid)
    return messages


class _OwnMetadata(MessageMetadata):
    pass


def _near_default_metadata(sid: str) -> list[Message]:
    """Metadata at, or one step from, all defaults: the constant column and each case it must not take."""
    plain = user_message("hello", session_id=sid)
    said_complete = plain.model_copy(update={"metadata": MessageMetadata(status=MessageStatus.COMPLETE)})
    one_field = plain.model_copy(update={"metadata": MessageMetadata(stop_reason="end_turn")})
    extra = plain.model_copy(update={"metadata": MessageMetadata.model_validate({"from_client": True})})
    cancelled = plain.model_copy(update={"metadata": MessageMetadata(status=MessageStatus.CANCELLED)})
    empty_list = plain.model_copy(update={"metadata": MessageMetadata(critical_blocks=[])})
    subclass = plain.model_copy(update={"metadata": _OwnMetadata()})
    return [plain, said_complete, one_field, extra, cancelled, empty_list, subclass]


def test_only_an_all_defaults_metadata_gets_the_constant_column() -> None:
    constant = message_row(user_message("x", session_id=new_session_id()))[4]
    rows = [message_row(m)[4] for m in _near_default_metadata(new_session_id())]
    assert rows[:2] == [constant, constant]
    assert all(row != constant for row in rows[2:6])  # the subclass's dump happens to be the same text


@pytest.mark.parametrize("index", range(len(_samples())))
def test_message_row_is_the_general_dump(index: int) -> None:
    message = _samples()[index]
    row, general = message_row(message), message_row_general(message)
    assert row == general
    assert [type(value) for value in row] == [type(value) for value in general]


def test_message_row_round_trips() -> None:
    for message in _samples()[:-1]:  # (the metadata subclass is read back as the class itself)
        row = message_row(message)
        stored = (*row[:5], from_us(row[5]).strftime("%Y-%m-%dT%H:%M:%S.%fZ"), row[6])
        assert message_from_row(stored) == message
