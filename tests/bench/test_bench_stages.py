"""`python -m bench.stages` times metis-core's own stages inside real calls and leaves nothing patched behind."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # `bench` is a top-level folder of the repository, not an installed package
    sys.path.insert(0, str(REPO_ROOT))

from bench import stages  # noqa: E402
from bench.peers.floor import FloorCaller  # noqa: E402
from bench.peers.metis import MetisCaller  # noqa: E402
from bench.server import serve_in_thread  # noqa: E402
from metis_core.adapters.client import ModelClient  # noqa: E402
from metis_core.adapters.registry import get_adapter  # noqa: E402


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with serve_in_thread() as url:
        yield url


def test_every_timed_call_is_split_into_its_two_stages(server: str) -> None:
    metis, floor = MetisCaller(server), FloorCaller(server)
    try:
        samples = stages._in_calls(metis, floor, "openai", calls=25)
    finally:
        metis.close()
        floor.close()
    # One sample per timed call and stage: the warm-up calls are not counted.
    assert {name: len(values) for name, values in samples.items()} == {
        "request build": 25, "response parse": 25, "floor": 25, "metis": 25
    }
    for index, whole in enumerate(samples["metis"]):
        assert samples["request build"][index] + samples["response parse"][index] < whole


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_measure_reports_each_stage_in_each_state_and_restores_the_methods(server: str, provider: str) -> None:
    adapter_class = type(get_adapter(provider))
    prepare, parse = ModelClient.__dict__["_prepare"], adapter_class.__dict__["from_wire_response"]
    result = stages.measure(server, provider, calls=20)
    assert set(result) == {"hot", "idle", "in-call", "calls"}
    for state in ("hot", "idle", "in-call"):
        assert set(result[state]) == set(stages.STAGES)
        assert all(value > 0 for value in result[state].values())
    assert result["calls"]["floor"] > 0
    assert result["in-call"]["request build"] + result["in-call"]["response parse"] < result["calls"]["metis"]
    assert ModelClient.__dict__["_prepare"] is prepare
    assert adapter_class.__dict__["from_wire_response"] is parse
    text = stages.render(provider, result)
    assert "request build" in text and "response parse" in text and "of the floor" in text


def test_a_failing_stage_still_puts_the_original_method_back() -> None:
    class Target:
        def work(self) -> int:
            raise ValueError("boom")

    original = Target.__dict__["work"]
    seen: dict[str, list[float]] = {"work": []}
    with pytest.raises(ValueError, match="boom"), stages._timed(Target, "work", "work", seen):
        Target().work()
    assert Target.__dict__["work"] is original
    assert len(seen["work"]) == 1
