"""`/memory` in chat: show MEMORY.md and USER.md with numbered entries, add to them, remove one.

`/memory`, `/memory add [user] TEXT`, `/memory remove [user] N`. Changes go through the same
MemoryFiles operations as the memory tool and emit memory.updated (actor user); a removal also
emits memory.eviction with trigger manual. The files are private: shown only on this terminal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metis_core.agent.memory.files import FILES, MemoryFiles, MemoryName
from metis_core.agent.memory.tool import record_change
from metis_core.agent.recording import TurnRecorder
from metis_core.events.envelope import Actor

if TYPE_CHECKING:
    from metis_core.cli.chat import ChatLoop

USAGE = "/memory · /memory add [user] TEXT · /memory remove [user] N"


def memory_command(chat: ChatLoop, argument: str) -> bool:
    runtime, session = chat.runtime, chat.session
    files = MemoryFiles(session.workspace, runtime.home, runtime.config.memory.max_bytes,
                        runtime.config.memory.history_keep)
    out = chat.terminal.out
    verb, _, rest = argument.partition(" ")
    if not verb:
        for shown in FILES:
            entries = files.document(shown).entries
            out.print(f"{shown} ({files.path(shown)}): {len(entries)} entries", markup=False, style="bold")
            for number, entry in enumerate(entries, 1):
                out.print(f"  {number:>3}. {entry}", markup=False)
        out.print("changes take effect in the next session", markup=False, style="dim")
        return True
    name: MemoryName = "MEMORY.md"
    first, _, tail = rest.strip().partition(" ")
    if first.lower() in ("user", "user.md"):
        name, rest = "USER.md", tail
    recorder = TurnRecorder(runtime.bus, session.id)
    if verb == "add" and rest.strip():
        change = files.add(name, rest)
        record_change(recorder, change, None, actor=Actor.USER)
        out.print(f"added to {name}", markup=False)
    elif verb == "remove" and rest.strip().isdigit():
        change = files.remove(name, int(rest.strip()))
        updated = record_change(recorder, change, None, actor=Actor.USER)
        recorder.emit("memory.eviction", {
            "file": name, "trigger": "manual", "entries_evicted": 1, "size_before_bytes": change.before_size,
            "size_after_bytes": change.after_size,
        }, updated, actor=Actor.USER)
        out.print(f"removed entry {rest.strip()} from {name}", markup=False)
    else:
        chat.terminal.fail(f"usage: {USAGE}")
    return True
