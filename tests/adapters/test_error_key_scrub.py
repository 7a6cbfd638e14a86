"""A provider body that echoes the key never puts it into an exception: str, repr, .detail."""

from __future__ import annotations

import httpx
import pytest
from mock_http import serve

from metis_core.errors import MetisError, ProviderError
from metis_core.messages import user_message

MODELS = {
    "anthropic": "anthropic:claude-sonnet-4-5",
    "openai": "openai:gpt-4o",
    "openai_responses": "openai_responses:gpt-5",
    "gemini": "gemini:gemini-2.5-flash",
    "ollama": "ollama:llama3.2",
    "openrouter": "openrouter:anthropic/claude-sonnet-4.5",
    "openai_compatible": "openai_compatible:local-model",
    "bedrock": "bedrock:amazon.nova-micro-v1:0",  # a bearer Bedrock API key
}
ODD_KEY = "tenant-7f3a9c2e-private-credential"  # no well-known shape: only the exact value can catch it


def _echoing_bodies(key: str) -> list[bytes]:
    return [
        b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key: %s"}}' % key.encode(),
        b'{"error":{"message":"Incorrect API key provided: %s.","type":"invalid_request_error","code":"%s"}}'
        % (key.encode(), key.encode()),
        b'{"error":{"code":401,"message":"API key not valid: %s","status":"UNAUTHENTICATED"}}' % key.encode(),
        b'{"error":"unauthorized: Bearer %s"}' % key.encode(),
        b"<html>401 for key %s</html>" % key.encode(),
    ]


def _assert_clean(error: BaseException, *secrets: str) -> None:
    rendered = [str(error), repr(error), str(getattr(error, "detail", "")), repr(error.args)]
    for secret in secrets:
        assert not any(secret in text for text in rendered), rendered


@pytest.mark.parametrize("provider", sorted(MODELS))
@pytest.mark.parametrize("body_index", range(5))
def test_a_401_body_echoing_the_key_is_scrubbed_from_the_exception(provider: str, body_index: int) -> None:
    body = _echoing_bodies(ODD_KEY)[body_index]
    client, _ = serve(httpx.Response(401, content=body), provider=provider, api_key=ODD_KEY)
    with pytest.raises(MetisError) as caught:
        client.complete([user_message("hi")], MODELS[provider])
    _assert_clean(caught.value, ODD_KEY)
    with pytest.raises(MetisError) as streamed:
        list(client.stream([user_message("hi")], MODELS[provider]))
    _assert_clean(streamed.value, ODD_KEY)


def test_keys_of_a_well_known_shape_are_scrubbed_even_when_never_sent() -> None:
    others = ["sk-ant-api03-" + "A" * 40, "sk-proj-" + "b" * 40, "AIza" + "C" * 35, "sk-or-v1-" + "d" * 64,
              "AKIA" + "E" * 16, "ASIA" + "F7" * 8, "ABSK" + "g" * 40]
    for other in others:
        error = ProviderError(f"bad key {other} given", provider="x", provider_code=other, request_id=other)
        _assert_clean(error, other)
        assert "[redacted key]" in str(error)
