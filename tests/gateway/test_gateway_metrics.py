"""`/metrics` on the gateway and on `metis serve`: a real scrape (parsed by prometheus_client's own
parser) after calls through the official OpenAI SDK counts what the calls did; a bad key gets 401,
a model key 403, and with metrics off the path does not exist (404)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from cli.replay_server import OPENAI, ReplayServer, Reply
from openai.types.chat import ChatCompletionMessageParam

from metis_core.errors import ConfigError
from metis_core.gateway.app import create_app
from metis_core.gateway.metrics import MetricsSettings, OperatorMetrics, metrics_settings_from_env
from metis_core.server.access import ServerAccess
from metis_core.server.app import build_app

from .gateway_harness import GatewayHarness

prometheus = pytest.importorskip("prometheus_client.parser", reason="pip install 'metis-core[metrics]'")
BEARER = "scrape-token-0123456789abcdef"
GPT = "openai:gpt-4o"
CHAT = "/v1/chat/completions"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayHarness, OperatorMetrics, str, str]]:
    """A gateway with metrics on, `metis serve`'s metrics on the same bus, after a fixed set of calls."""
    upstream = ReplayServer().start()
    gateway_metrics = OperatorMetrics(metrics_settings(), "gateway")
    harness = GatewayHarness(tmp_path_factory.mktemp("metrics") / "home", upstream, metrics=gateway_metrics).start()
    serve_metrics = OperatorMetrics(metrics_settings(), "serve")
    serve_metrics.attach(harness.runtime.bus)
    _, caller = harness.issue()
    _, limited = harness.issue(rpm=1)
    _, admin = harness.issue(scope="admin")
    text = Reply.recording("openai_chat", "response__text.json")
    upstream.script(OPENAI, text, text, Reply.recording("openai_chat", "stream__text_with_usage_chunk.sse"), text,
                    Reply.recording("openai_chat", "error__400_invalid_value_content_blocks.json", 400))
    sdk = openai.OpenAI(base_url=harness.base_url + "/v1", api_key=caller, max_retries=0)
    ask: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]
    for _ in range(2):
        sdk.chat.completions.create(model=GPT, messages=ask)
    list(sdk.chat.completions.create(model=GPT, messages=ask, stream=True))
    limited_sdk = openai.OpenAI(base_url=harness.base_url + "/v1", api_key=limited, max_retries=0)
    limited_sdk.chat.completions.create(model=GPT, messages=ask)
    with pytest.raises(openai.RateLimitError):  # the key's own limit: refused before any upstream call
        limited_sdk.chat.completions.create(model=GPT, messages=ask)
    with pytest.raises(openai.BadRequestError):  # upstream refuses
        sdk.chat.completions.create(model=GPT, messages=ask)
    harness.drain()
    harness.runtime.bus.flush(10)
    yield harness, serve_metrics, admin, caller
    harness.stop()
    upstream.stop()


def metrics_settings() -> MetricsSettings:
    import os

    os.environ["METIS_METRICS_BEARER"] = BEARER
    try:
        settings = metrics_settings_from_env(True)
    finally:
        del os.environ["METIS_METRICS_BEARER"]
    assert settings is not None and settings.bearer == BEARER
    return settings


def asgi_get(app: Any, path: str, **headers: str) -> httpx.Response:
    """One GET straight into an ASGI app (no server, no lifespan)."""
    async def get() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            return await client.get(path, headers=headers)
    return asyncio.run(get())


def scrape(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in prometheus.text_string_to_metric_families(text) for s in family.samples}


def value(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_a_gateway_scrape_counts_requests_latency_tokens_cost_refusals_and_errors(
    served: tuple[GatewayHarness, OperatorMetrics, str, str],
) -> None:
    harness, _, admin, _ = served
    answer = httpx.get(harness.base_url + "/metrics", headers={"authorization": f"Bearer {admin}"})
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = scrape(answer.text)
    ok = dict(route=CHAT, model=GPT, provider="openai", status="200")
    assert value(samples, "metis_gateway_requests_total", **ok) == 4  # 2 + 1 streamed + the limited key's first
    assert value(samples, "metis_gateway_requests_total", route=CHAT, model="", provider="", status="429") == 1
    assert value(samples, "metis_gateway_quota_refusals_total", route=CHAT) == 1
    assert value(samples, "metis_gateway_errors_total", route=CHAT, status="400") == 1
    assert value(samples, "metis_gateway_request_duration_seconds_count", route=CHAT) == 6
    completed = harness.events.of_type("llm.call_completed")
    assert len(completed) == 4
    assert value(samples, "metis_llm_calls_total", provider="openai", model=GPT, outcome="ok") == 4
    assert value(samples, "metis_llm_calls_total", provider="openai", model=GPT, outcome="error") == 1
    [failed] = harness.events.of_type("llm.call_failed")
    assert value(samples, "metis_llm_call_errors_total", provider="openai", model=GPT,
                 error_class=failed.payload["error_class"]) == 1
    assert value(samples, "metis_llm_upstream_latency_seconds_count", provider="openai", model=GPT) == 5
    for direction in ("input", "output"):
        expected = sum(e.payload[f"{direction}_tokens"] for e in completed)
        assert expected > 0
        assert value(samples, "metis_llm_tokens_total", provider="openai", model=GPT, direction=direction) == expected
    cost = sum(Decimal(str(e.payload["cost_usd"])) for e in completed)
    assert cost > 0 and value(samples, "metis_llm_cost_usd_total", provider="openai", model=GPT) == pytest.approx(
        float(cost))
    assert value(samples, "metis_upstream_up", provider="openai") == 1
    assert admin not in answer.text and BEARER not in answer.text


def test_a_gateway_scrape_needs_the_bearer_or_an_admin_key_and_is_absent_when_off(
    served: tuple[GatewayHarness, OperatorMetrics, str, str],
) -> None:
    harness, _, _, caller = served
    url = harness.base_url + "/metrics"
    assert httpx.get(url, headers={"authorization": f"Bearer {BEARER}"}).status_code == 200
    assert httpx.get(url).status_code == 401
    assert httpx.get(url, headers={"authorization": "Bearer mk-not-a-key-at-all"}).status_code == 401
    refused = httpx.get(url, headers={"x-api-key": caller})
    assert refused.status_code == 403 and "--scope admin" in refused.text and caller not in refused.text
    assert asgi_get(create_app(harness.service), "/metrics", authorization=f"Bearer {BEARER}").status_code == 404


def test_metis_serve_serves_the_same_metrics_behind_the_same_key(
    served: tuple[GatewayHarness, OperatorMetrics, str, str],
) -> None:
    harness, serve_metrics, admin, caller = served
    access = ServerAccess(harness.service.key_check)
    web = build_app(harness.runtime, access=access, metrics=serve_metrics)
    assert asgi_get(web, "/metrics").status_code == 401
    assert asgi_get(web, "/metrics", authorization="Bearer wrong-wrong-wrong").status_code == 401
    assert asgi_get(web, "/metrics", authorization=f"Bearer {caller}").status_code == 403
    answer = asgi_get(web, "/metrics", authorization=f"Bearer {admin}")
    assert answer.status_code == 200
    samples = scrape(answer.text)
    assert value(samples, "metis_llm_calls_total", provider="openai", model=GPT, outcome="ok") == 4
    assert value(samples, "metis_build_info", service="serve") == 1
    off = build_app(harness.runtime, access=access)
    assert asgi_get(off, "/metrics", authorization=f"Bearer {admin}").status_code == 404


def test_a_short_or_malformed_setting_is_refused_by_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("METIS_METRICS", "maybe")
    with pytest.raises(ConfigError, match="METIS_METRICS must be 1 or 0"):
        metrics_settings_from_env()
    monkeypatch.setenv("METIS_METRICS", "1")
    monkeypatch.setenv("METIS_METRICS_BEARER", "short")
    with pytest.raises(ConfigError, match="at least 16 characters") as caught:
        metrics_settings_from_env()
    assert "short" not in str(caught.value)
    monkeypatch.setenv("METIS_METRICS", "0")
    assert metrics_settings_from_env() is None
