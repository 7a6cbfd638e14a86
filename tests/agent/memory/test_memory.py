"""Memory through the real tool: add / replace / consolidate / eviction, events, the system prefix,
and privacy (never stored as a message, never in an export)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import yaml
from support_servers import Reply

from metis_core.agent.dispatch import DispatchResult, ToolDispatcher
from metis_core.agent.recording import TurnRecorder
from metis_core.agent.session import Session
from metis_core.cli.demo.anthropic_wire import message_stream, new_tool_use_id
from metis_core.errors import MemoryEditError
from metis_core.events.envelope import Event
from metis_core.export import EXPORT_FORMATS, ExportOptions
from metis_core.hashing import sha256_hex
from metis_core.ids import new_ulid
from metis_core.messages import Role, ToolUseBlock

from ..conftest import Harness


def stream(body: bytes) -> Reply:
    return Reply(200, body, {"content-type": "text/event-stream"})


def of_type(events: list[Event], event_type: str) -> list[Event]:
    return [e for e in events if e.type == event_type]


async def call(h: Harness, session: Session, tool_input: dict[str, Any]) -> DispatchResult:
    dispatcher = ToolDispatcher(h.runtime.tools, session.confirmation, session.tool_context())
    recorder = TurnRecorder(h.runtime.bus, session.id, new_ulid())
    return await dispatcher.run_one(ToolUseBlock(id="toolu_" + new_ulid(), name="memory", input=tool_input),
                                    recorder, None)


def memory_file(h: Harness) -> Path:
    return h.workspace / ".metis" / "MEMORY.md"


async def test_the_model_adds_a_memory_entry_and_the_change_is_recorded(harness: Harness) -> None:
    h = harness
    h.script.script("anthropic", [
        stream(message_stream("claude-haiku-4-5", text="Noting that.", input_tokens=50,
                              tool_use=(new_tool_use_id(), "memory", {"action": "add", "file": "MEMORY.md",
                                                                     "text": "Tests run with make test"}))),
        stream(message_stream("claude-haiku-4-5", text="Noted.", input_tokens=70)),
    ])
    session = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(session, "remember how tests run")
    text = memory_file(h).read_text()
    assert "- Tests run with make test\n" in text
    events = h.events(session.id)
    updated = of_type(events, "memory.updated")[0]
    assert updated.parent_event_id == of_type(events, "llm.call_completed")[0].id
    assert updated.actor.value == "agent" and updated.sensitivity.value == "private"
    assert updated.payload == {"file": "MEMORY.md", "operation": "add", "before_hash": sha256_hex(""),
                               "after_hash": sha256_hex(text), "before_size_bytes": 0,
                               "after_size_bytes": len(text.encode())}
    assert "make test" not in str([e.payload for e in events])  # hashes and sizes only
    assert of_type(events, "tool.called")[0].payload["side_effects"] == "none"  # no confirmation asked
    assert h.confirmer.asked == []


async def test_replace_and_consolidate_and_their_errors(harness: Harness) -> None:
    h = harness
    session = h.runtime.sessions.create(h.workspace)
    for fact in ("uses ruff", "uses mypy strict", "deploys on fridays"):
        assert (await call(h, session, {"action": "add", "file": "MEMORY.md", "text": fact})).succeeded
    replaced = await call(h, session, {"action": "replace", "file": "MEMORY.md", "old_text": "fridays",
                                       "text": "never deploys on fridays"})
    assert replaced.succeeded and "- never deploys on fridays" in memory_file(h).read_text()
    ambiguous = await call(h, session, {"action": "replace", "file": "MEMORY.md", "old_text": "uses",
                                        "text": "x"})
    assert not ambiguous.succeeded and "2 entries contain it" in ambiguous.message.tool_results()[0].content[0].text  # type: ignore[union-attr]
    before = memory_file(h).read_text()
    merged = await call(h, session, {"action": "consolidate", "file": "MEMORY.md",
                                     "entries": ["lint: ruff and mypy --strict", "never deploys on fridays"]})
    assert merged.succeeded
    after = memory_file(h).read_text()
    assert after.count("\n- ") + after.startswith("- ") == 2
    updates = of_type(h.events(session.id), "memory.updated")
    assert [u.payload["operation"] for u in updates] == ["add", "add", "add", "replace", "consolidate"]
    assert updates[-1].payload["before_hash"] == sha256_hex(before)
    assert updates[-1].payload["after_hash"] == sha256_hex(after)
    assert of_type(h.events(session.id), "tool.failed")[0].payload["error_class"] == "validation_error"


async def test_over_the_cap_the_oldest_entries_are_evicted(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump({"memory": {"max_bytes": 300}}))
    (home / "routing.yaml").write_text("default: anthropic:claude-haiku-4-5\n")
    h = Harness(home, workspace)
    try:
        session = h.runtime.sessions.create(workspace)
        for n in range(8):
            assert (await call(h, session, {"action": "add", "file": "USER.md",
                                            "text": f"fact number {n} " + "x" * 30})).succeeded
        text = (home / "USER.md").read_text()  # USER.md lives in METIS_HOME by default
        assert len(text.encode()) <= 300 and "fact number 7" in text and "fact number 0" not in text
        events = h.events(session.id)
        evictions = of_type(events, "memory.eviction")
        gone = sum(1 for n in range(8) if f"fact number {n} " not in text)
        assert evictions and sum(e.payload["entries_evicted"] for e in evictions) == gone
        first = evictions[0]
        parent = next(e for e in events if e.id == first.parent_event_id)
        assert parent.type == "memory.updated" and first.payload["trigger"] == "size_cap_exceeded"
        assert first.payload["size_before_bytes"] > 300 >= first.payload["size_after_bytes"]
        too_big = await call(h, session, {"action": "add", "file": "USER.md", "text": "y" * 400})
        assert not too_big.succeeded
    finally:
        h.runtime.close()


async def test_memory_is_in_the_next_sessions_prefix_but_never_stored_or_exported(harness: Harness) -> None:
    h = harness
    first = h.runtime.sessions.create(h.workspace)
    await call(h, first, {"action": "add", "file": "USER.md", "text": "prefers answers in French"})
    assert first.prefix_parts == ()  # stable within a session: takes effect next session
    h.script.script("anthropic", [stream(message_stream("claude-haiku-4-5", text="Bonjour.", input_tokens=30))])
    second = h.runtime.sessions.create(h.workspace)
    assert [p.kind for p in second.prefix_parts] == ["memory"]
    await h.runtime.turns.run(second, "hello")
    sent = h.requests_to("anthropic.test")[0]
    assert "prefers answers in French" in str(sent["system"])
    composed = of_type(h.events(second.id), "llm.prompt_composed")[0].payload
    assert [p["kind"] for p in composed["parts"]] == ["memory"] and "French" not in str(composed)
    stored = h.runtime.store.load_messages(second.id)
    assert [m.role for m in stored] == [Role.USER, Role.ASSISTANT]
    assert "French" not in str([m.model_dump() for m in stored])
    h.runtime.bus.flush()
    h.runtime.trace.flush()
    for name, exporter in EXPORT_FORMATS.items():
        out = io.BytesIO()
        exporter(second.id, h.runtime.store, h.runtime.trace, out, ExportOptions(include_content=False))
        assert b"French" not in out.getvalue(), name
    resumed = h.runtime.sessions.resume(second.id)
    assert "French" in resumed.prefix_text()


def test_slash_memory_shows_adds_and_removes_with_events(harness: Harness, capsys: Any) -> None:
    from types import SimpleNamespace

    from metis_core.cli.memory_command import memory_command
    from metis_core.cli.output import Terminal

    h = harness
    session = h.runtime.sessions.create(h.workspace)
    chat: Any = SimpleNamespace(runtime=h.runtime, session=session, terminal=Terminal.open())
    memory_command(chat, "add the build uses make")
    memory_command(chat, "add user likes short answers")
    memory_command(chat, "add second fact")
    memory_command(chat, "remove 1")
    memory_command(chat, "")
    shown = capsys.readouterr().out
    assert "MEMORY.md" in shown and "1. second fact" in shown and "the build uses make" not in shown
    assert "1. likes short answers" in shown
    events = h.events(session.id)
    assert [e.payload["operation"] for e in of_type(events, "memory.updated")] == ["add", "add", "add", "replace"]
    assert all(e.actor.value == "user" for e in of_type(events, "memory.updated"))
    eviction = of_type(events, "memory.eviction")[0]
    assert eviction.payload["trigger"] == "manual" and eviction.payload["entries_evicted"] == 1
    assert eviction.parent_event_id == of_type(events, "memory.updated")[-1].id
    with pytest.raises(MemoryEditError, match="pick a number from 1 to 1"):  # SlashCommands prints it in red
        memory_command(chat, "remove 9")
