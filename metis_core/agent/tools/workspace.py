"""Confinement: every path a tool touches must resolve inside the session's workspace.

Resolution follows symlinks (`Path.resolve`), so `../` tricks and links pointing outside are both
refused. A path that does not exist yet (a new file) is checked through its nearest existing parent.
A path with a NUL byte is refused by name (`InvalidToolPathError`) rather than by the OS.
"""

from __future__ import annotations

from pathlib import Path

from metis_core.errors import InvalidToolPathError, PathEscapeError


def confine(workspace: Path, relative: str) -> Path:
    """The absolute, symlink-resolved path for `relative`, or PathEscapeError if it leaves the workspace."""
    if "\x00" in relative:
        raise InvalidToolPathError(f"{relative!r} contains a NUL byte; no file can have that name")
    root = workspace.resolve()
    candidate = Path(relative)
    target = (candidate if candidate.is_absolute() else root / candidate).resolve()
    if target != root and not target.is_relative_to(root):
        raise PathEscapeError(f"{relative!r} resolves outside the workspace {root}; use a path inside it")
    return target


def display(workspace: Path, path: Path) -> str:
    """A workspace-relative path for messages and events."""
    root = workspace.resolve()
    return "." if path == root else str(path.relative_to(root))
