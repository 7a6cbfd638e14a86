"""Every recorded error answer of tests/data/heldout (`error__<status>__*.json`, see PROVENANCE.md)
is raised as a ProviderError of the right class that names the provider, keeps the provider's own
message, and never carries the API key.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from mock_http import serve

from metis_core.errors import ErrorClass, ProviderError
from metis_core.messages import user_message

HELDOUT = Path(__file__).resolve().parents[1] / "data" / "heldout"
PROVIDERS = {"anthropic": "anthropic", "openai_chat": "openai", "openrouter": "openrouter",
             "openai_compatible": "openai_compatible"}
MODELS = {"anthropic": "anthropic:claude-sonnet-4-5", "openai": "openai:gpt-4.1-mini",
          "openrouter": "openrouter:openai/gpt-4.1-mini", "openai_compatible": "openai_compatible:served-model"}
SECRET = "sk-test-SECRET-0123"
EXPECTED_CLASS = {400: ErrorClass.INVALID_REQUEST, 404: ErrorClass.INVALID_REQUEST, 429: ErrorClass.RATE_LIMIT}

CASES = [pytest.param(folder, path, id=f"{folder}/{path.name}")
         for folder in PROVIDERS for path in sorted((HELDOUT / folder).glob("error__*.json"))]


def provider_message(body: dict[str, object]) -> str:
    error = body.get("error")
    return str(error.get("message") if isinstance(error, dict) else error)


@pytest.mark.parametrize(("folder", "path"), CASES)
def test_a_recorded_error_answer_is_a_named_provider_error(folder: str, path: Path) -> None:
    status = int(path.name.split("__")[1])
    provider = PROVIDERS[folder]
    client, _ = serve(httpx.Response(status, content=path.read_bytes()), provider=provider, api_key=SECRET)
    with pytest.raises(ProviderError) as caught:
        client.complete([user_message("go")], model=MODELS[provider])
    error = caught.value
    assert error.provider == provider and error.status == status
    assert error.error_class is EXPECTED_CLASS[status]
    assert provider_message(json.loads(path.read_bytes()))[:60] in str(error)
    assert SECRET not in str(error) and SECRET not in repr(error.__dict__)


def test_every_api_has_held_out_errors() -> None:
    assert all(any((HELDOUT / folder).glob("error__*.json")) for folder in PROVIDERS)
