"""MCP tools against a real MCP server process (stdio and streamable HTTP): listing, schemas,
calls through the dispatcher and the turn loop, confirmation, errors, hangs and a server that dies."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from support_servers import Reply

from metis_core.agent.confirmation import ConfirmationAnswer
from metis_core.cli.demo.anthropic_wire import message_stream, new_tool_use_id
from metis_core.events.envelope import Event
from metis_core.messages import Role, SideEffects

from .conftest import McpHarness, stdio_server

PROBE_TOOLS = ["probe__add", "probe__greet", "probe__fail", "probe__die", "probe__hang", "probe__whoami"]


def processes_mentioning(text: str) -> list[str]:
    """Pids whose command line contains `text` (read from /proc, no external tool)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(entry.name)
            except OSError:
                continue
    return found


def of_type(events: list[Event], event_type: str) -> list[Event]:
    return [e for e in events if e.type == event_type]


def test_stdio_server_tools_join_the_registry_with_portable_schemas(make_harness: Any) -> None:
    h: McpHarness = make_harness({"probe": stdio_server(tool_side_effects={"add": "none"})})
    names = h.runtime.tools.names()
    assert [n for n in names if n.startswith("probe__")] == PROBE_TOOLS
    status = h.runtime.mcp.statuses["probe"]  # type: ignore[union-attr]
    assert status.connected and status.transport == "stdio"
    # tally takes a free-form object, outside the subset: skipped, with the reason.
    assert [(s.tool, "free-form keys" in s.reason) for s in status.skipped] == [("tally", True)]
    greet = h.runtime.tools.get("probe__greet").definition  # type: ignore[union-attr]
    assert greet.description == "Greet someone."
    assert "default" not in greet.input_schema["properties"]["punctuation"]
    assert 'Default: "!"' in greet.input_schema["properties"]["punctuation"]["description"]
    assert greet.side_effects is SideEffects.EXECUTE and greet.needs_confirmation
    add = h.runtime.tools.get("probe__add").definition  # type: ignore[union-attr]
    assert add.side_effects is SideEffects.NONE and not add.needs_confirmation


async def test_a_turn_calls_an_mcp_tool_after_confirmation_with_the_built_in_events(make_harness: Any) -> None:
    h: McpHarness = make_harness({"probe": stdio_server()})
    tool_id = new_tool_use_id()
    h.script.script("anthropic", [
        Reply(200, message_stream("claude-haiku-4-5", text="Let me greet.", input_tokens=40,
                                  tool_use=(tool_id, "probe__greet", {"name": "Ada"})),
              {"content-type": "text/event-stream"}),
        Reply(200, message_stream("claude-haiku-4-5", text="Done.", input_tokens=60),
              {"content-type": "text/event-stream"}),
    ])
    h.confirmer.answers = [ConfirmationAnswer("allow", "once")]
    result = await h.runtime.turns.run(h.session, "greet Ada")
    assert result.answer == "Done." and result.error is None
    assert [r.tool_name for r in h.confirmer.asked] == ["probe__greet"]
    events = h.events()
    types = [e.type for e in events]
    assert types[types.index("tool.called"):types.index("tool.completed") + 1] == [
        "tool.called", "tool.confirmation_requested", "tool.confirmation_resolved", "tool.completed"]
    called = of_type(events, "tool.called")[0]
    assert called.payload["tool_name"] == "probe__greet" and called.payload["side_effects"] == "execute"
    assert called.parent_event_id == of_type(events, "llm.call_completed")[0].id
    assert of_type(events, "tool.completed")[0].parent_event_id == called.id
    tool_message = next(m for m in h.session.history if m.role is Role.TOOL)
    assert tool_message.tool_results()[0].content[0].text == "hello Ada!"  # type: ignore[union-attr]
    sent = h.script.requests[0][2]
    offered = {t["name"]: t for t in sent["tools"]}
    assert "probe__greet" in offered and "probe__tally" not in offered


async def test_denied_mcp_call_never_reaches_the_server(make_harness: Any) -> None:
    h: McpHarness = make_harness({"probe": stdio_server()})
    h.confirmer.answers = [ConfirmationAnswer("deny")]
    result = await h.call("probe__die", {}, approve=False)
    assert not result.succeeded
    failed = of_type(h.events(), "tool.failed")[0]
    assert failed.payload["error_class"] == "user_denied"
    # the server is still alive: die never ran
    assert (await h.call("probe__add", {"a": 2, "b": 3})).message.tool_results()[0].content[0].text == "5"  # type: ignore[union-attr]


async def test_invalid_input_is_refused_before_the_server_is_called(make_harness: Any) -> None:
    h: McpHarness = make_harness({"probe": stdio_server()})
    result = await h.call("probe__add", {"a": "two"})
    assert not result.succeeded
    invalid = of_type(h.events(), "tool.input_invalid")[0]
    assert invalid.payload["tool_name"] == "probe__add"
    assert any("b" in problem for problem in invalid.payload["validation_errors"])
    assert of_type(h.events(), "tool.called") == []


async def test_a_tool_that_raises_is_a_tool_error_and_the_server_keeps_serving(make_harness: Any) -> None:
    h: McpHarness = make_harness({"probe": stdio_server()})
    result = await h.call("probe__fail", {"reason": "no"})
    block = result.message.tool_results()[0]
    assert block.is_error and "fail on MCP server 'probe' failed" in block.content[0].text  # type: ignore[union-attr]
    failed = of_type(h.events(), "tool.failed")[0]
    assert failed.payload["error_class"] == "execution_error"
    assert (await h.call("probe__add", {"a": 1, "b": 1})).succeeded


async def test_a_hung_call_times_out_as_a_named_tool_error(make_harness: Any) -> None:
    h: McpHarness = make_harness({"probe": stdio_server(call_timeout_seconds=1)})
    started = time.monotonic()
    result = await h.call("probe__hang", {"seconds": 60})
    assert time.monotonic() - started < 10
    assert not result.succeeded
    failed = of_type(h.events(), "tool.failed")[0]
    assert failed.payload["error_class"] == "timeout" and "did not answer hang within 1s" in \
        failed.payload["error_message"]
    assert (await h.call("probe__add", {"a": 4, "b": 4})).succeeded  # a slow call does not kill the server


async def test_streamable_http_server_with_headers(make_harness: Any, http_probe: str) -> None:
    h: McpHarness = make_harness({"remote": {"url": http_probe, "headers": {"X-Probe-Token": "h-secret-1"},
                                             "side_effects": "read"}})
    status = h.runtime.mcp.statuses["remote"]  # type: ignore[union-attr]
    assert status.connected and status.transport == "http" and status.target == http_probe
    assert "remote__add" in h.runtime.tools.names()
    added = await h.call("remote__add", {"a": 20, "b": 22}, approve=False)  # read: no confirmation
    assert added.message.tool_results()[0].content[0].text == "42"  # type: ignore[union-attr]
    who = await h.call("remote__whoami", {}, approve=False)
    assert "header=h-secret-1" in who.message.tool_results()[0].content[0].text  # type: ignore[union-attr]
    failed = await h.call("remote__fail", {"reason": "x"}, approve=False)
    assert not failed.succeeded
    assert h.confirmer.asked == []


async def test_stdio_env_reaches_the_server_but_not_the_provider_keys(make_harness: Any,
                                                                      monkeypatch: Any) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-should-not-leak-123456")
    h: McpHarness = make_harness({"probe": stdio_server(env={"PROBE_TOKEN": "e-secret-2"})})
    who = await h.call("probe__whoami", {})
    assert who.message.tool_results()[0].content[0].text.startswith("env=e-secret-2")  # type: ignore[union-attr]


def test_a_server_that_cannot_start_is_reported_and_the_rest_still_work(make_harness: Any) -> None:
    h: McpHarness = make_harness({"broken": {"command": "/nonexistent/mcp-server"}, "probe": stdio_server()})
    statuses = h.runtime.mcp.statuses  # type: ignore[union-attr]
    assert not statuses["broken"].connected and "broken" in (statuses["broken"].error or "")
    assert statuses["probe"].connected
    assert "read_file" in h.runtime.tools.names() and "probe__add" in h.runtime.tools.names()


def test_a_server_that_never_answers_the_handshake_times_out_and_is_ended(make_harness: Any) -> None:
    import sys

    marker = "metis-mcp-silent-probe-7d1"
    silent = {"command": sys.executable, "args": ["-c", f"import time; time.sleep(120)  # {marker}"],
              "connect_timeout_seconds": 1}
    started = time.monotonic()
    h: McpHarness = make_harness({"silent": silent})
    assert time.monotonic() - started < 15
    status = h.runtime.mcp.statuses["silent"]  # type: ignore[union-attr]
    assert not status.connected and "did not finish connecting within 1s" in (status.error or "")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the abandoned server process is ended, not left behind
        running = processes_mentioning(marker)
        if not running:
            break
        time.sleep(0.2)
    assert not running


async def test_an_http_server_that_dies_mid_call_fails_that_call_and_the_next(make_harness: Any,
                                                                              http_probe: str) -> None:
    h: McpHarness = make_harness({"remote": {"url": http_probe, "call_timeout_seconds": 20}})
    started = time.monotonic()
    died = await h.call("remote__die", {})
    after = await h.call("remote__add", {"a": 1, "b": 2})
    assert time.monotonic() - started < 25
    assert not died.succeeded and not after.succeeded
    failures = [e.payload for e in of_type(h.events(), "tool.failed")]
    assert [f["error_class"] for f in failures] == ["execution_error", "execution_error"]
    assert all("MCP server 'remote' is not running" in f["error_message"] for f in failures)


async def test_a_crashed_server_is_restarted_for_the_next_call_with_its_cause_kept(make_harness: Any) -> None:
    h: McpHarness = make_harness({"probe": stdio_server(call_timeout_seconds=30)})
    connection = h.runtime.mcp.connections["probe"]  # type: ignore[union-attr]
    started = time.monotonic()
    died = await h.call("probe__die", {})  # the call in flight fails at once, not at its timeout
    assert time.monotonic() - started < 10
    text = died.message.tool_results()[0].content[0].text  # type: ignore[union-attr]
    assert not died.succeeded and "MCP server 'probe' is not running" in text
    assert "exited with status 3" in text and "the call was not retried" in text
    after = await h.call("probe__add", {"a": 1, "b": 2})
    assert after.succeeded and after.message.tool_results()[0].content[0].text == "3"  # type: ignore[union-attr]
    (restart,) = connection.restarts
    assert restart.attempt == 1 and restart.error is None and "exited with status 3" in restart.cause
    process = connection._spawned[-1]
    process.kill()  # dies while idle: the next call finds it gone and restarts it first
    deadline = time.monotonic() + 10
    while process.returncode is None and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    again = await h.call("probe__add", {"a": 2, "b": 2})
    assert again.succeeded and len(connection.restarts) == 2
    assert [e.payload["error_class"] for e in of_type(h.events(), "tool.failed")] == ["execution_error"]
    assert "killed by signal 9" in connection.restarts[1].cause


async def test_a_server_that_keeps_crashing_is_restarted_a_bounded_number_of_times(make_harness: Any) -> None:
    from metis_core.agent.mcp.connection import MAX_RESTARTS

    h: McpHarness = make_harness({"probe": stdio_server(call_timeout_seconds=30)})
    for _ in range(MAX_RESTARTS + 1):
        assert not (await h.call("probe__die", {})).succeeded
    started = time.monotonic()
    last = await h.call("probe__add", {"a": 1, "b": 2})
    text = last.message.tool_results()[0].content[0].text  # type: ignore[union-attr]
    assert not last.succeeded and time.monotonic() - started < 2
    assert f"not restarted again after {MAX_RESTARTS} restarts" in text and "exited with status 3" in text
    restarts = h.runtime.mcp.connections["probe"].restarts  # type: ignore[union-attr]
    assert [r.attempt for r in restarts] == list(range(1, MAX_RESTARTS + 1))
