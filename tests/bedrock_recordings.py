"""Recorded Bedrock Converse / ConverseStream traffic (tests/data/bedrock, see PROVENANCE.md there).

`recordings()` names each response with the model id its request used (the URL's encoded id
decoded), so a test builds the context the real call had.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote

DATA = Path(__file__).resolve().parent / "data" / "bedrock"


@cache
def index() -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = json.loads((DATA / "recordings.json").read_text())
    return data


def body(name: str) -> bytes:
    return (DATA / index()[name]["file"]).read_bytes()


def model_of(name: str) -> str:
    """`bedrock:<model id>` as the recorded request's path carried it (percent-encoded there)."""
    encoded = index()[name]["request_uri"].split("/model/", 1)[1].rsplit("/", 1)[0]
    return "bedrock:" + unquote(encoded)


def names(kind: str) -> list[str]:
    """Recordings whose name starts with `kind` ("converse", "stream", "error")."""
    return [name for name in index() if name.startswith(kind + "_")]
