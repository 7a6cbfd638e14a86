"""A real HTTP server on 127.0.0.1 for the cloud adapters' tests: scripted replies plus an OAuth token endpoint.

Replies are queued per path (query included); every request is kept with its headers. `/token`
answers a service-account JWT grant the way Google's token endpoint does, after checking the
JWT's RS256 signature against the test key's public half, so google-auth's real signing runs.
`/msi/token` answers azure-identity's managed identity request (App Service form, a GET);
`/token` also takes gcloud user credentials' refresh-token grant, and `/computeMetadata/v1/...`
plays the GCE metadata server (GCE_METADATA_HOST) with its ping, project id and token.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

TOKEN_PATH = "/token"
IDENTITY_PATH = "/msi/token"
IDENTITY_HEADER = "identity-header-not-a-token"
METADATA_PATH = "/computeMetadata/v1/"
REFRESH_TOKEN = "1//gcloud-user-refresh-token"


@dataclass
class Reply:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class CloudServer:
    def __init__(self, public_key_pem: bytes | None = None) -> None:
        self.queues: dict[str, deque[Reply]] = defaultdict(deque)
        self.seen: list[Seen] = []
        self.tokens_issued: list[str] = []
        self.public_key_pem = public_key_pem
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def script(self, path: str, *replies: Reply) -> None:
        self.queues[path].extend(replies)

    def calls(self, prefix: str = "/") -> list[Seen]:
        return [s for s in self.seen if s.path.startswith(prefix) and s.path not in (TOKEN_PATH, "/")
                and not s.path.startswith((IDENTITY_PATH, METADATA_PATH))]

    def reset(self) -> None:
        self.queues.clear()
        self.seen.clear()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def token_reply(self, body: bytes) -> Reply:
        from google.auth import jwt

        form = parse_qs(body.decode())
        if form.get("grant_type") == ["refresh_token"]:  # gcloud user credentials (authorized_user)
            if form.get("refresh_token") != [REFRESH_TOKEN]:
                return Reply(400, b'{"error": "invalid_grant", "error_description": "Bad Request"}')
            return self.issued("user")
        assertion = form["assertion"][0]
        claims = jwt.decode(assertion, certs=self.public_key_pem, verify=True)  # raises on a bad signature
        return self.issued(claims["iss"].partition("@")[0])

    def issued(self, whom: str) -> Reply:
        token = f"ya29.test-token-{len(self.tokens_issued)}-{whom}"
        self.tokens_issued.append(token)
        return Reply(200, json.dumps({"access_token": token, "expires_in": 3599, "token_type": "Bearer"}).encode())

    def metadata_reply(self, seen: Seen) -> Reply:
        """The GCE metadata server: only for requests with `Metadata-Flavor: Google`, as the real one."""
        if seen.headers.get("metadata-flavor") != "Google":
            return Reply(403, b"missing Metadata-Flavor header")
        flavor = {"Metadata-Flavor": "Google"}
        if seen.path.startswith(METADATA_PATH + "project/project-id"):
            return Reply(200, b"metis-metadata-project", "application/text", flavor)
        if seen.path.startswith(METADATA_PATH + "instance/service-accounts/default/token"):
            reply = self.issued("metadata")
            return Reply(reply.status, reply.body, headers=flavor)
        if seen.path.startswith(METADATA_PATH + "instance/service-accounts/default/"):  # ?recursive=true
            info = {"aliases": ["default"], "email": "metis-vm@metis-metadata-project.iam.gserviceaccount.com",
                    "scopes": ["https://www.googleapis.com/auth/cloud-platform"]}
            return Reply(200, json.dumps(info).encode(), headers=flavor)
        return Reply(200, b"", "application/text", flavor)  # the ping, and anything else asked

    def identity_reply(self, seen: Seen) -> Reply:
        """A managed identity token, as App Service's endpoint grants one (IDENTITY_ENDPOINT / IDENTITY_HEADER)."""
        query = parse_qs(seen.path.partition("?")[2])
        if seen.headers.get("x-identity-header") != IDENTITY_HEADER or "resource" not in query:
            return Reply(400, b'{"error": "bad managed identity request"}')
        token = f"eyJ0eXAiOiJKV1Qi.managed-identity-{len(self.tokens_issued)}.sig"
        self.tokens_issued.append(token)
        return Reply(200, json.dumps({"access_token": token, "expires_on": str(int(time.time()) + 3600),
                                      "resource": query["resource"][0], "token_type": "Bearer"}).encode())

    def reply_for(self, seen: Seen) -> Reply:
        self.seen.append(seen)
        if seen.path == TOKEN_PATH and self.public_key_pem is not None:
            return self.token_reply(seen.body)
        if seen.path.startswith(IDENTITY_PATH):
            return self.identity_reply(seen)
        if (seen.path == "/" and "metadata-flavor" in seen.headers) or seen.path.startswith(METADATA_PATH):
            return self.metadata_reply(seen)
        queue = self.queues.get(seen.path)
        if not queue:
            return Reply(599, json.dumps({"error": {"message": f"nothing scripted for {seen.path}"}}).encode())
        return queue.popleft()


def _handler(server: CloudServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = server.reply_for(Seen(self.path, headers, raw))
            self.send_response(reply.status)
            self.send_header("content-type", reply.content_type)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(reply.body)

        def do_GET(self) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = server.reply_for(Seen(self.path, headers, b""))
            self.send_response(reply.status)
            self.send_header("content-type", reply.content_type)
            self.send_header("content-length", str(len(reply.body)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(reply.body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


def service_account_file(directory: Any, token_uri: str) -> tuple[Any, bytes]:
    """A service-account key file with a fresh RSA key whose token_uri is the local server."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()).decode()
    public_pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo)
    info = {
        "type": "service_account", "project_id": "metis-test-project", "private_key_id": "test-key-1",
        "private_key": private_pem, "client_email": "metis-ci@metis-test-project.iam.gserviceaccount.com",
        "client_id": "1234567890", "token_uri": token_uri,
    }
    path = directory / "service-account.json"
    path.write_text(json.dumps(info))
    return path, public_pem


def serving_cloud(directory: Any) -> tuple[CloudServer, Any]:
    """A started CloudServer and a service-account key file whose tokens it grants (stop it when done)."""
    server = CloudServer()
    key_file, server.public_key_pem = service_account_file(directory, server.base_url + TOKEN_PATH)
    return server, key_file


def only_these_cloud_credentials(monkeypatch: Any, home: Any, access_key: str, secret: str, adc_file: Any) -> None:
    """botocore and google-auth see only these AWS keys and this ADC file: no profile, config file,
    session token, bearer key or metadata server of the machine running the tests."""
    for name, value in {"AWS_ACCESS_KEY_ID": access_key, "AWS_SECRET_ACCESS_KEY": secret, "AWS_REGION": "us-east-1",
                        "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": str(home / "none"),
                        "AWS_SHARED_CREDENTIALS_FILE": str(home / "none"),
                        "GOOGLE_APPLICATION_CREDENTIALS": str(adc_file)}.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK", "GOOGLE_CLOUD_PROJECT",
                 "GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION"):
        monkeypatch.delenv(name, raising=False)
