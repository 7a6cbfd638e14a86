"""Lenient recovery: fences, prose, the last balanced value, damaged JSON — path and byte offset only."""

from __future__ import annotations

import pytest

from metis_core.structured.recovery import Recovery, Unrecoverable, last_balanced, recover_json


def test_a_fenced_block_is_read_and_its_offset_counted_in_bytes_not_characters() -> None:
    text = 'Voilà — the answer:\n```json\n{"a": 1}\n```'
    value, recovery = recover_json(text)
    assert value == {"a": 1}
    assert recovery == Recovery("markdown-fence", len('Voilà — the answer:\n```json\n'.encode()))


def test_the_last_fenced_block_wins_and_an_unclosed_fence_is_still_read() -> None:
    assert recover_json('```json\n{"a": 1}\n```\nbetter:\n```json\n{"a": 2}\n```')[0] == {"a": 2}
    assert recover_json('```json\n{"a": 3}')[0] == {"a": 3}


def test_prose_around_an_object_is_dropped_by_the_brace_walker_keeping_the_last_value() -> None:
    text = 'First {"draft": true} then the final one: {"a": "}{ in a string", "b": [1, 2]} done.'
    value, recovery = recover_json(text)
    assert value == {"a": "}{ in a string", "b": [1, 2]}
    assert recovery.path == "brace-walker" and recovery.byte_offset == text.index('{"a"')


@pytest.mark.parametrize(("damaged", "expected"), [
    ("{'a': 1, 'b': 'x',}", {"a": 1, "b": "x"}),
    ('{a: 1, "b": [1, 2,]}', {"a": 1, "b": [1, 2]}),
    ('Here: {"a": 1, "b": [1, 2', {"a": 1, "b": [1, 2]}),
])
def test_common_json_damage_is_repaired_by_json_repair(damaged: str, expected: object) -> None:
    value, recovery = recover_json(damaged)
    assert value == expected and recovery.path == "jsonrepair"
    assert recovery.byte_offset == damaged.index("{")


def test_text_without_any_json_is_unrecoverable() -> None:
    with pytest.raises(Unrecoverable):
        recover_json("I would rather not answer in JSON today.")


def test_the_record_holds_no_content() -> None:
    _, recovery = recover_json('secret prose {"a": 1}')
    assert set(recovery.__slots__) == {"path", "byte_offset"}


def test_last_balanced_ignores_mismatched_closers_and_brackets_inside_strings() -> None:
    assert last_balanced('x ] {"a": "]"} y') == (4, 14)
    assert last_balanced("no json") is None
