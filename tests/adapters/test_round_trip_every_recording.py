"""Every recorded answer, read into canonical messages and written back to the same API, keeps
every item, field and order that API accepts back as an assistant turn.

One case per answer: the non-error bodies and streams of tests/data/shared (the project's recorded
traffic), of tests/data/heldout (real answers the adapters were not written against, see its
PROVENANCE.md) and of tests/data/bedrock (Converse answers and ConverseStream event streams),
served through ModelClient over MockTransport and compared as in round_trip.py.
A known loss is a strict xfail naming what is lost, so fixing it flips its case.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from adapters.round_trip import APIS, model_of, sent_back
from bedrock_recordings import DATA as BEDROCK_DATA
from bedrock_recordings import index as bedrock_index
from fixture_files import wire_dir

HELDOUT = Path(__file__).resolve().parents[1] / "data" / "heldout"
STREAMED = (".sse", ".ndjson", ".eventstream")

KNOWN_LOSSES: dict[str, str] = {
    "shared/openai_responses/stream__hosted_shell_call_output.sse": (
        "not a loss: a hand-authored stream whose terminal response text differs from its own streamed "
        "deltas (see its .source.txt); the adapter keeps what was streamed"
    ),
}


def answers(source: str, folder: Path, api: str) -> list[Any]:
    paths = sorted(p for p in folder.glob("*") if p.name.startswith(("response__", "stream__")))
    cases = []
    for path in paths:
        if path.name.endswith(".source.txt") or "error" in path.name:
            continue  # an error answer has no assistant turn to send back
        key = f"{source}/{api}/{path.name}"
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN_LOSSES[key])] if key in KNOWN_LOSSES else []
        cases.append(pytest.param(api, path, id=key, marks=marks))
    return cases


def bedrock_answers() -> list[Any]:
    """Every recorded Converse answer and ConverseStream stream (the error bodies have no turn)."""
    files = [entry["file"] for name, entry in bedrock_index().items() if not name.startswith("error_")]
    return [pytest.param("bedrock", BEDROCK_DATA / file, id=f"bedrock/{file}") for file in sorted(files)]


CASES = [case for api in APIS if api != "bedrock" for case in [*answers("shared", wire_dir(api), api),
                                                                *answers("heldout", HELDOUT / api, api)]]
CASES += bedrock_answers()


@pytest.mark.parametrize(("api_name", "path"), CASES)
def test_a_recorded_answer_written_back_to_its_api_keeps_what_the_api_accepts(api_name: str, path: Path) -> None:
    api = APIS[api_name]
    data = path.read_bytes()
    streamed = path.suffix in STREAMED
    answer = api.recorded_answer(data, streamed)
    _, body = sent_back(api, data, streamed, model_of(api, answer, path))
    assert api.projection(api.sent_turn(body)) == api.projection(api.recorded_turn(answer))


NO_HELD_OUT = ("ollama", "bedrock")
"""No public recording of Ollama's native /api/chat was found with its source; the shared docs examples stand in.
Bedrock's recordings are all in tests/data/bedrock (bedrock_answers)."""


def test_every_api_has_held_out_answers() -> None:
    assert all(len(answers("heldout", HELDOUT / api, api)) >= 5 for api in APIS if api not in NO_HELD_OUT)
