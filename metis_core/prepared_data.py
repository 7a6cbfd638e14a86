"""The bundled YAML data (models.yaml, prices.yaml) in a prepared form, so a process skips the YAML parse.

Parsing the two files costs ~20 ms even through libyaml, paid by every process on its first call
(CLI runs, serverless functions, test suites). The first process to read a file stores the parsed
data as JSON named by the file's SHA-256: in `__pycache__` beside the data when the package is
writable (as Python does for bytecode), else in the user's cache directory. Later processes hash
the file (microseconds) and load the JSON with orjson (already imported for the wire), so neither
PyYAML nor pickle is imported. A changed file has another hash, so a stale form is never used;
JSON holds plain data only, so a planted file cannot run code (dates, which YAML yields and JSON
lacks, are stored as {"$date": "YYYY-MM-DD"}). With `load_checked` a form is stored only after the
data passed its full check, so later processes build it without validating again (~6 ms of
pydantic schema building and validation); a form that does not fit falls back to parse and check.
User config files are never cached here: they are validated on every load.
"""

from __future__ import annotations

import datetime
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import orjson

Checked = TypeVar("Checked")
DATA_DIR = Path(__file__).resolve().parent / "data"
"""The bundled data files (a plain path: importlib.resources' readers are not loaded for it)."""
FORMAT = 3
"""Bumped when the prepared form changes shape; part of every cache file's name."""
DATE_TAG = "$date"


def _tagged(value: Any) -> Any:
    """YAML data with every date as {"$date": iso}; anything JSON cannot hold raises TypeError."""
    if isinstance(value, dict):
        return {key: _tagged(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_tagged(item) for item in value]
    if isinstance(value, datetime.datetime):
        raise TypeError("timestamps are not kept in prepared data")
    if isinstance(value, datetime.date):
        return {DATE_TAG: value.isoformat()}
    return value


def _untagged(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) == 1 and DATE_TAG in value:
            return datetime.date.fromisoformat(value[DATE_TAG])
        return {key: _untagged(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_untagged(item) for item in value]
    return value


def cache_dirs(source: Path) -> list[Path]:
    """Where a prepared form of `source` may live, in the order they are tried."""
    user_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "metis-core"
    return [source.parent / "__pycache__", user_cache]


def prepared_name(source: Path, digest: str) -> str:
    return f"{source.name}.{digest[:24]}.v{FORMAT}.json"


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


def load_checked(source: Path, parse: Callable[[str], Any], check: Callable[[Any], Checked],
                 build: Callable[[Any], Checked]) -> Checked:
    """`check(parse(text of source))`, or `build(prepared data)` when a prepared form matches.

    A prepared form is written only after `check` accepted the data, so `build` may trust it (it
    constructs without validating). Should `build` fail on it (a damaged or foreign file that is
    still JSON), the source is parsed and checked as if there were none.
    """
    raw = source.read_bytes()
    name = prepared_name(source, hashlib.sha256(raw).hexdigest())
    places = cache_dirs(source)
    for place in places:
        found = _read(place / name)
        if found is not None:
            try:
                return build(found[0])
            except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError):
                break
    data = parse(raw.decode("utf-8"))
    result = check(data)
    for place in places:
        if _write(place / name, data):
            break
    return result


def _read(path: Path) -> tuple[Any] | None:
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    try:
        return (_untagged(orjson.loads(blob)),)
    except (orjson.JSONDecodeError, ValueError, TypeError):  # damaged or foreign: parse the source instead
        return None


def _write(path: Path, data: Any) -> bool:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temp.write_bytes(orjson.dumps(_tagged(data)))
        os.replace(temp, path)
    except (OSError, TypeError, orjson.JSONEncodeError):
        return False
    return True
