"""The two file operations the file tools trust: a bounded read and a confined atomic write.

`read_head` opens without following links or blocking, refuses anything but a regular file and
reads at most the bytes it returns. `write_atomically` writes a temporary created exclusively
(O_EXCL | O_NOFOLLOW, random name) inside the already-opened target directory, re-checks that the
target still resolves to the same place inside the workspace, then renames over it. Neither does
confinement of the path the model gave: callers pass a path `confine` has resolved.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from metis_core.agent.tools.workspace import confine
from metis_core.errors import PathEscapeError, ToolError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


class NotARegularFileError(ToolError):
    """The path names a device, FIFO, socket or directory, which the file tools never open."""


@dataclass(slots=True)
class FileHead:
    data: bytes
    total_bytes: int


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_head(path: Path, limit: int) -> FileHead:
    """At most `limit` bytes of a regular file and its full size; devices and FIFOs are refused."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFileError(f"{path.name!r} is {_kind(info.st_mode)}; only regular files can be read")
        chunks: list[bytes] = []
        remaining = limit
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        return FileHead(data, max(info.st_size, len(data)))
    finally:
        os.close(fd)


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def write_atomically(workspace: Path, relative: str, target: Path, data: bytes) -> None:
    """Replace `target` (already confined from `relative`) with `data`, or raise without writing outside.

    The temporary is created in the opened directory itself, so a symlink planted at any temporary
    name, or a directory swapped for a link after `confine`, can never redirect the write.
    """
    directory = target.parent
    dir_fd = os.open(directory, os.O_RDONLY | _DIRECTORY | _NOFOLLOW)
    try:
        if not _same_file(os.fstat(dir_fd), os.stat(directory)) or directory.resolve() != directory:
            raise PathEscapeError(f"{relative!r}: its directory changed while writing; nothing was written")
        mode = 0o666
        with contextlib.suppress(FileNotFoundError):
            existing = os.stat(target.name, dir_fd=dir_fd, follow_symlinks=False)
            if not stat.S_ISREG(existing.st_mode):
                raise NotARegularFileError(f"{relative!r} is {_kind(existing.st_mode)}; it cannot be overwritten")
            mode = stat.S_IMODE(existing.st_mode)
        temp = f".{target.name[:200]}.{secrets.token_hex(8)}.metis-tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, mode, dir_fd=dir_fd)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            if confine(workspace, relative) != target:  # re-check at the moment of the write
                raise PathEscapeError(f"{relative!r} changed where it points while writing; nothing was written")
            os.rename(temp, target.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
            raise
    finally:
        os.close(dir_fd)
