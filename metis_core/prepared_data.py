"""The bundled YAML data (models.yaml, prices.yaml) in a prepared form, so a process skips the YAML parse.

Parsing the two files costs ~20 ms even through libyaml, paid by every process on its first call
(CLI runs, serverless functions, test suites). The first process to read a file stores the parsed
data as a pickle named by the file's SHA-256: in `__pycache__` beside the data when the package
is writable (as Python does for bytecode), else in the user's cache directory. Later processes
hash the file (microseconds) and load the pickle. A changed file has another hash, so a stale
form is never used. The pickle is read with an unpickler that builds plain data only (dicts,
lists, strings, numbers, dates), so a planted file cannot run code. Validation still runs on the
loaded data: only the text parse is skipped. User config files are never cached here.
"""

from __future__ import annotations

import datetime
import hashlib
import io
import os
import pickle
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

FORMAT = 1
"""Bumped when the prepared form changes shape; part of every cache file's name."""
ALLOWED_CLASSES = {("datetime", "date"), ("datetime", "datetime"), ("datetime", "timezone"),
                   ("datetime", "timedelta")}


class _PlainDataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in ALLOWED_CLASSES:
            return getattr(datetime, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not plain data")


def cache_dirs(source: Path) -> list[Path]:
    """Where a prepared form of `source` may live, in the order they are tried."""
    user_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "metis-core"
    return [source.parent / "__pycache__", user_cache]


def prepared_name(source: Path, digest: str) -> str:
    version = f"{sys.version_info.major}{sys.version_info.minor}"
    return f"{source.name}.{digest[:24]}.py{version}.v{FORMAT}.pickle"


def load_prepared(source: Path, parse: Callable[[str], Any]) -> Any:
    """`parse(text of source)`, from the prepared form when one matches the file's hash.

    `parse` runs only when no prepared form matches; its result is then stored for the next
    process (best effort: an unwritable place is skipped, and nothing is ever required of it).
    """
    raw = source.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    name = prepared_name(source, digest)
    places = cache_dirs(source)
    for place in places:
        found = _read(place / name)
        if found is not None:
            return found[0]
    data = parse(raw.decode("utf-8"))
    for place in places:
        if _write(place / name, data):
            break
    return data


def _read(path: Path) -> tuple[Any] | None:
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    try:
        return (_PlainDataUnpickler(io.BytesIO(blob)).load(),)
    except Exception:  # a damaged or foreign file: ignore it and parse the source instead
        return None


def _write(path: Path, data: Any) -> bool:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temp.write_bytes(pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(temp, path)
    except (OSError, pickle.PicklingError):
        return False
    return True
