"""Versioned snapshots of MEMORY.md and USER.md, so a bad change (a consolidation that dropped
facts, an eviction) can be seen and undone: `metis memory history | show | restore`.

Each file keeps its versions beside it, in `.memory-history/<name>/` (as private as the file):
one Markdown copy per distinct content, named by time and hash, the newest `memory.history_keep`
kept. Versions are taken where every change is written (MemoryFiles, the change that emits
memory.updated), the file before its first change included: a subscriber reading the file later
could miss a state that the next change already replaced.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from metis_core.agent.memory.files import MemoryDocument
from metis_core.errors import MemoryEditError
from metis_core.hashing import sha256_hex

log = logging.getLogger(__name__)

HISTORY_DIR = ".memory-history"
DEFAULT_KEEP = 50


@dataclass(frozen=True, slots=True)
class Snapshot:
    version: int
    """1 for the oldest kept, counting up."""
    taken_at: datetime
    sha256: str
    size_bytes: int
    path: Path

    @property
    def entries(self) -> int:
        return len(MemoryDocument.parse(self.path.read_text(encoding="utf-8")).entries)


def history_dir(path: Path) -> Path:
    return path.parent / HISTORY_DIR / path.name


def versions(path: Path) -> list[Snapshot]:
    """The kept versions of the memory file at `path`, oldest first."""
    folder = history_dir(path)
    if not folder.is_dir():
        return []
    found = []
    for number, copy in enumerate(sorted(folder.glob("*.md")), 1):
        stamp, _, digest = copy.stem.partition("-")
        taken = datetime.strptime(stamp, "%Y%m%dT%H%M%S%fZ").replace(tzinfo=UTC)
        found.append(Snapshot(number, taken, digest, copy.stat().st_size, copy))
    return found


def snapshot(path: Path, keep: int = DEFAULT_KEEP) -> Snapshot | None:
    """Copy the file as it is now, unless the newest version already holds this content."""
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    digest = sha256_hex(text)
    kept = versions(path)
    if kept and kept[-1].path.read_text(encoding="utf-8") == text:
        return None
    folder = history_dir(path)
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    copy = folder / f"{now.strftime('%Y%m%dT%H%M%S%fZ')}-{digest[:16]}.md"
    temporary = copy.with_name(f".{copy.name}.metis-tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, copy)
    for old in versions(path)[:-keep]:
        old.path.unlink(missing_ok=True)
    return next(s for s in versions(path) if s.path == copy)


def version_of(path: Path, version: int) -> Snapshot:
    kept = versions(path)
    if not kept:
        raise MemoryEditError(f"{path.name} has no saved versions yet (they start with its first change)")
    if not 1 <= version <= len(kept):
        raise MemoryEditError(f"{path.name} has versions 1 to {len(kept)}; `metis memory history` lists them")
    return kept[version - 1]


def restore(path: Path, version: int, keep: int = DEFAULT_KEEP) -> tuple[str, str]:
    """Write version `version` back as the file (atomically); the restored state becomes the newest
    version. Returns (text before, text after)."""
    chosen = version_of(path, version)
    before = path.read_text(encoding="utf-8") if path.is_file() else ""
    snapshot(path, keep)  # what is replaced stays restorable
    after = chosen.path.read_text(encoding="utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.metis-tmp")
    temporary.write_text(after, encoding="utf-8")
    os.replace(temporary, path)
    snapshot(path, keep)
    return before, after


def keep_version(path: Path, keep: int = DEFAULT_KEEP, *, first_only: bool = False) -> None:
    """What MemoryFiles calls around each write: a version of the file as it is now (before the
    write only when it has none yet). A failure to save one is logged; the change itself goes on."""
    if first_only and versions(path):
        return
    try:
        snapshot(path, keep)
    except OSError as error:
        log.warning("could not save a version of %s: %s", path, error.strerror or error)
