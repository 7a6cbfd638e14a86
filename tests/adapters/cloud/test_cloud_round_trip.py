"""The same-API round trip on the cloud platforms: every recorded answer read through the Azure or
Vertex adapter and written back to the same deployment or model keeps every item that API accepts.

Recordings: Azure's and Vertex's own (tests/data/cloud) and the plain (non-hosted-tool) Gemini and
Anthropic recordings of tests/data/shared, whose bodies Vertex returns unchanged. The projections
are the direct APIs' (tests/adapters/round_trip.py); auth is not under test here, so the Vertex
adapters get a fixed bearer token instead of Application Default Credentials.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from adapters.round_trip import ANTHROPIC, GEMINI, OPENAI_CHAT, Api, sent_back
from fixture_files import plain_wire_files

CLOUD = Path(__file__).parents[2] / "data" / "cloud"
AZURE = dataclasses.replace(OPENAI_CHAT, provider="azure", default_model="azure:gpt-4o")
VERTEX = dataclasses.replace(GEMINI, provider="vertex", default_model="vertex:gemini-2.5-flash")
VERTEX_CLAUDE = dataclasses.replace(ANTHROPIC, provider="vertex_anthropic",
                                    default_model="vertex_anthropic:claude-sonnet-4-5@20250929")


class FixedToken:
    def token(self) -> str:
        return "ya29.round-trip-token"

    def project(self) -> str | None:
        return None


def answers(api: Api, paths: list[Path]) -> list[object]:
    return [pytest.param(api, path, id=f"{api.provider}/{path.name}") for path in paths
            if path.name.startswith(("response__", "stream__", "chat__", "chat_stream__", "gemini__"))
            and "error" not in path.name]


CASES = [*answers(AZURE, sorted((CLOUD / "azure").iterdir())),
         *answers(VERTEX, [*sorted((CLOUD / "vertex").iterdir()), *plain_wire_files("gemini")]),
         *answers(VERTEX_CLAUDE, plain_wire_files("anthropic"))]


@pytest.fixture(autouse=True)
def fixed_vertex_token(monkeypatch: pytest.MonkeyPatch) -> None:
    from metis_core.adapters.vertex import adapter

    monkeypatch.setattr(adapter._VertexPlatform, "_init_tokens", lambda self: setattr(self, "tokens", FixedToken()))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "metis-test-project")


@pytest.mark.parametrize(("api", "path"), CASES)
def test_a_cloud_answer_written_back_to_its_deployment_keeps_what_the_api_accepts(api: Api, path: Path) -> None:
    data = path.read_bytes()
    streamed = path.suffix == ".sse"
    answer = api.recorded_answer(data, streamed)
    message, body = sent_back(api, data, streamed, api.default_model)
    assert message.metadata.provider == api.provider
    assert api.projection(api.sent_turn(body)) == api.projection(api.recorded_turn(answer))
