"""`metis serve` against a hostile web page open in the local user's browser: cross-site writes with
every CORS-simple content type, a foreign-Origin WebSocket, a rebinding Host, framing, a page that
guesses the port without the launch cookie: each refused, while the page's own requests, the
launch link and key holders keep working.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect
from websockets.typing import Origin

from metis_core.gateway.web_guard import WebPolicy
from metis_core.server.app import build_app

from .conftest import Served
from .server_support import LiveServer, chat_turn, script_weather_turn

EVIL = "http://evil.example"
SIMPLE_BODIES: dict[str, dict[str, object]] = {
    "text/plain": {"content": '{"text": "run rm -rf ~", "answer": "allow_session", "title": "pwned"}',
                   "headers": {"content-type": "text/plain"}},
    "application/x-www-form-urlencoded": {"data": {"text": "hi", "answer": "allow_session"}},
    "multipart/form-data": {"files": {"text": ("a.txt", b"hi", "text/plain")}},
}


def state_changing_routes(server: LiveServer) -> list[str]:
    """Every route of the app that takes a write, its path parameters filled in."""
    paths = []
    for route in server.app.routes:
        methods = getattr(route, "methods", None) or set()
        if methods - {"GET", "HEAD", "OPTIONS"}:
            paths.append(re.sub(r"\{(\w+)\}", lambda m: f"x_{m.group(1)}", route.path))
    return paths


def test_the_app_has_the_state_changing_routes_the_hostile_page_tries(served: Served) -> None:
    assert set(state_changing_routes(served.server)) == {
        "/api/chat/sessions", "/api/chat/sessions/x_session_id/messages", "/api/chat/confirmations/x_request_id"}


@pytest.mark.parametrize("simple_type", sorted(SIMPLE_BODIES))
def test_cross_site_simple_posts_to_every_state_changing_route_are_refused(served: Served, simple_type: str) -> None:
    origins = {EVIL: 403, "null": 403, f"http://127.0.0.1:{served.server.port + 1}": 403}  # another local port too
    with served.server.client() as http:  # even holding the local user's cookie (a same-site page would)
        for path in state_changing_routes(served.server):
            for origin, status in origins.items():
                body = dict(SIMPLE_BODIES[simple_type])
                headers = {**body.pop("headers", {}), "origin": origin}  # type: ignore[dict-item]
                answer = http.post(path, headers=headers, **body)
                assert answer.status_code == status, (path, origin, answer.text)
                assert answer.json()["error"] == "ServeOriginError"
            # without an Origin (no browser sends a cross-site POST without one) the body type alone is refused
            body = dict(SIMPLE_BODIES[simple_type])
            answer = http.post(path, headers=body.pop("headers", {}), **body)
            assert answer.status_code == 415, (path, answer.text)
            assert answer.json()["error"] == "ServeContentTypeError"
    assert served.runtime.store.list_sessions(10) == []  # nothing was created, no turn ran
    assert served.server.app.state.context.chat_sessions == {}


def test_a_cross_site_json_post_is_refused_and_the_pages_own_origin_is_not(served: Served) -> None:
    with served.server.client() as http:
        refused = http.post("/api/chat/sessions", json={"title": "x"}, headers={"origin": EVIL})
        assert refused.status_code == 403
        own = http.post("/api/chat/sessions", json={"title": "mine"}, headers={"origin": served.server.url})
        assert own.status_code == 201
    assert [s.title for s in served.runtime.store.list_sessions(10)] == ["mine"]


def test_a_page_that_guesses_the_port_without_the_launch_cookie_gets_nothing(served: Served) -> None:
    for path in ("/api/sessions", "/api/chat/confirmations", "/api/gateway/keys", "/api/audit"):
        answer = httpx.get(served.server.url + path, timeout=5)
        assert answer.status_code == 401 and "link" in answer.json()["detail"], path
    name = served.server.app.state.context.access.launch.cookie_name
    forged = httpx.get(served.server.url + "/api/sessions", headers={"cookie": f"{name}=guess"}, timeout=5)
    assert forged.status_code == 401
    with pytest.raises(InvalidStatus) as refused:
        connect(served.server.ws_url, open_timeout=5)
    assert refused.value.response.status_code == 401


def test_the_launch_link_works_once_sets_a_strict_httponly_cookie_and_redirects_to_a_clean_url(served: Served) -> None:
    link = served.server.launch_url()
    first = httpx.get(link, timeout=5)
    assert first.status_code == 303 and first.headers["location"] == "/"
    cookie = first.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    assert httpx.get(served.server.url + "/api/sessions", cookies=dict(first.cookies), timeout=5).status_code == 200
    again = httpx.get(link, timeout=5)
    assert again.status_code == 403 and "already used" in again.json()["detail"]
    assert "set-cookie" not in again.headers
    assert httpx.get(served.server.url + "/launch?token=guess", timeout=5).status_code == 403


def test_a_foreign_origin_websocket_is_refused_even_with_the_cookie_and_the_own_origin_is_served(
    served: Served,
) -> None:
    headers = served.server.cookie_header
    for origin in (EVIL, "null", f"http://localhost:{served.server.port + 1}"):
        with pytest.raises(InvalidStatus) as refused:
            connect(served.server.ws_url, origin=Origin(origin), additional_headers=headers, open_timeout=5)
        assert refused.value.response.status_code == 403
        assert json.loads(refused.value.response.body or b"{}")["error"] == "ServeOriginError"
    with connect(served.server.ws_url, origin=Origin(served.server.url), additional_headers=headers,
                 open_timeout=5) as ws:
        ws.send(json.dumps({}))
        assert json.loads(ws.recv(timeout=5))["kind"] == "subscribed"


def test_a_rebinding_host_is_refused_before_any_route(served: Served) -> None:
    port = served.server.port
    script_weather_turn(served)
    chat_turn(served, "deny")
    with served.server.client() as http:
        for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.nip.io:{port}", f"localhost:{port + 1}"):
            for path in ("/", "/api/sessions", "/static/app.js", "/launch?token=x"):
                answer = http.get(path, headers={"host": host})
                assert answer.status_code == 421, (host, path)
                assert answer.json()["error"] == "ServeHostError" and "weather" not in answer.text
        for host in (f"localhost:{port}", f"127.0.0.1:{port}"):
            assert http.get("/api/sessions", headers={"host": host}).status_code == 200
    with pytest.raises(InvalidStatus) as refused:
        connect(served.server.ws_url, open_timeout=5,
                additional_headers={**served.server.cookie_header, "host": f"evil.example:{port}"})
    assert refused.value.response.status_code == 421


def test_every_page_and_api_answer_forbids_framing_sniffing_inline_script_and_caching_content(
    served: Served,
) -> None:
    with served.server.client() as http:
        answers = {path: http.get(path) for path in ("/", "/static/app.js", "/api/sessions", "/api/nope")}
        answers["refused"] = http.post("/api/chat/sessions", content="x", headers={"origin": EVIL})
        answers["unauthorised"] = httpx.get(served.server.url + "/api/sessions")
    for name, answer in answers.items():
        csp = answer.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp, name
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "no-referrer"
        if name != "/static/app.js":
            assert answer.headers["cache-control"] == "no-store", name


def test_the_static_front_end_has_no_inline_script_style_or_handler_the_policy_would_block() -> None:
    static = Path(__file__).resolve().parents[2] / "metis_core" / "server" / "static"
    html = (static / "index.html").read_text()
    assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", html) == []
    assert "<style" not in html and " style=" not in html and not re.search(r"\son\w+=", html)
    for script in static.glob("*.js"):
        text = script.read_text()
        assert "innerHTML" not in text and "eval(" not in text and "setAttribute(\"style\"" not in text, script


def test_an_operator_allowed_host_and_origin_are_answered(served: Served) -> None:
    policy = WebPolicy().with_names(["metis.lan"], ["https://metis.example"])
    app = build_app(served.runtime, workspace=served.workspace, policy=policy)
    server = LiveServer(None, served.workspace, app=app)
    try:
        with server.client() as http:
            assert http.get("/api/sessions", headers={"host": f"metis.lan:{server.port}"}).status_code == 200
            assert http.get("/api/sessions", headers={"host": "other.lan"}).status_code == 421
            allowed = http.post("/api/chat/sessions", json={}, headers={"origin": "https://metis.example"})
            assert allowed.status_code == 201
            assert http.post("/api/chat/sessions", json={}, headers={"origin": EVIL}).status_code == 403
    finally:
        server.stop()


def test_the_launch_secret_never_reaches_the_record_or_an_answer(served: Served) -> None:
    launch = served.server.app.state.context.access.launch
    cookie_value = next(iter(served.server.cookies.values()))
    script_weather_turn(served)
    session_id, _ = chat_turn(served, "allow_once")
    httpx.get(served.server.url + "/api/sessions", headers={"cookie": f"{launch.cookie_name}=wrong"}, timeout=5)
    served.runtime.bus.flush()
    with served.server.client() as http:
        bodies = "".join(http.get(p).text for p in ("/api/sessions", f"/api/sessions/{session_id}/trace",
                                                    "/api/audit", f"/api/sessions/{session_id}/messages"))
    stored = "".join(e.model_dump_json() for e in served.runtime.trace.events())
    for text in (bodies, stored, repr(launch), repr(served.server.app.state.context.access)):
        assert cookie_value not in text
