"""`metis serve` as a user runs it: refusing an open bind without a token, making a token, and
serving the API and the page on 127.0.0.1 until Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path

import httpx

from .cli_harness import COMMAND, cli_env, metis


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_serving_on_all_interfaces_without_a_token_is_refused_with_how_to_give_one(
    home: Path, workspace: Path,
) -> None:
    done = metis(["serve", "--host", "0.0.0.0", "--port", str(free_port())], cli_env(home, None), workspace)
    assert done.returncode != 0
    assert "--token" in done.stderr + done.stdout and "127.0.0.1" in done.stderr + done.stdout


def test_new_token_prints_it_once_and_stores_only_its_hash_readable_by_the_owner(home: Path, workspace: Path) -> None:
    done = metis(["serve", "--new-token", "--scope", "viewer"], cli_env(home, None), workspace)
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip()
    assert token.startswith("mst_") and len(token) > 40
    stored = home / "serve-tokens.json"
    assert token not in stored.read_text()
    assert list(json.loads(stored.read_text()).values()) == ["viewer"]
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600


def test_metis_serve_answers_on_loopback_until_interrupted(home: Path, workspace: Path) -> None:
    port = free_port()
    process = subprocess.Popen([*COMMAND, "serve", "--port", str(port)], env=cli_env(home, None), cwd=workspace,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/api/sessions", timeout=1)
                break
            except httpx.TransportError:
                assert process.poll() is None and time.monotonic() < deadline, process.stderr.read() if \
                    process.stderr else ""
                time.sleep(0.1)
        assert response.status_code == 200 and response.json() == {"sessions": []}
        page = httpx.get(f"http://127.0.0.1:{port}/")
        assert page.status_code == 200 and "<main" in page.text
    finally:
        os.kill(process.pid, signal.SIGINT)
        out, _ = process.communicate(timeout=20)
    assert f"http://127.0.0.1:{port}/" in out


def test_gateway_serve_web_refuses_several_workers_and_an_open_bind_without_a_token(
    home: Path, workspace: Path,
) -> None:
    env = cli_env(home, None)
    env.pop("METIS_SERVE_TOKEN", None)
    several = metis(["gateway", "serve", "--web", "--workers", "2", "--port", str(free_port())], env, workspace)
    assert several.returncode != 0 and "--workers 1" in several.stderr + several.stdout
    open_bind = metis(["gateway", "serve", "--web", "--host", "0.0.0.0", "--port", str(free_port())], env, workspace)
    assert open_bind.returncode != 0 and "--token" in open_bind.stderr + open_bind.stdout
