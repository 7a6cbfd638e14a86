"""`metis serve` as a user runs it: refusing an open bind without an admin or viewer gateway key,
saying the retired serve tokens are no longer read, and serving the API and the page on 127.0.0.1
until Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import socket
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


def test_serving_on_all_interfaces_without_an_access_key_is_refused_with_how_to_issue_one(
    home: Path, workspace: Path,
) -> None:
    done = metis(["serve", "--host", "0.0.0.0", "--port", str(free_port())], cli_env(home, None), workspace)
    said = " ".join((done.stderr + done.stdout).split())
    assert done.returncode == 3 and "Traceback" not in said
    assert "metis gateway keys issue --name web --scope admin" in said and "127.0.0.1" in said


def test_the_retired_serve_tokens_are_named_as_no_longer_read(home: Path, workspace: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "serve-tokens.json").write_text(json.dumps({"ab" * 32: "admin"}))
    env = cli_env(home, None, METIS_SERVE_TOKEN="mst_an-old-token")
    done = metis(["serve", "--host", "0.0.0.0", "--port", str(free_port())], env, workspace)
    said = " ".join((done.stderr + done.stdout).split())
    assert done.returncode == 3 and "serve-tokens.json and METIS_SERVE_TOKEN are no longer read" in said
    assert "mst_an-old-token" not in said
    retired = metis(["serve", "--new-token"], cli_env(home, None), workspace)
    assert retired.returncode == 2 and "--new-token" in retired.stderr  # a usage error: the option is gone


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
        assert response.status_code == 401  # the keyless local user comes in by the printed launch link
        page = httpx.get(f"http://127.0.0.1:{port}/")
        assert page.status_code == 200 and "<main" in page.text
    finally:
        os.kill(process.pid, signal.SIGINT)
        out, _ = process.communicate(timeout=20)
    assert f"http://127.0.0.1:{port}/launch?token=" in out


def test_gateway_serve_web_refuses_several_workers_and_an_open_bind_without_an_access_key(
    home: Path, workspace: Path,
) -> None:
    env = cli_env(home, None)
    env.pop("METIS_SERVE_TOKEN", None)
    several = metis(["gateway", "serve", "--web", "--workers", "2", "--port", str(free_port())], env, workspace)
    assert several.returncode != 0 and "--workers 1" in several.stderr + several.stdout
    open_bind = metis(["gateway", "serve", "--web", "--host", "0.0.0.0", "--port", str(free_port())], env, workspace)
    assert open_bind.returncode != 0 and "--scope admin" in open_bind.stderr + open_bind.stdout
