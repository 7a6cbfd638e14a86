"""Comparing one turn's two sides: the first differing step, its kind and point, and the CLI's turn ranges."""

from __future__ import annotations

import pytest

from metis_core.cli import replay as replay_cli
from metis_core.errors import ReplayError
from metis_core.replay import compare
from metis_core.replay.compare import compare_sides, mark_structured, text_similarity, tool_divergence
from metis_core.replay.source import ToolCall, TurnSide

WEATHER = ToolCall("get_weather", {"location": "Paris"})


def side(*steps: list[ToolCall], answer: str = "Sunny in Paris.", error: str | None = None) -> TurnSide:
    return TurnSide(model="m", steps=[list(s) for s in steps], answer=answer, error=error)


def test_equal_turns_do_not_diverge() -> None:
    assert compare_sides(side([WEATHER], []), side([WEATHER], [])) == []


CALLED_ANSWERED = "the original called get_weather; the replay answered"


@pytest.mark.parametrize(("original", "replay", "expected"), [
    ([[WEATHER], []], [[]], ("missing", 0, CALLED_ANSWERED)),
    ([[]], [[WEATHER], []], ("extra", 0, "the replay called get_weather; the original answered")),
    ([[WEATHER], []], [[ToolCall("get_time", {})], []],
     ("output", 0, "the original called get_weather; the replay called get_time")),
    ([[WEATHER], []], [[ToolCall("get_weather", {"location": "Rome", "units": "c"})], []],
     ("output", 0, "get_weather: arguments differ in location, units")),
    ([[WEATHER], [WEATHER], []], [[WEATHER], []], ("missing", 1, CALLED_ANSWERED)),
])
def test_the_first_differing_tool_step_is_named(
    original: list[list[ToolCall]], replay: list[list[ToolCall]], expected: tuple[str, int, str]
) -> None:
    found = tool_divergence(original, replay)
    assert found is not None and (found.kind, found.step, found.detail) == expected
    assert "Rome" not in found.detail, "argument values never appear in a detail"


def test_a_failed_replay_is_a_missing_answer_and_stops_the_comparison() -> None:
    [found] = compare_sides(side([]), side(answer="", error="rate limited"))
    assert (found.kind, found.point) == ("missing", "error")


def test_a_refusal_on_one_side_only_is_its_own_divergence() -> None:
    refused = TurnSide(model="m", steps=[[]], answer="I can't help with that.", refused=True)
    [found] = compare_sides(side([]), refused)
    assert (found.kind, found.point, found.detail) == ("output", "refusal", "the replay refused; the original answered")
    [found] = compare_sides(refused, side([]))
    assert found.detail == "the original refused; the replay answered"
    assert compare_sides(refused, TurnSide(model="m", steps=[[]], answer="I can't help with that.", refused=True)) == []


def test_side_of_reads_the_refusal_from_the_last_answer() -> None:
    from session_samples import assistant

    from metis_core.messages import TextBlock
    from metis_core.replay.source import side_of

    answer = assistant("sess_1", [TextBlock(text="no")])
    answer.metadata.stop_reason = "refusal"
    assert side_of([answer]).refused and not side_of([assistant("sess_1", [TextBlock(text="yes")])]).refused


def test_text_below_the_threshold_diverges_with_its_similarity() -> None:
    [found] = compare_sides(side([]), side([], answer="I cannot check the weather."), threshold=0.8)
    assert (found.kind, found.point) == ("output", "text") and found.similarity is not None
    assert found.similarity == text_similarity("Sunny in Paris.", "I cannot check the weather.") < 0.8
    assert compare_sides(side([]), side([], answer="Sunny in Paris!"), threshold=0.8) == []


def test_json_answers_must_stay_json() -> None:
    original, replay = side([], answer='{"temp": 21}'), side([], answer="It is 21 degrees.")
    mark_structured(original, replay)
    assert (original.structured_valid, replay.structured_valid) == (True, False)
    points = [d.point for d in compare_sides(original, replay)]
    assert points == ["text", "structured_output"]
    plain, other = side([]), side([])
    mark_structured(plain, other)
    assert plain.structured_valid is None, "not applicable when the original did not answer in JSON"


@pytest.mark.parametrize(("text", "expected"), [(None, None), ("3", (3, 3)), ("2..4", (2, 4)), ("2..", (2, None)),
                                                 ("..4", (1, 4))])
def test_turn_ranges(text: str | None, expected: tuple[int, int | None] | None) -> None:
    assert replay_cli.parse_turns(text) == expected


@pytest.mark.parametrize("text", ["x", "0..2", "4..2", "1..b"])
def test_bad_turn_ranges_are_refused_by_name(text: str) -> None:
    with pytest.raises(ReplayError, match="--turns"):
        replay_cli.parse_turns(text)


def test_the_cli_default_threshold_is_the_library_one() -> None:
    assert replay_cli.DEFAULT_TEXT_THRESHOLD == compare.DEFAULT_TEXT_THRESHOLD
