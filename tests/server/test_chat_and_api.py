"""Chat over HTTP (SSE, with a tool confirmation answered by POST) and the read-only JSON API,
against a real uvicorn on 127.0.0.1. Access with gateway keys: test_serve_access.py."""

from __future__ import annotations

from support_servers import API_KEYS, Reply

from .conftest import Served
from .server_support import TOOL_TURN, chat_turn, script_weather_turn, sse_frames


def test_a_chat_turn_streams_the_cli_events_and_a_confirmation_answered_over_http_lets_the_tool_run(
    served: Served,
) -> None:
    script_weather_turn(served)
    session_id, frames = chat_turn(served, "allow_once")
    events = [kind for kind, _ in frames if "." in kind and not kind.endswith(".delta")]
    assert events == TOOL_TURN
    resolved = next(data for kind, data in frames if kind == "tool.confirmation_resolved")
    assert resolved["payload"]["decision"] == "allow" and resolved["payload"]["scope"] == "once"
    assert served.weather.calls == [{"location": "Paris"}]
    text = "".join(data["text"] for kind, data in frames if kind == "text.delta")
    assert frames[-1] == ("done", {"answer": "Hello there!", "error": None})
    assert text == "I'll check the current weather in Paris for you.Hello there!"  # both calls' text, streamed
    stored = [data for kind, data in frames if kind == "message"]  # each answer and tool result, once stored
    assert [m["role"] for m in stored] == ["assistant", "tool", "assistant"]
    assert stored[0]["content"][-1]["type"] == "tool_use" and stored[0]["content"][-1]["input"] == {"location": "Paris"}
    assert stored[1]["content"][0]["content"][0]["text"] == "Paris: 73°F, clear"
    kinds = [kind for kind, _ in frames]
    assert kinds.index("message") > kinds.index("turn.started") and kinds[-1] == "done"
    # The same events are on the record, in the same order.
    served.runtime.bus.flush()
    stored = [e.type for e in served.runtime.trace.replay(session_id)]
    assert stored == ["session.created", *TOOL_TURN]


def test_a_denied_confirmation_keeps_the_tool_from_running(served: Served) -> None:
    script_weather_turn(served)
    _, frames = chat_turn(served, "deny")
    resolved = next(data for kind, data in frames if kind == "tool.confirmation_resolved")
    assert resolved["payload"]["decision"] == "deny"
    assert served.weather.calls == []
    assert "tool.failed" in [kind for kind, _ in frames]


def test_an_unknown_confirmation_answer_is_refused_with_the_choices(served: Served) -> None:
    with served.server.client() as http:
        response = http.post("/api/chat/confirmations/nope", json={"answer": "maybe"})
    assert response.status_code == 400
    assert "allow_once" in response.json()["detail"]


def test_the_json_api_lists_searches_and_reads_a_session_its_trace_cost_audit_and_models(served: Served) -> None:
    script_weather_turn(served)
    session_id, _ = chat_turn(served, "allow_session")
    with served.server.client() as http:
        listed = http.get("/api/sessions").json()["sessions"]
        assert [s["id"] for s in listed] == [session_id]
        assert [s["id"] for s in http.get("/api/sessions", params={"q": "Paris"}).json()["sessions"]] == [session_id]
        assert http.get("/api/sessions", params={"q": "zebra"}).json()["sessions"] == []
        detail = http.get(f"/api/sessions/{session_id}").json()
        assert detail["session"]["title"] == "weather" and detail["totals"]["assistant_message_count"] == 2
        messages = http.get(f"/api/sessions/{session_id}/messages").json()["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
        trace = http.get(f"/api/sessions/{session_id}/trace").json()["events"]
        assert [e["type"] for e in trace] == ["session.created", *TOOL_TURN]
        cost = http.get("/api/cost").json()
        assert sum(row["calls"] for row in cost["model"]) == 2 and len(cost["day"]) == 1
        audit = http.get("/api/audit").json()["events"]
        assert "tool.confirmation_resolved" in [e["type"] for e in audit]
        models = http.get("/api/models").json()
        assert any(m["id"].startswith("anthropic:") for m in models["models"])
        missing = http.get("/api/sessions/sess_nope/messages")
        assert missing.status_code == 404 and "sess_nope" in missing.json()["detail"]
        bodies = "".join(r.text for r in (http.get("/api/models"), http.get("/api/sessions"),
                                          http.get(f"/api/sessions/{session_id}/trace")))
    for key in API_KEYS.values():
        assert key not in bodies


def test_chatting_with_an_unknown_session_is_a_404_and_leaves_no_turn_marked_running(served: Served) -> None:
    with served.server.client() as http:
        for _ in range(2):
            response = http.post("/api/chat/sessions/sess_nope/messages", json={"text": "hi"})
            assert response.status_code == 404 and "sess_nope" in response.json()["detail"]
        assert http.post("/api/chat/sessions/sess_nope/messages", json={}).status_code == 400


def test_a_stored_session_is_resumed_for_a_second_turn_over_http(served: Served) -> None:
    script_weather_turn(served)
    session_id, _ = chat_turn(served, "allow_session")
    served.server.app.state.context.chat_sessions.clear()  # as after a restart of the server
    served.script.script("anthropic", [Reply.fixture("anthropic", "stream__text_basic.sse")])
    with served.server.client() as http, http.stream(
            "POST", f"/api/chat/sessions/{session_id}/messages", json={"text": "And tomorrow?"}) as response:
        frames = list(sse_frames(response))
    assert frames[-1] == ("done", {"answer": "Hello there!", "error": None})
    kinds = [kind for kind, _ in frames]
    assert kinds[0] == "turn.started" and "turn.completed" in kinds
    served.runtime.bus.flush()
    assert [m.role.value for m in served.runtime.store.load_messages(session_id)][-2:] == ["user", "assistant"]
