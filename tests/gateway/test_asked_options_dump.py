"""`asked_options_dump` (remembered for scalar options) against the path it skips:
`trusted_dump(RequestOptions, request_options_record(...))`, and the validated catalog model."""

from __future__ import annotations

from typing import Any

import pytest

from metis_core.adapters.base import AdapterOptions
from metis_core.agent.request_options import request_options_record
from metis_core.events.payloads.llm import RequestOptions
from metis_core.events.trusted_event import trusted_dump
from metis_core.gateway import call_record
from metis_core.gateway.call_record import asked_options_dump

M = "anthropic:claude-haiku-4-5"
CASES: list[tuple[AdapterOptions | None, list[str]]] = [
    (None, []),
    (AdapterOptions(model=M), []),
    (AdapterOptions(model=M, max_tokens=256), []),
    (AdapterOptions(model=M, max_tokens=256), ["read_file", "write_file"]),
    (AdapterOptions(model=M, max_tokens=256), ["write_file", "read_file"]),
    (AdapterOptions(model=M, temperature=1), []),  # an int, a float and a bool that hash alike
    (AdapterOptions(model=M, temperature=1.0), []),
    (AdapterOptions(model=M, parallel_tool_calls=True, top_p=True), []),
    (AdapterOptions(model=M, max_tokens=-1, reasoning_effort="extreme"), []),  # type: ignore[arg-type]
    (AdapterOptions(model=M, tool_choice="sk-ant-api03-" + "a" * 40), []),  # scrubbed
    (AdapterOptions(model=M, max_tokens=9, extra={"provider": {"order": ["x"]}}), []),
    (AdapterOptions(model=M, max_tokens=9, provider_tools=[{"type": "web_search_20250305"}]), ["t"]),
    (AdapterOptions(model=M, stop=["END"], tool_choice={"name": "t"}), ["t"]),  # not scalars: made afresh
    (AdapterOptions(model=M, hosted_tools={"web_search": {"api_key": "k"}}), []),
    (AdapterOptions(model=M, temperature=float("nan")), []),
]


def _general(options: AdapterOptions | None, tools: list[str]) -> dict[str, Any]:
    return trusted_dump(RequestOptions, request_options_record(options, tools=list(tools)))


@pytest.mark.parametrize("case", range(len(CASES)))
def test_asked_options_dump_is_the_general_path_first_and_remembered(case: int) -> None:
    options, tools = CASES[case]
    call_record._ASKED_DUMPS.clear()
    for _ in range(2):  # made, then (for scalar options) remembered
        dump = asked_options_dump(options, list(tools))
        expected = _general(options, tools)
        assert list(dump.items()) == list(expected.items()) or dump == expected  # nan != nan
        assert [type(v) for v in dump.values()] == [type(v) for v in expected.values()]
        assert str(dump) == str(expected)
        validated = RequestOptions.model_validate(expected).model_dump(mode="json")
        assert str(validated) == str(dump)


def test_every_case_remembered_side_by_side_stays_apart() -> None:
    call_record._ASKED_DUMPS.clear()
    for options, tools in CASES * 2:
        assert str(asked_options_dump(options, list(tools))) == str(_general(options, tools))
    assert len(call_record._ASKED_DUMPS) >= 10


def test_the_memo_is_bounded() -> None:
    call_record._ASKED_DUMPS.clear()
    for tokens in range(call_record._ASKED_DUMPS_MAX * 2 + 5):
        asked_options_dump(AdapterOptions(model=M, max_tokens=tokens), [])
    assert 0 < len(call_record._ASKED_DUMPS) <= call_record._ASKED_DUMPS_MAX


@pytest.mark.parametrize("case", range(len(CASES)))
def test_each_events_copy_is_the_dump_with_lists_of_its_own(case: int) -> None:
    options, tools = CASES[case]
    dump = asked_options_dump(options, list(tools))
    general = {name: list(value) if type(value) is list else value for name, value in dump.items()}
    copied = call_record.own_copy(dump)
    assert str(copied) == str(general) and list(copied) == list(general)
    assert copied is not dump
    for name, value in copied.items():
        if type(value) is list:
            assert value is not dump[name] and value == dump[name]
        else:
            assert value is dump[name]


def test_the_fields_that_may_hold_a_list_are_the_list_typed_ones() -> None:
    assert set(call_record._LIST_OPTIONS) == {"stop", "tools", "omitted"}
