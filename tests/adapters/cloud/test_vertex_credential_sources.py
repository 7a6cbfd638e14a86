"""Vertex AI with the Application Default Credentials a user or a machine has besides a service-account
key: gcloud user credentials (`gcloud auth application-default login`, a refresh token traded at
Google's token endpoint) and the GCE metadata server. Both endpoints are tests/cloud_server.py's,
reached by google-auth's own code with only their addresses swapped (google-auth fixes both at
import); a revoked refresh token is a named error saying what to run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cloud_server import REFRESH_TOKEN, TOKEN_PATH, CloudServer, Reply

from metis_core.adapters.client import ModelClient
from metis_core.adapters.cloud_errors import CloudCredentialsError
from metis_core.config import load_config
from metis_core.messages import user_message
from metis_core.transport.retry import RetryPolicy

ANSWER = (Path(__file__).parents[2] / "data" / "cloud" / "vertex" / "gemini__global_generate_content.json").read_bytes()
MODEL = "/locations/global/publishers/google/models/gemini-2.5-flash:generateContent"


@pytest.fixture
def vertex(cloud: tuple[CloudServer, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CloudServer:
    server, _ = cloud
    server.reset()
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "ANTHROPIC_VERTEX_PROJECT_ID",
                 "GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))  # no gcloud ADC file of this machine
    monkeypatch.setenv("METIS_VERTEX_BASE_URL", server.base_url)
    return server


def gemini_answer(tmp_path: Path) -> str:
    with ModelClient(config=load_config(tmp_path), retry=RetryPolicy(max_retries=0)) as models:
        return models.complete([user_message("hi")], "vertex:gemini-2.5-flash").text()


def use_user_credentials(tmp_path: Path, server: CloudServer, refresh_token: str,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    """What `gcloud auth application-default login` writes, as ADC; Google's token endpoint is the local server."""
    import google.oauth2.credentials

    monkeypatch.setattr(google.oauth2.credentials, "_GOOGLE_OAUTH2_TOKEN_ENDPOINT", server.base_url + TOKEN_PATH)
    path = tmp_path / "application_default_credentials.json"
    path.write_text(json.dumps({
        "type": "authorized_user", "client_id": "764086051850-test.apps.googleusercontent.com",
        "client_secret": "d-FL95Q19q7MQmFpd7hHD0Ty", "refresh_token": refresh_token}))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "user-project")  # user credentials name no project


def test_gcloud_user_credentials_are_refreshed_at_their_token_endpoint(
        vertex: CloudServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_user_credentials(tmp_path, vertex, REFRESH_TOKEN, monkeypatch)
    vertex.script("/v1/projects/user-project" + MODEL, Reply(200, ANSWER))
    assert gemini_answer(tmp_path).startswith("안녕하세요")
    [sent] = vertex.calls()
    assert sent.headers["authorization"] == f"Bearer {vertex.tokens_issued[-1]}"
    assert vertex.tokens_issued[-1].endswith("-user")


def test_a_revoked_refresh_token_says_to_log_in_again(vertex: CloudServer, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    revoked = "1//revoked-refresh-token-5e4d3c"
    use_user_credentials(tmp_path, vertex, revoked, monkeypatch)
    with pytest.raises(CloudCredentialsError, match="gcloud auth application-default login") as refused:
        gemini_answer(tmp_path)
    assert revoked not in str(refused.value) and not vertex.calls()


def test_the_metadata_server_gives_the_token_and_the_project(vertex: CloudServer, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from google.auth.compute_engine import _metadata

    host = vertex.base_url.removeprefix("http://")
    monkeypatch.setenv("GCE_METADATA_IP", host)  # the ping; the host below is read once at import
    monkeypatch.setattr(_metadata, "_GCE_METADATA_HOST", host)
    vertex.script("/v1/projects/metis-metadata-project" + MODEL, Reply(200, ANSWER))
    assert gemini_answer(tmp_path).startswith("안녕하세요")
    [sent] = vertex.calls()
    assert sent.headers["authorization"] == f"Bearer {vertex.tokens_issued[-1]}"
    assert vertex.tokens_issued[-1].endswith("-metadata")
