"""The console's JSON API over a recorded multi-session store: the sessions table (filters, sorts,
keyset pages, search with hits), a session's timeline, usage with CSV, gateway operations and
quality; bad input answered 400 with a message that says what to use."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from event_payload_samples import minimal
from store_backends import BACKENDS, _postgres_session  # noqa: F401

from .console_store import XSS_USER, Recorded, console_server


@pytest.fixture(scope="module", params=BACKENDS)
def console(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
            _postgres_session: None) -> Iterator[tuple[httpx.Client, Recorded]]:  # noqa: F811
    """One recorded store and server per backend, shared by the module's tests."""
    with console_server(tmp_path_factory.mktemp("console"), request.param) as (server, recorded), \
            server.client() as http:
        yield http, recorded


def sessions(http: httpx.Client, **params: Any) -> dict[str, Any]:
    answer = http.get("/api/console/sessions", params=params)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def ids(body: dict[str, Any]) -> list[str]:
    return [s["id"] for s in body["sessions"]]


def test_the_sessions_table_rows_say_what_each_session_did(console: tuple[httpx.Client, Recorded]) -> None:
    http, r = console
    rows = {s["id"]: s for s in sessions(http)["sessions"]}
    assert set(rows) == {r.routed, r.flaky, r.hostile, r.refused}
    routed = rows[r.routed]
    assert routed["status"] == "ok" and routed["models"] == ["anthropic:claude-haiku-4-5"]
    assert (routed["turns"], routed["calls"], routed["input_tokens"], routed["output_tokens"]) == (1, 2, 300, 70)
    assert routed["cost_usd"] == "0.0005" and routed["unpriced_calls"] == 0 and routed["latency_ms"] == 1340
    assert (routed["keys"], routed["users"], routed["teams"]) == (["key_red"], ["alice"], ["red"])
    assert routed["tools"] == ["get_weather"] and routed["score"] == 0.9 and routed["feedback_up"] == 1
    assert rows[r.flaky]["status"] == "error" and rows[r.flaky]["feedback_down"] == 1
    assert rows[r.hostile]["status"] == "cancelled" and rows[r.hostile]["unpriced_calls"] == 1
    assert rows[r.refused]["status"] == "refused"


@pytest.mark.parametrize(("params", "expected"), [
    ({"status": "ok"}, "routed"), ({"status": "error"}, "flaky"), ({"status": "cancelled"}, "hostile"),
    ({"status": "refused"}, "refused"), ({"model": "anthropic:claude-haiku-4-5"}, "routed"),
    ({"key": "key_red"}, "routed"), ({"user": "alice"}, "routed"), ({"team": "red"}, "routed"),
    ({"tool": "get_weather"}, "routed"), ({"min_score": "0.5"}, "routed"), ({"feedback": "down"}, "flaky"),
    ({"user": XSS_USER}, "hostile"),
])
def test_each_filter_keeps_the_sessions_it_names(console: tuple[httpx.Client, Recorded], params: dict[str, str],
                                                 expected: str) -> None:
    http, r = console
    assert ids(sessions(http, **params)) == [getattr(r, expected)]


def test_the_date_range_filters_on_when_a_session_started(console: tuple[httpx.Client, Recorded]) -> None:
    http, _ = console
    assert len(ids(sessions(http, since="2000-01-01", until="2999-12-31"))) == 4
    assert ids(sessions(http, since="2999-01-01")) == []
    assert ids(sessions(http, until="2000-01-01")) == []


def test_keyset_pages_cover_every_session_once_in_each_sort(console: tuple[httpx.Client, Recorded]) -> None:
    http, _ = console
    everything = set(ids(sessions(http)))
    for sort in ("updated", "started", "cost", "tokens_in", "tokens_out"):
        for order in ("desc", "asc"):
            seen, cursor = [], None
            while True:
                body = sessions(http, sort=sort, order=order, limit=1, **({"cursor": cursor} if cursor else {}))
                seen += ids(body)
                cursor = body["next_cursor"]
                if cursor is None:
                    break
            assert len(seen) == 4 and set(seen) == everything, (sort, order)
    by_cost = [s["cost_usd"] for s in sessions(http, sort="cost")["sessions"]]
    assert [float(c) for c in by_cost] == sorted((float(c) for c in by_cost), reverse=True)


def test_search_finds_message_text_and_returns_the_hits_around_it(console: tuple[httpx.Client, Recorded]) -> None:
    http, r = console
    body = sessions(http, q="SUNNY")
    assert ids(body) == [r.routed]
    assert body["sessions"][0]["hits"] == ["Paris looks **sunny**: pack light."]
    assert ids(sessions(http, q="Paris trip")) == [r.routed]  # the title
    assert ids(sessions(http, q="window.__xss=8")) == [r.hostile]
    assert ids(sessions(http, q='onerror="window')) == [r.hostile]  # a quote: no raw-JSON prefilter, still found
    assert ids(sessions(http, q="100%")) == []


@pytest.mark.parametrize(("params", "names"), [
    ({"since": "yesterday"}, "since="), ({"until": "2026-13-45"}, "until="), ({"sort": "title"}, "unknown sort"),
    ({"order": "up"}, "unknown order"), ({"status": "done"}, "unknown status"), ({"limit": "x"}, "not a number"),
    ({"limit": "0"}, "out of range"), ({"min_score": "high"}, "not a number"), ({"cursor": "!!"}, "cursor"),
    ({"since": "2026-02-01", "until": "2026-01-01"}, "empty"), ({"feedback": "meh"}, "unknown feedback"),
])
def test_bad_session_queries_are_400_with_a_message_that_says_what_to_use(
    console: tuple[httpx.Client, Recorded], params: dict[str, str], names: str,
) -> None:
    http, _ = console
    answer = http.get("/api/console/sessions", params=params)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == "ConsoleQueryError" and names in answer.json()["detail"]


def test_a_cursor_of_another_shape_is_refused(console: tuple[httpx.Client, Recorded]) -> None:
    http, _ = console
    import base64
    forged = base64.urlsafe_b64encode(b'["x", 1]').decode()
    answer = http.get("/api/console/sessions", params={"cursor": forged})
    assert answer.status_code == 400 and "start again without `cursor`" in answer.json()["detail"]


def test_the_timeline_has_a_bar_per_span_with_status_tokens_and_cost(console: tuple[httpx.Client, Recorded]) -> None:
    http, r = console
    body = http.get(f"/api/console/sessions/{r.routed}/timeline").json()
    haiku = "anthropic:claude-haiku-4-5"
    kinds = [(s["kind"], s["name"], s["status"]) for s in body["spans"]]
    assert kinds == [("turn", "turn_01JCONSOLEROUTED", "ok"), ("routing", haiku, "ok"), ("routing", haiku, "ok"),
                     ("model call", haiku, "ok"), ("tool call", "get_weather", "ok"), ("model call", haiku, "ok")]
    turn, call, tool = body["spans"][0], body["spans"][3], body["spans"][4]
    assert call["parent"] == turn["id"] and tool["parent"] == call["id"]
    assert (call["input_tokens"], call["output_tokens"], call["cost_usd"]) == (120, 30, "0.0002")
    assert call["duration_ms"] == pytest.approx(640, abs=1) and tool["duration_ms"] == pytest.approx(90, abs=1)
    assert turn["cost_usd"] == "0.0005" and len(call["events"]) == 2
    flaky = http.get(f"/api/console/sessions/{r.flaky}/timeline").json()["spans"]
    assert [(s["kind"], s["status"], s["retries"]) for s in flaky if s["status"] != "ok"] == [
        ("model call", "error", 2), ("structured attempt", "retry", 0)]
    hostile = http.get(f"/api/console/sessions/{r.hostile}/timeline").json()["spans"]
    assert hostile[0]["status"] == "cancelled" and hostile[1]["cost_usd"] is None  # unpriced: unknown, not $0
    assert http.get("/api/console/sessions/sess_nope/timeline").status_code == 404


def test_usage_by_model_key_and_hour_with_a_csv_of_the_same_rows(console: tuple[httpx.Client, Recorded]) -> None:
    http, _ = console
    by_model = http.get("/api/console/usage", params={"by": "model"}).json()
    groups = {g["key"]: g for g in by_model["groups"]}
    haiku = groups["anthropic:claude-haiku-4-5"]
    assert haiku["calls"] == 2 and haiku["cost_usd"] == "0.0005"
    assert groups["local:llama"]["cost_usd"] is None and groups["local:llama"]["unpriced_calls"] == 1
    assert by_model["total"]["calls"] == 5 and by_model["total"]["unpriced_calls"] == 1
    by_key = http.get("/api/console/usage", params={"by": "key", "bucket": "hour"}).json()
    assert {g["key"]: g["calls"] for g in by_key["groups"]} == {"(none)": 1, "key_blue": 2, "key_red": 2}
    exported = http.get("/api/console/usage", params={"by": "user", "format": "csv"})
    assert exported.headers["content-type"].startswith("text/csv")
    assert "attachment" in exported.headers["content-disposition"]
    table = list(csv.DictReader(io.StringIO(exported.text)))
    shown = http.get("/api/console/usage", params={"by": "user"}).json()["series"]
    assert [(row["user"], int(row["calls"])) for row in table] == [(s["key"], s["calls"]) for s in shown]
    assert http.get("/api/console/usage", params={"by": "colour"}).status_code == 400
    assert http.get("/api/console/usage", params={"bucket": "week"}).status_code == 400
    assert http.get("/api/console/usage", params={"since": "2020-01-01", "until": "2026-01-01"}).status_code == 400


def test_gateway_operations_count_errors_and_latency_per_model(console: tuple[httpx.Client, Recorded]) -> None:
    http, _ = console
    ops = {m["key"]: m for m in http.get("/api/console/gateway").json()["models"]}
    assert set(ops) == {"openai · openai:gpt-4o"}  # only sessions a gateway served
    gpt = ops["openai · openai:gpt-4o"]
    assert (gpt["requests"], gpt["errors"], gpt["error_rate"]) == (3, 1, 0.3333)
    assert (gpt["p50_ms"], gpt["p95_ms"]) == (400, 2100)
    refusals = http.get("/api/console/gateway").json()["quota_refusals"]
    assert [(q["gateway_key_id"], q["cap_type"]) for q in refusals] == [("key_blue", "daily")]
    everything = http.get("/api/console/gateway", params={"scope": "all"}).json()["models"]
    assert len(everything) == 3
    assert http.get("/api/console/gateway", params={"scope": "mine"}).status_code == 400


def test_quality_has_feedback_verdicts_per_model_and_the_routers_reasons(
    console: tuple[httpx.Client, Recorded],
) -> None:
    http, r = console
    body = http.get("/api/console/quality").json()
    per_session = {s["session_id"]: s for s in body["sessions"]}
    assert per_session[r.routed]["feedback_up"] == 1 and per_session[r.routed]["mean_score"] == 0.9
    assert per_session[r.flaky]["feedback_down"] == 1 and per_session[r.flaky]["mean_score"] == 0.2
    models = {m["model"]: m for m in body["models"]}
    assert models["anthropic:claude-haiku-4-5"]["mean_score"] == 0.9 and models["openai:gpt-4o"]["down"] == 1
    decided = [d for d in body["decisions"] if d["type"] == "route.decided"]
    assert decided[0]["policy"] == "pattern" and decided[0]["reason"] == "similar trips went well"
    assert decided[0]["alternatives"] == [{"model": "openai:gpt-4o", "score": 0.6, "sample_size": 4}]
    assert any(d["type"] == "pattern.matched" and "hybrid fingerprint" in d["reason"] for d in body["decisions"])


def test_a_timeline_for_a_viewer_names_no_private_payload() -> None:
    from metis_core.events.catalog import make_event
    from metis_core.events.envelope import Sensitivity
    from metis_core.server.console_routes import visible
    from metis_core.server.console_timeline import timeline_json

    started = make_event("turn.started", minimal("turn.started"), session_id="sess_1", turn_id="t1")
    called = make_event("tool.called", minimal("tool.called", tool_name="secret_tool"), session_id="sess_1",
                        turn_id="t1", parent=started)
    done = make_event("tool.completed", minimal("tool.completed"), session_id="sess_1", turn_id="t1", parent=called)
    events = [started, called, done]
    assert timeline_json(visible(events, Sensitivity.PRIVATE))["spans"][1]["name"] == "secret_tool"
    for_viewer = timeline_json(visible(events, Sensitivity.PSEUDONYMOUS))
    assert "secret_tool" not in str(for_viewer) and for_viewer["spans"][1]["name"] == "tool.called"
    assert for_viewer["spans"][1]["status"] == "ok"  # the envelope still closes the span
