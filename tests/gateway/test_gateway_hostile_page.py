"""The gateway against a hostile web page and a rebinding name: cross-site writes with every
CORS-simple content type, a foreign Host, framing, each refused before any key is looked at, while
the official openai and anthropic SDKs (which send no Origin) keep working through the same server.
"""

from __future__ import annotations

import anthropic
import httpx
import openai
import pytest
from cli.replay_server import ANTHROPIC, OPENAI, Reply

from .gateway_harness import GatewayHarness

EVIL = "http://evil.example"
WRITES = ("/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/messages/count_tokens")
SIMPLE_TYPES = ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x")


@pytest.mark.parametrize("content_type", SIMPLE_TYPES)
def test_cross_site_simple_posts_to_every_model_route_are_refused_even_with_a_key(
    gateway: GatewayHarness, content_type: str,
) -> None:
    _, token = gateway.issue()
    body = '{"model": "openai:gpt-4o", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}'
    with httpx.Client(base_url=gateway.base_url, timeout=5) as http:
        for path in WRITES:
            headers = {"content-type": content_type, "authorization": f"Bearer {token}"}
            refused = http.post(path, content=body, headers={**headers, "origin": EVIL})
            assert refused.status_code == 403 and refused.json()["error"] == "ServeOriginError", path
            keyless = http.post(path, content=body, headers={"content-type": content_type, "origin": EVIL})
            assert keyless.status_code == 403, path
            # no Origin: not a browser's cross-site request; the key is what opens the route
            assert http.post(path, content=body, headers={"content-type": content_type}).status_code == 401, path
    assert gateway.upstream.requests == []  # nothing reached a provider
    assert len(gateway.of_type("gateway.auth_failed")) == len(WRITES)  # only the Origin-less, keyless ones


def test_a_rebinding_host_is_refused_on_every_gateway_route(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    port = gateway.port
    with httpx.Client(base_url=gateway.base_url, timeout=5) as http:
        for host in (f"evil.example:{port}", "evil.example", f"localhost:{port + 1}"):
            for path in ("/healthz", "/v1/models"):
                answer = http.get(path, headers={"host": host, "authorization": f"Bearer {token}"})
                assert answer.status_code == 421 and answer.json()["error"] == "ServeHostError", (host, path)
        assert http.get("/healthz", headers={"host": f"localhost:{port}"}).status_code == 200


def test_gateway_answers_carry_the_framing_and_sniffing_headers(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    answers = [httpx.get(gateway.base_url + "/healthz"),
               httpx.get(gateway.base_url + "/v1/models", headers={"authorization": f"Bearer {token}"}),
               httpx.get(gateway.base_url + "/v1/models")]
    for answer in answers:
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "no-referrer"
        assert answer.headers["cache-control"] == "no-store"


def test_the_official_sdks_keep_working_beside_the_checks(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(OPENAI, Reply.recording("openai_chat", "response__text.json"))
    chat = openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0).chat.completions.create(
        model="openai:gpt-4o", messages=[{"role": "user", "content": "weather in SF?"}])
    assert chat.choices[0].finish_reason == "stop"
    gateway.upstream.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"))
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)
    with client.messages.stream(model="anthropic:claude-haiku-4-5", max_tokens=50,
                                messages=[{"role": "user", "content": "hi"}]) as stream:
        assert "".join(stream.text_stream) == "Hello there!"
    assert [m.id for m in openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token).models.list()]
