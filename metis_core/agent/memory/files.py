"""MEMORY.md and USER.md: where they live, their entries, and the three ways they change.

A memory file is Markdown: an optional header, then entries, each a line starting with "- "
(continuation lines indented). Entries are kept oldest first. `add` appends, `replace` swaps the
one entry containing a given text, `consolidate` rewrites the whole list. Over the size cap the
oldest entries are evicted. Writes are atomic (temp file + rename), and each leaves a version in
`.memory-history/` (snapshots.py). It emits no events (tool.py and the chat command do) and never
logs the text: memory is private.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from metis_core.errors import MemoryEditError
from metis_core.hashing import sha256_hex

MemoryName = Literal["MEMORY.md", "USER.md"]
FILES: tuple[MemoryName, ...] = ("MEMORY.md", "USER.md")
WORKSPACE_DIR = ".metis"
HEADERS: dict[str, str] = {
    "MEMORY.md": "# MEMORY.md — what the agent learned about this work\n",
    "USER.md": "# USER.md — what the agent learned about the user\n",
}


def memory_path(name: MemoryName, workspace: Path, home: Path) -> Path:
    """The workspace's `.metis/<name>` if it exists, else METIS_HOME's if it exists, else the default.

    The default is the workspace for MEMORY.md (it is about the work) and METIS_HOME for USER.md
    (it is about the user, across workspaces).
    """
    local, shared = workspace / WORKSPACE_DIR / name, home / name
    if local.is_file():
        return local
    if shared.is_file():
        return shared
    return local if name == "MEMORY.md" else shared


@dataclass
class MemoryDocument:
    header: str
    entries: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> MemoryDocument:
        header_lines: list[str] = []
        entries: list[list[str]] = []
        for line in text.splitlines():
            if line.startswith("- "):
                entries.append([line[2:]])
            elif entries:
                if line.strip():
                    entries[-1].append(line.strip())
            else:
                header_lines.append(line)
        header = "\n".join(header_lines).strip()
        return cls(header + "\n" if header else "", ["\n".join(e).strip() for e in entries if "".join(e).strip()])

    def render(self) -> str:
        body = "".join(f"- {entry.replace(chr(10), chr(10) + '  ')}\n" for entry in self.entries)
        return (self.header + ("\n" if self.header and body else "") + body) if (self.header or body) else ""


@dataclass(frozen=True, slots=True)
class MemoryChange:
    name: MemoryName
    operation: str
    before_hash: str
    after_hash: str
    before_size: int
    after_size: int
    evicted: int = 0
    size_before_eviction: int = 0


def _clean(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines()]
    return "\n".join(line.removeprefix("- ") if i == 0 else line for i, line in enumerate(lines) if line)


class MemoryFiles:
    """The memory files of one workspace (and METIS_HOME), with a per-file size cap in bytes."""

    def __init__(self, workspace: Path, home: Path, max_bytes: int, history_keep: int = 50) -> None:
        self.workspace = workspace
        self.home = home
        self.max_bytes = max_bytes
        self.history_keep = history_keep

    def path(self, name: MemoryName) -> Path:
        return memory_path(name, self.workspace, self.home)

    def read(self, name: MemoryName) -> str:
        path = self.path(name)
        return path.read_text(encoding="utf-8") if path.is_file() else ""

    def document(self, name: MemoryName) -> MemoryDocument:
        return MemoryDocument.parse(self.read(name))

    def add(self, name: MemoryName, text: str) -> MemoryChange:
        entry = _clean(text)
        if not entry:
            raise MemoryEditError("add needs a non-empty text")
        return self._apply(name, "add", lambda doc: doc.entries.append(entry))

    def replace(self, name: MemoryName, old_text: str, text: str) -> MemoryChange:
        """Replace the one entry containing old_text with text (an empty text removes the entry)."""
        def change(doc: MemoryDocument) -> None:
            hits = [i for i, entry in enumerate(doc.entries) if old_text and old_text in entry]
            if len(hits) != 1:
                found = "no entry" if not hits else f"{len(hits)} entries"
                raise MemoryEditError(f"old_text must match exactly one entry of {name}; {found} contain it")
            new = _clean(text)
            if new:
                doc.entries[hits[0]] = new
            else:
                del doc.entries[hits[0]]

        return self._apply(name, "replace", change)

    def consolidate(self, name: MemoryName, entries: list[str]) -> MemoryChange:
        """Rewrite the whole list (merged duplicates, dropped stale facts), oldest first."""
        cleaned = [e for e in (_clean(entry) for entry in entries) if e]
        return self._apply(name, "consolidate", lambda doc: doc.entries.__setitem__(slice(None), cleaned))

    def remove(self, name: MemoryName, index: int) -> MemoryChange:
        """Remove entry number `index` (1-based, as /memory shows them)."""
        def change(doc: MemoryDocument) -> None:
            if not 1 <= index <= len(doc.entries):
                raise MemoryEditError(f"{name} has {len(doc.entries)} entries; pick a number from 1 to "
                                      f"{len(doc.entries)}")
            del doc.entries[index - 1]

        return self._apply(name, "replace", change)

    def _apply(self, name: MemoryName, operation: str, change: Callable[[MemoryDocument], None]) -> MemoryChange:
        before = self.read(name)
        document = MemoryDocument.parse(before)
        if not document.header:
            document.header = HEADERS[name]
        change(document)
        for entry in document.entries:
            if len(f"- {entry}\n".encode()) + len(document.header.encode()) > self.max_bytes:
                raise MemoryEditError(f"one entry is larger than the {self.max_bytes}-byte cap of {name}; "
                                      "shorten it")
        after = document.render()
        size_before_eviction = len(after.encode())
        evicted = 0
        while len(after.encode()) > self.max_bytes and document.entries:
            document.entries.pop(0)  # oldest first
            evicted += 1
            after = document.render()
        self._write(name, after)
        return MemoryChange(name, operation, sha256_hex(before), sha256_hex(after), len(before.encode()),
                            len(after.encode()), evicted, size_before_eviction)

    def _write(self, name: MemoryName, text: str) -> None:
        from metis_core.agent.memory.snapshots import keep_version

        path = self.path(name)
        keep_version(path, self.history_keep, first_only=True)  # the file before its first kept change
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.metis-tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        keep_version(path, self.history_keep)

    def prefix_text(self) -> str:
        """Both files as one block for the system prefix; empty when there is no memory."""
        parts = []
        for name in FILES:
            document = self.document(name)
            if document.entries:
                parts.append(f"<{name}>\n" + "".join(f"- {e}\n" for e in document.entries) + f"</{name}>")
        if not parts:
            return ""
        return ("Memory from earlier sessions (change it only with the memory tool):\n" + "\n".join(parts))
