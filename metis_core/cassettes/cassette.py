"""A cassette: the calls recorded in one file, opened either to record or to replay.

Recording truncates the file, writes the header, then appends one line per completed call (so a
crashed run keeps what it finished). Replaying loads every entry, indexes them by key, and serves
entries of one key in recording order (the last one again once used up, so a repeated identical
call still replays). A key with no entry raises CassetteMissError naming the closest recording.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from pathlib import Path
from typing import Any, Literal

from metis_core.cassettes.canonical import closeness, request_differences, request_key
from metis_core.cassettes.format import CassetteEntry, entry_line, header_line, read_cassette
from metis_core.cassettes.scrub import Scrubber
from metis_core.errors import CassetteMissError

CassetteMode = Literal["record", "replay"]


class Cassette:
    """One cassette file in `record` or `replay` mode (see the module docstring)."""

    def __init__(self, path: str | Path, mode: CassetteMode, *, scrubber: Scrubber | None = None,
                 note: str | None = None) -> None:
        if mode not in ("record", "replay"):
            raise ValueError(f"cassette mode must be 'record' or 'replay', not {mode!r}")
        self.path = Path(path)
        self.mode: CassetteMode = mode
        self.scrubber = scrubber or Scrubber()
        self._lock = threading.Lock()
        self.entries: list[CassetteEntry] = []
        self._served: dict[str, int] = defaultdict(int)
        self._by_key: dict[str, list[CassetteEntry]] = defaultdict(list)
        if mode == "record":
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_bytes(header_line(note))
        else:
            self.entries = read_cassette(self.path)
            for entry in self.entries:
                self._by_key[entry.key].append(entry)

    def __repr__(self) -> str:
        return f"Cassette({str(self.path)!r}, mode={self.mode!r}, calls={len(self.entries)})"

    @property
    def recording(self) -> bool:
        return self.mode == "record"

    def add_known_secrets(self, secrets: list[str]) -> None:
        """Literal values (the client's keys) that must never be written, wherever they appear."""
        merged = set(self.scrubber.known) | {s for s in secrets if s and len(s) >= 4}
        self.scrubber.known = sorted(merged, key=len, reverse=True)

    def append(self, entry: CassetteEntry) -> None:
        """Write one finished call (already scrubbed by the recording transport)."""
        with self._lock:
            self.entries.append(entry)
            with self.path.open("ab") as out:
                out.write(entry_line(entry))

    def take(self, canonical: dict[str, Any]) -> CassetteEntry:
        """The next recorded entry for this canonical request, or CassetteMissError."""
        key = request_key(canonical)
        with self._lock:
            found = self._by_key.get(key)
            if found:
                index = self._served[key]
                self._served[key] = index + 1
                return found[min(index, len(found) - 1)]
        raise self.miss(canonical)

    def miss(self, canonical: dict[str, Any]) -> CassetteMissError:
        model = str(canonical.get("model"))
        if not self.entries:
            return CassetteMissError(str(self.path), model, [], None)
        wanted = self.scrubber.json(canonical)  # recordings hold the scrubbed form: compare like with like
        best = max(range(len(self.entries)), key=lambda i: closeness(self.entries[i].canonical, wanted))
        return CassetteMissError(str(self.path), model, request_differences(self.entries[best].canonical, wanted), best)
