"""Fuzz: mutated recorded bodies and streams of every provider through the public ModelClient.

Rules held for every case: only MetisError subclasses escape `complete()` / `stream()`; a stream
that does not raise ends with exactly one `message_complete`, last; a stream that raises has
yielded no `message_complete`; no case takes a second; memory stays bounded. The normal suite runs
a few hundred cases; `METIS_FUZZ_CASES=20000 pytest tests/adapters/test_wire_fuzz.py -s` is the
long run (METIS_FUZZ_SEED picks another sequence).
"""

from __future__ import annotations

import asyncio
import os
import random
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
from mock_http import BASE_URL, ChunkedBody, split
from wire_mutator import MODELS, Case, load_samples, make_case

from metis_core.adapters.client import ModelClient
from metis_core.errors import MetisError
from metis_core.messages import Message, MessageComplete, StreamEvent, user_message
from metis_core.transport.retry import RetryPolicy

FUZZ_CASES = int(os.environ.get("METIS_FUZZ_CASES", "300"))
FUZZ_SEED = int(os.environ.get("METIS_FUZZ_SEED", "2024"))
CASE_SECONDS = 1.0
MEMORY_GROWTH_BYTES = 300 * 1024 * 1024


@dataclass
class _Responder:
    """The MockTransport handler: serves whatever the current case says."""

    status: int = 200
    chunks: list[bytes] = field(default_factory=list)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        return httpx.Response(self.status, stream=ChunkedBody(list(self.chunks)))


def _client(responder: _Responder) -> ModelClient:
    transport = httpx.MockTransport(responder)
    providers = {model.split(":")[0] for models in MODELS.values() for model in models}
    return ModelClient(
        http_client=httpx.Client(transport=transport),
        async_http_client=httpx.AsyncClient(transport=transport),
        base_urls=dict.fromkeys(providers, BASE_URL),
        api_keys=dict.fromkeys(providers, "sk-fuzz-0123456789abcdef"),
        prices=None,
        retry=RetryPolicy(max_retries=0),
    )


def _check_stream(events: list[StreamEvent], raised: BaseException | None) -> str | None:
    completes = [i for i, event in enumerate(events) if isinstance(event, MessageComplete)]
    if raised is not None:
        return "raised after message_complete" if completes else None
    if len(completes) != 1 or completes[0] != len(events) - 1:
        return f"message_complete at {completes} of {len(events)} events"
    return None


def _run_sync(client: ModelClient, case: Case, stream: bool) -> str | None:
    messages = [user_message("hi")]
    if not stream:
        try:
            result = client.complete(messages, case.model)
        except MetisError:
            return None
        return None if isinstance(result, Message) else f"complete returned {type(result).__name__}"
    events: list[StreamEvent] = []
    try:
        for event in client.stream(messages, case.model):
            events.append(event)
    except MetisError as error:
        return _check_stream(events, error)
    return _check_stream(events, None)


async def _run_async(client: ModelClient, case: Case, stream: bool) -> str | None:
    messages = [user_message("hi")]
    if not stream:
        try:
            await client.acomplete(messages, case.model)
        except MetisError:
            return None
        return None
    events: list[StreamEvent] = []
    try:
        async for event in client.astream(messages, case.model):
            events.append(event)
    except MetisError as error:
        return _check_stream(events, error)
    return _check_stream(events, None)


@dataclass
class FuzzReport:
    cases: int = 0
    failures: list[str] = field(default_factory=list)
    max_seconds: float = 0.0
    slowest: str = ""
    rss_growth: int = 0


def run_fuzz(cases: int, seed: int, on_case: Callable[[int], None] | None = None) -> FuzzReport:
    rng = random.Random(seed)
    samples = load_samples()
    responder = _Responder()
    client = _client(responder)
    loop = asyncio.new_event_loop()
    report = FuzzReport()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    try:
        for number in range(cases):
            case = make_case(rng, samples)
            responder.status = case.status
            # at most ~4,000 pieces: a 280 KB recording cut into 1-byte pieces times the mock transport, not parsing
            size = max(rng.randint(1, 400), len(case.body) // 4_000)
            responder.chunks = split(case.body, size) if case.body else []
            stream = case.sample.kind == "stream" or (case.sample.kind == "error" and rng.random() < 0.5)
            use_async = rng.random() < 0.25
            label = f"#{number} {case.sample.provider_dir}/{case.sample.name} as {case.model}: {case.mutation}"
            started = time.perf_counter()
            try:
                if use_async:
                    problem = loop.run_until_complete(_run_async(client, case, stream))
                else:
                    problem = _run_sync(client, case, stream)
            except Exception as error:  # the defect being hunted: anything that is not a MetisError
                problem = f"{type(error).__name__}: {str(error)[:200]}"
            elapsed = time.perf_counter() - started
            if elapsed > report.max_seconds:
                report.max_seconds, report.slowest = elapsed, label
            if elapsed > CASE_SECONDS:
                problem = (problem + "; " if problem else "") + f"took {elapsed:.2f}s"
            if problem:
                report.failures.append(f"{label} -> {problem}")
            report.cases += 1
            if on_case is not None:
                on_case(number)
    finally:
        client.close()
        loop.run_until_complete(client.aclose())
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    report.rss_growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss_before
    return report


def test_mutated_wire_traffic_only_ever_raises_metis_errors_and_streams_end_once() -> None:
    report = run_fuzz(FUZZ_CASES, FUZZ_SEED)
    print(
        f"\nwire fuzz: {report.cases} cases (seed {FUZZ_SEED}), {len(report.failures)} failures, "
        f"max {report.max_seconds * 1000:.0f} ms ({report.slowest}), peak RSS growth {report.rss_growth >> 20} MiB"
    )
    assert not report.failures, "\n".join(report.failures[:40])
    assert report.max_seconds < CASE_SECONDS
    assert report.rss_growth < MEMORY_GROWTH_BYTES
