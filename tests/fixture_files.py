"""Helpers to read recorded provider traffic from the shared fixtures folder."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from conftest import fixtures_root


def wire_dir(provider: str) -> Path:
    return fixtures_root() / "wire" / provider


def wire_files(provider: str, kind: str | None = None) -> list[Path]:
    """Every sample (not its .source.txt) in a provider folder, optionally of one kind."""
    paths = sorted(
        p for p in wire_dir(provider).iterdir() if p.is_file() and not p.name.endswith(".source.txt")
    )
    if kind is not None:
        paths = [p for p in paths if p.name.startswith(kind + "__")]
    return paths


HOSTED_MARK = "__hosted_"
"""Recordings of provider-hosted tools, compaction and citations (tests/adapters/hosted/ covers them)."""


def plain_wire_files(provider: str, kind: str | None = None) -> list[Path]:
    """`wire_files` without the hosted-tool recordings, for tests of the classic block set."""
    return [p for p in wire_files(provider, kind) if HOSTED_MARK not in p.name and "partial_args" not in p.name]


def read_bytes(provider: str, name: str) -> bytes:
    return (wire_dir(provider) / name).read_bytes()


def read_json(provider: str, name: str) -> Any:
    text = (wire_dir(provider) / name).read_text(encoding="utf-8")
    if name.endswith(".jsonc"):
        text = re.sub(r"^\s*//.*$", "", text, flags=re.MULTILINE)
    return json.loads(text)


def source_note(path: Path) -> str:
    """The provenance line of a sample (tier, origin, what it shows)."""
    return Path(str(path) + ".source.txt").read_text(encoding="utf-8")


def fidelity_tier(provider: str, name: str) -> str:
    """The tier INDEX.md gives a sample: LIVE-VERBATIM, LIVE-RESERIALIZED, DOCS-EXAMPLE, ..."""
    index = (fixtures_root() / "INDEX.md").read_text(encoding="utf-8")
    match = re.search(rf"`wire/{re.escape(provider)}/{re.escape(name)}`[^\n]*?\*\*([^*]+)\*\*", index)
    return match.group(1) if match else "UNKNOWN"


def is_live_verbatim(provider: str, name: str) -> bool:
    return fidelity_tier(provider, name) == "LIVE-VERBATIM"
