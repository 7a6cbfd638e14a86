"""The `memory` tool: the only way the agent changes MEMORY.md / USER.md, each change on the record.

Every change emits memory.updated (before/after hashes and sizes; private, no text), parented to
the llm.call_completed that asked for it; entries evicted by the size cap add memory.eviction
under it. The change is visible to the model from the next session on: the system prefix is
stable within a session (so provider prompt caches keep working).
"""

from __future__ import annotations

from typing import Any

from metis_core.agent.memory.files import FILES, MemoryChange, MemoryFiles, MemoryName
from metis_core.agent.recording import TurnRecorder
from metis_core.agent.tools.base import ToolContext, ToolOutcome
from metis_core.errors import MemoryEditError
from metis_core.events.envelope import Actor, Event
from metis_core.messages import SideEffects, ToolDefinition

DESCRIPTION = (
    "Keep durable notes across sessions. file MEMORY.md: facts about this work (conventions, decisions, "
    "where things are); USER.md: facts about the user (preferences, role). action add appends one entry "
    "(text); replace swaps the one entry containing old_text for text (empty text deletes it); "
    "consolidate rewrites the whole file as entries (merge duplicates, drop stale facts). Oldest entries "
    "are evicted past the size cap. Notes take effect from the next session."
)


def record_change(recorder: TurnRecorder, change: MemoryChange, parent: Event | None, *, actor: Actor) -> Event | None:
    """memory.updated, then memory.eviction when the cap evicted entries."""
    updated = recorder.emit("memory.updated", {
        "file": change.name, "operation": change.operation, "before_hash": change.before_hash,
        "after_hash": change.after_hash, "before_size_bytes": change.before_size,
        "after_size_bytes": change.after_size,
    }, parent, actor=actor)
    if change.evicted:
        recorder.emit("memory.eviction", {
            "file": change.name, "trigger": "size_cap_exceeded", "entries_evicted": change.evicted,
            "size_before_bytes": change.size_before_eviction, "size_after_bytes": change.after_size,
        }, updated, actor=Actor.SYSTEM)
    return updated


class MemoryTool:
    definition = ToolDefinition(
        name="memory",
        description=DESCRIPTION,
        input_schema={
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["add", "replace", "consolidate"]},
                "file": {"type": "string", "enum": list(FILES)},
                "text": {"type": "string", "maxLength": 4000},
                "old_text": {"type": "string", "minLength": 1},
                "entries": {"type": "array", "items": {"type": "string"}, "maxItems": 200},
            },
            "required": ["action", "file"],
            "additionalProperties": False,
        },
        # The agent's own notes, outside the workspace's code: no confirmation, but every change
        # is recorded and shown with /memory.
        side_effects=SideEffects.NONE,
        requires_workspace=False,
    )

    def __init__(self, home: Any, max_bytes: int, history_keep: int = 50) -> None:
        self.home = home
        self.max_bytes = max_bytes
        self.history_keep = history_keep

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        files = MemoryFiles(context.workspace, self.home, self.max_bytes, self.history_keep)
        name: MemoryName = tool_input["file"]
        action = tool_input["action"]
        try:
            if action == "add":
                change = files.add(name, tool_input.get("text", ""))
            elif action == "replace":
                if "old_text" not in tool_input:
                    return ToolOutcome.failure("validation_error", "replace needs old_text (and text)")
                change = files.replace(name, tool_input["old_text"], tool_input.get("text", ""))
            else:
                if "entries" not in tool_input:
                    return ToolOutcome.failure("validation_error", "consolidate needs entries")
                change = files.consolidate(name, tool_input["entries"])
        except MemoryEditError as error:
            return ToolOutcome.failure("validation_error", str(error))
        if context.call is not None:
            record_change(context.call.recorder, change, context.call.caused_by, actor=Actor.AGENT)
        note = f"; {change.evicted} oldest entries evicted to stay under {self.max_bytes} bytes" if change.evicted \
            else ""
        return ToolOutcome(f"{name} updated ({action}): {change.after_size} bytes{note}")
