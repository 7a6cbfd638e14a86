"""Writing export documents to a file path or an open stream, as one JSON document or JSON Lines.

A path is written to a temporary sibling and renamed into place, so a failed export never leaves a
half-written file. Streams are written as they are (text or binary). No format knowledge here.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any, cast

import orjson

from metis_core.errors import ExportError

ExportTarget = str | Path | IO[str] | IO[bytes]
"""Where an export goes: a file path, or an open text or binary stream."""


def json_bytes(document: Any) -> bytes:
    """Compact JSON, UTF-8, keys in insertion order (what the exporters built is what is written)."""
    return orjson.dumps(document)


def jsonl_bytes(documents: Iterable[Any]) -> bytes:
    return b"".join(orjson.dumps(document) + b"\n" for document in documents)


def write_output(data: bytes, target: ExportTarget) -> str | None:
    """Write `data` to `target`; returns the path written, or None for a stream."""
    if isinstance(target, str | Path):
        return _write_file(Path(target), data)
    if isinstance(target, io.RawIOBase | io.BufferedIOBase) or "b" in getattr(target, "mode", ""):
        cast(IO[bytes], target).write(data)
    else:
        cast(IO[str], target).write(data.decode("utf-8"))
    return None


def _write_file(path: Path, data: bytes) -> str:
    path = path.expanduser()
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or Path("."))
    except OSError as error:
        raise ExportError(
            f"cannot write the export to {path}: {error.strerror}; check the folder exists and is writable"
        ) from error
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(temporary, path)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise ExportError(
            f"cannot write the export to {path}: {error.strerror}; check free space and permissions"
        ) from error
    return str(path)
