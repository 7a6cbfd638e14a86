"""The real `metis serve` process on each backend: keys issued with `metis gateway keys issue` on
the configured database (METIS_HOME/metis.db, or PostgreSQL through METIS_DATABASE_URL) open it,
by scope; the refusals land in that database's trace as `gateway.auth_failed`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from gateway.gateway_harness import free_port
from store_backends import _postgres_session, db_location  # noqa: F401

from metis_core.trace import TraceStore

METIS = [sys.executable, "-c", "from metis_core.cli.app import main; main()"]


def _env(home: Path, location: Path | str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.endswith("_API_KEY") and k not in ("METIS_HOME", "METIS_DATABASE_URL", "METIS_SERVE_TOKEN")}
    env.update(METIS_HOME=str(home), METIS_OLLAMA_PROBE_URL="http://127.0.0.1:9", NO_COLOR="1")
    if isinstance(location, str):
        env["METIS_DATABASE_URL"] = location
    return env


def _issue(env: dict[str, str], scope: str) -> str:
    done = subprocess.run([*METIS, "gateway", "keys", "issue", "--scope", scope, "--json"], env=env,
                          capture_output=True, text=True, timeout=60, check=True)
    token: str = json.loads(done.stdout)["key"]
    return token


def test_metis_serve_opens_to_admin_and_viewer_keys_of_the_configured_backend(
    tmp_path: Path, db_location: Path | str,  # noqa: F811
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    location = db_location if isinstance(db_location, str) else home / "metis.db"
    env = _env(home, location)
    admin, viewer, model = (_issue(env, scope) for scope in ("admin", "viewer", "model"))
    port = free_port()
    process = subprocess.Popen([*METIS, "serve", "--require-key", "--port", str(port)], env=env, cwd=tmp_path,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            try:
                if httpx.get(base + "/", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "metis serve did not start"
            time.sleep(0.1)
        with httpx.Client(base_url=base, timeout=10) as http:
            assert http.get("/api/sessions").status_code == 401
            assert http.get("/api/sessions", headers={"authorization": f"Bearer {model}"}).status_code == 403
            assert http.get("/api/sessions", headers={"authorization": f"Bearer {viewer}"}).status_code == 200
            keys = http.get("/api/gateway/keys", headers={"x-api-key": admin})
            assert keys.status_code == 200 and len(keys.json()["keys"]) == 3
            assert all(token not in keys.text for token in (admin, viewer, model))
    finally:
        process.terminate()
        process.wait(30)
    with TraceStore(location) as trace:
        failed = [e.payload for e in trace.events(types=["gateway.auth_failed"])]
    assert [(f["reason"], f["inbound_shape"]) for f in failed] == [("missing_token", "serve"),
                                                                  ("insufficient_scope", "serve")]


def test_metis_serve_on_an_open_address_with_no_access_key_exits_before_binding(tmp_path: Path) -> None:
    env = _env(tmp_path / "home", tmp_path / "home" / "metis.db")
    _issue(env, "model")
    done = subprocess.run([*METIS, "serve", "--host", "0.0.0.0", "--port", str(free_port())], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 3 and "Traceback" not in done.stderr
    message = " ".join(done.stderr.split())
    assert "serving on 0.0.0.0 needs a gateway key with scope admin or viewer" in message
    assert "`metis gateway keys issue --name web --scope admin`" in message


def test_metis_serve_prints_a_one_time_launch_link_and_answers_only_its_cookie_and_allowed_hosts(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("serve:\n  allowed_hosts: [metis.lan]\n")
    env = _env(home, home / "metis.db")
    port = free_port()
    process = subprocess.Popen([*METIS, "serve", "--port", str(port), "--allowed-host", "box.lan"], env=env,
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        assert process.stdout is not None
        link = ""
        deadline = time.monotonic() + 60
        while "token=" not in link:
            assert time.monotonic() < deadline and process.poll() is None, "metis serve printed no launch link"
            line = process.stdout.readline()
            link = next((word for word in line.split() if word.startswith(base + "/launch?token=")), "")
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # the banner and link are printed once the port listens, never before
        assert httpx.get(base + "/api/sessions", timeout=10).status_code == 401  # a page guessing the port
        signed_in = httpx.get(link, timeout=10)
        assert signed_in.status_code == 303 and signed_in.headers["location"] == "/"
        with httpx.Client(base_url=base, cookies=dict(signed_in.cookies), timeout=10) as http:
            assert http.get("/api/sessions").json() == {"sessions": []}
            for allowed in (f"metis.lan:{port}", f"box.lan:{port}", f"localhost:{port}"):
                assert http.get("/api/sessions", headers={"host": allowed}).status_code == 200, allowed
            assert http.get("/api/sessions", headers={"host": f"evil.example:{port}"}).status_code == 421
            posted = http.post("/api/chat/sessions", content="{}", headers={"content-type": "text/plain"})
            assert posted.status_code == 415
        assert httpx.get(link, timeout=10).status_code == 403  # the link works once
    finally:
        process.terminate()
        process.wait(30)
