"""Bedrock signs with whatever botocore's standard credential chain finds: a named profile in the
shared credentials file (with its session token), a profile that assumes a role (STS AssumeRole),
or a container role's credentials from the container credentials endpoint (as ECS and EKS Pod
Identity serve them). STS and that endpoint are a local server (tests/cloud_server.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cloud_server import CloudServer, Reply

from metis_core.adapters.bedrock.signing import SigV4Signer

URL = "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.amazon.nova-micro-v1%3A0/converse"


@pytest.fixture
def aws_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                 "AWS_BEARER_TOKEN_BEDROCK", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                 "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
                 "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    yield tmp_path


def signed_by(headers: dict[str, str]) -> tuple[str, str | None]:
    credential = headers["Authorization"].split("Credential=", 1)[1].split("/", 1)[0]
    return credential, headers.get("X-Amz-Security-Token")


def test_a_named_profile_in_the_shared_credentials_file_signs(aws_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (aws_home / "credentials").write_text(
        "[default]\naws_access_key_id = AKIADEFAULTNOTUSED00\naws_secret_access_key = default/secret\n\n"
        "[team]\naws_access_key_id = ASIATEAMPROFILE00001\naws_secret_access_key = team/secret+key\n"
        "aws_session_token = team-session-token-0001\n")
    (aws_home / "config").write_text("[profile team]\nregion = eu-west-3\n")
    monkeypatch.setenv("AWS_PROFILE", "team")
    headers = SigV4Signer({}).sign("POST", URL, b"{}", {"content-type": "application/json"})
    assert signed_by(headers) == ("ASIATEAMPROFILE00001", "team-session-token-0001")
    assert SigV4Signer({}).region("http://127.0.0.1:9") == "eu-west-3"  # the profile's region


def test_a_container_role_is_fetched_from_the_container_credentials_endpoint(
        aws_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = CloudServer()
    try:
        expiration = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        server.script("/v2/credentials/role", Reply(200, json.dumps({
            "AccessKeyId": "ASIACONTAINERROLE001", "SecretAccessKey": "container/secret+key",
            "Token": "container-role-session-token", "Expiration": expiration}).encode()))
        monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", server.base_url + "/v2/credentials/role")
        monkeypatch.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "pod-identity-auth-token")
        headers = SigV4Signer({"AWS_REGION": "us-east-1"}).sign("POST", URL, b"{}", {})
    finally:
        server.stop()
    assert signed_by(headers) == ("ASIACONTAINERROLE001", "container-role-session-token")
    [fetched] = server.seen
    assert fetched.headers["authorization"] == "pod-identity-auth-token"


ASSUMED = """<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>
<Credentials><AccessKeyId>ASIAASSUMEDROLE00001</AccessKeyId><SecretAccessKey>assumed/secret+key</SecretAccessKey>
<SessionToken>assumed-role-session-token</SessionToken><Expiration>{expiration}</Expiration></Credentials>
<AssumedRoleUser><AssumedRoleId>AROAEXAMPLE:metis</AssumedRoleId>
<Arn>arn:aws:sts::123456789012:assumed-role/bedrock-caller/metis</Arn></AssumedRoleUser>
</AssumeRoleResult><ResponseMetadata><RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId></ResponseMetadata>
</AssumeRoleResponse>"""


def test_a_profile_that_assumes_a_role_signs_with_the_role_session(aws_home: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (aws_home / "credentials").write_text(
        "[base]\naws_access_key_id = AKIABASEPROFILE00001\naws_secret_access_key = base/secret+key\n")
    (aws_home / "config").write_text(
        "[profile caller]\nrole_arn = arn:aws:iam::123456789012:role/bedrock-caller\nsource_profile = base\n"
        "role_session_name = metis\nregion = us-east-1\n")
    server = CloudServer()
    try:
        expiration = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        server.script("/", Reply(200, ASSUMED.format(expiration=expiration).encode(), "text/xml"))
        monkeypatch.setenv("AWS_PROFILE", "caller")
        monkeypatch.setenv("AWS_ENDPOINT_URL_STS", server.base_url)  # STS is the local server
        headers = SigV4Signer({}).sign("POST", URL, b"{}", {})
    finally:
        server.stop()
    assert signed_by(headers) == ("ASIAASSUMEDROLE00001", "assumed-role-session-token")
    [assume] = server.seen
    assert b"Action=AssumeRole" in assume.body and b"RoleSessionName=metis" in assume.body
    assert "Credential=AKIABASEPROFILE00001/" in assume.headers["authorization"]  # signed by the source profile
