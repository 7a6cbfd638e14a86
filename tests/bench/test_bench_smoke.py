"""The benchmark suite must not rot: its server speaks each wire format and metis-core's timed calls verify.

Runs in the package's own .venv (no peers, no bench/.venv), in-process with the local server in a
thread, in a few seconds: the stream scripts have exactly 2,000 events, the server answers every
provider route in its wire format (read back by the raw-httpx floor), and each function the
suite times for metis-core returns the expected, checked answer.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # `bench` is a top-level folder of the repository, not an installed package
    sys.path.insert(0, str(REPO_ROOT))

from bench import handwritten, wire_streams  # noqa: E402
from bench.cases.cost import EXPECTED, INPUT, OUTPUT  # noqa: E402
from bench.cases.translation import check_wire  # noqa: E402
from bench.peers.aiohttp_floor import AiohttpFloorCaller  # noqa: E402
from bench.peers.floor import PATHS, FloorCaller, prebuilt_body  # noqa: E402
from bench.peers.floor_mapping import MappingFloorCaller  # noqa: E402
from bench.peers.metis import MODELS, MetisCaller, canonical_conversation, canonical_tools, options_for  # noqa: E402
from bench.scenarios import (  # noqa: E402
    MESSAGES,
    STREAM_EVENTS,
    WrongAnswerError,
    call_answer,
    check_answer,
    stream_script,
)
from bench.server import serve_in_thread  # noqa: E402
from metis_core.adapters.registry import get_adapter  # noqa: E402
from metis_core.messages import Usage  # noqa: E402
from metis_core.models.pricing import PriceTable  # noqa: E402

ALL_PROVIDERS = tuple(MODELS)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with serve_in_thread() as url:
        yield url


def _data_events(frames: list[bytes]) -> int:
    return sum(1 for frame in frames if frame.startswith((b"data:", b"event:", b"{")))


@pytest.mark.parametrize(
    "frames",
    [
        wire_streams.anthropic_stream(stream_script()),
        wire_streams.openai_chat_stream(stream_script()),
        wire_streams.openai_chat_stream(stream_script(), comment=True),
        wire_streams.openai_responses_stream(stream_script()),
        wire_streams.gemini_stream(stream_script()),
        wire_streams.ollama_stream(stream_script()),
    ],
    ids=["anthropic", "openai", "openrouter", "openai_responses", "gemini", "ollama"],
)
def test_every_stream_script_carries_exactly_the_benchmark_event_count(frames: list[bytes]) -> None:
    assert _data_events(frames) == STREAM_EVENTS


def test_the_conversation_has_forty_messages_and_ten_tool_calls() -> None:
    messages = canonical_conversation()
    assert len(messages) == MESSAGES
    assert sum(len(m.tool_uses()) for m in messages) == 10
    assert sum(len(m.tool_results()) for m in messages) == 10


@pytest.mark.parametrize("provider", ALL_PROVIDERS)
def test_server_answers_each_provider_in_its_wire_format(server: str, provider: str) -> None:
    floor = FloorCaller(server)
    try:
        check_answer(f"floor {provider}", call_answer(), *floor.complete(provider))
        fields, events = floor.stream(provider)
        check_answer(f"floor stream {provider}", stream_script().answer, *fields)
        assert events == STREAM_EVENTS - (1 if provider in ("openai", "openrouter") else 0)  # [DONE] is not JSON
    finally:
        floor.close()


def test_server_refuses_unknown_routes_and_bodies_that_are_not_json(server: str) -> None:
    with httpx.Client() as client:
        assert client.post(f"{server}/v1/nothing", content=b"{}").status_code == 404
        assert client.post(f"{server}/v1/messages", content=b"not json").status_code == 400
        assert client.post(f"{server}/v1/messages", content=b'{"messages": []}').status_code == 400
        streamed = client.post(f"{server}{'/v1' + PATHS['openai']}", json={"messages": [1], "stream": True})
        assert streamed.headers["content-type"].startswith("text/event-stream")
        assert streamed.headers["transfer-encoding"] == "chunked"


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_metis_calls_the_suite_times_return_the_checked_answer(server: str, provider: str) -> None:
    caller = MetisCaller(server)
    try:
        check_answer("metis complete", call_answer(), *caller.fields(caller.complete(provider)))
        check_answer("metis acomplete", call_answer(), *caller.fields(await caller.acomplete(provider)))
    finally:
        caller.close()
        await caller.aclose()


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_the_async_floor_posts_the_floor_body_on_aiohttp_and_gets_the_checked_answer(
    server: str, provider: str
) -> None:
    caller = AiohttpFloorCaller(server)
    try:
        assert caller.bodies[provider] == prebuilt_body(provider, stream=False)
        check_answer("raw aiohttp", call_answer(), *caller.fields(await caller.acomplete(provider)))
    finally:
        caller.close()
        await caller.aclose()


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_the_call_reference_line_sends_the_floor_body_built_anew_and_gets_the_checked_answer(
    server: str, provider: str
) -> None:
    caller = MappingFloorCaller(server)
    try:
        first, second = caller._body(provider), caller._body(provider)
        assert first == second == prebuilt_body(provider, stream=False)  # the same bytes the floor posts
        assert first is not second  # but built on each call, which is what the line measures
        check_answer("reference complete", call_answer(), *caller.complete(provider))
        check_answer("reference acomplete", call_answer(), *await caller.acomplete(provider))
        assert caller.session is not None and not caller.session.closed  # async: the async floor's aiohttp
    finally:
        caller.close()
        await caller.aclose()


@pytest.mark.parametrize("provider", ALL_PROVIDERS)
def test_metis_streams_every_provider_to_the_checked_final_message(server: str, provider: str) -> None:
    caller = MetisCaller(server)
    try:
        final, events = caller.stream(provider)
        check_answer(f"metis stream {provider}", stream_script().answer, *caller.fields(final))
        assert events > STREAM_EVENTS * 0.9
    finally:
        caller.close()


@pytest.mark.parametrize("provider", ALL_PROVIDERS)
def test_translation_rows_check_both_metis_and_the_hand_written_mapping(provider: str) -> None:
    messages = canonical_conversation()
    check_wire("metis", get_adapter(provider).to_wire(messages, canonical_tools(), options_for(provider)).body)
    check_wire("hand-written", handwritten.MAPPINGS[provider](messages))


def test_translation_check_rejects_a_request_that_lost_a_tool_call() -> None:
    body = handwritten.anthropic_body(canonical_conversation())
    body["messages"][1]["content"].pop()  # the first assistant turn's tool_use
    with pytest.raises(WrongAnswerError, match="tool calls differ"):
        check_wire("broken", body)


def test_cost_row_expects_what_the_price_table_charges() -> None:
    cost, _ = PriceTable.load().cost(Usage(input_tokens=INPUT, output_tokens=OUTPUT), MODELS["anthropic"])
    assert cost == EXPECTED


def test_a_wrong_answer_voids_the_figure() -> None:
    answer = call_answer()
    with pytest.raises(WrongAnswerError, match="wrong tool_args"):
        check_answer("fast but wrong", answer, answer.text, answer.tool_name, {"path": "elsewhere"},
                     (answer.input_tokens, answer.output_tokens))


@pytest.mark.parametrize("impl", ["floor", "floor+pydantic", "metis"])
def test_cold_start_script_times_a_checked_first_answer(server: str, impl: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.coldstart", impl, server, call_answer().text],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr[-400:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert 0 < figures["import_ms"] < figures["first_answer_ms"]
    assert figures["rss_mb"] > 10


def test_cold_start_script_refuses_a_wrong_answer(server: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.coldstart", "floor", server, "not what the server says"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode != 0
    assert "wrong answer" in done.stderr


@pytest.mark.parametrize(("target", "provider"), [("call", "openai"), ("stream", "gemini")])
def test_profile_command_samples_metis_frames_of_the_timed_work(server: str, target: str, provider: str) -> None:
    from bench.profile import parse_args, profile_calls

    profiler = profile_calls(server, parse_args([target, "--provider", provider, "--repeat", "5"]))
    tree = profiler.output_text(color=False)
    # a call runs in ModelClient's methods; a stream's events come from client_streams' reader
    assert ("ModelClient." if target == "call" else "stream_events") in tree
    assert ("OpenAIChatAdapter" if target == "call" else "GeminiStreamTranslator") in tree


def test_profile_command_profiles_the_cold_start_in_a_fresh_interpreter(server: str) -> None:
    from bench.profile import profile_startup

    tree = profile_startup(server)
    assert '"first_answer_ms"' in tree  # the cold-start script ran to its checked answer
    assert "metis_core/adapters/client.py" in tree
