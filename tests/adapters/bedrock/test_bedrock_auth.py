"""Bedrock auth: botocore's SigV4 signer checked on AWS's published test vectors, the credential chain's
failures as named errors that show no secret, bearer API keys without signing, and botocore only
when a Bedrock request needs it."""

from __future__ import annotations

import datetime
import subprocess
import sys
from pathlib import Path

import botocore.auth
import pytest
from bedrock_recordings import DATA
from botocore.credentials import Credentials

from metis_core.adapters.bedrock.adapter import BedrockAdapter
from metis_core.adapters.bedrock.errors import BedrockCredentialsError
from metis_core.adapters.bedrock.signing import BedrockExtraMissingError, SigV4Signer, region_from_host, sign_with

VECTORS = DATA / "aws4_testsuite"
ACCESS_KEY, SECRET_KEY = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SESSION_TOKEN = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267"
VECTOR_TIME = datetime.datetime(2015, 8, 30, 12, 36, 0)


def read_vector(name: str) -> tuple[str, str, dict[str, str], bytes]:
    head, _, body = (VECTORS / f"{name}.req").read_text().partition("\n\n")
    request_line, *header_lines = head.splitlines()
    method, path, _ = request_line.split(" ")
    headers = dict(line.split(":", 1) for line in header_lines)
    return method, f"https://{headers['Host']}{path}", headers, body.encode()


@pytest.mark.parametrize("name", ["post-vanilla", "get-vanilla-with-session-token", "post-x-www-form-urlencoded",
                                  "get-vanilla-query-order-key-case"])
def test_signing_matches_the_published_sigv4_test_vectors(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: VECTOR_TIME)
    method, url, headers, body = read_vector(name)
    token = SESSION_TOKEN if "session-token" in name else None
    signed = sign_with(Credentials(ACCESS_KEY, SECRET_KEY, token), "us-east-1", method, url, body, headers,
                       service="service")
    assert signed["Authorization"] == (VECTORS / f"{name}.authz").read_text().strip()


def test_the_signing_region_comes_from_the_endpoint_host() -> None:
    assert region_from_host("https://bedrock-runtime.eu-west-3.amazonaws.com/model/x/converse") == "eu-west-3"
    assert region_from_host("https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com") == "us-gov-west-1"
    assert region_from_host("http://127.0.0.1:8080") is None


@pytest.fixture
def no_aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An environment where botocore's chain finds nothing (no files, no metadata service)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                 "AWS_BEARER_TOKEN_BEDROCK", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                 "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.mark.usefixtures("no_aws")
def test_missing_credentials_are_a_named_error_that_says_what_to_set() -> None:
    with pytest.raises(BedrockCredentialsError) as caught:
        SigV4Signer({"AWS_REGION": "us-east-1"}).sign("POST", "https://bedrock-runtime.us-east-1.amazonaws.com/x",
                                                     b"{}", {})
    assert "AWS_ACCESS_KEY_ID" in str(caught.value) and "AWS_BEARER_TOKEN_BEDROCK" in str(caught.value)
    assert caught.value.error_class.value == "auth" and not caught.value.retryable


@pytest.mark.usefixtures("no_aws")
def test_half_set_credentials_are_a_named_error_without_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    key_id = "AKIAIOSFODNN7SECRET1"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key_id)  # and no secret key
    with pytest.raises(BedrockCredentialsError) as caught:
        SigV4Signer({"AWS_REGION": "us-east-1"}).sign("POST", "https://bedrock-runtime.us-east-1.amazonaws.com/x",
                                                     b"{}", {})
    assert "PartialCredentialsError" in str(caught.value) and "aws sso login" in str(caught.value)
    assert key_id not in repr(caught.value.args)


def test_a_bearer_api_key_is_sent_as_is_and_nothing_is_signed() -> None:
    adapter = BedrockAdapter()
    headers = {"content-type": "application/json", **adapter.auth_headers("ABSKQmVkcm9ja0FQSUtleS1leGFtcGxl")}
    assert adapter.sign_request("POST", "https://bedrock-runtime.us-east-1.amazonaws.com/x", b"{}", headers) == headers


def test_without_botocore_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "botocore", None)  # `import botocore` now raises ImportError
    with pytest.raises(BedrockExtraMissingError, match=r"metis-core\[bedrock\]"):
        BedrockAdapter().chunk_decoder()
    with pytest.raises(BedrockExtraMissingError, match=r"metis-core\[bedrock\]"):
        BedrockAdapter().sign_request("POST", "https://bedrock-runtime.us-east-1.amazonaws.com/x", b"{}", {})


def test_importing_metis_and_the_bedrock_adapter_loads_no_botocore() -> None:
    code = ("import sys, metis_core, metis_core.adapters.bedrock.adapter, metis_core.adapters.bedrock.stream; "
            "print('botocore' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
