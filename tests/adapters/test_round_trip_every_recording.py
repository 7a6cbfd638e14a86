"""Every recorded answer, read into canonical messages and written back to the same API, keeps
every item, field and order that API accepts back as an assistant turn.

One case per recording (the non-error bodies and streams of each provider), served through
ModelClient over MockTransport and compared with `accepted_back` in tests/adapters/round_trip.py.
A known loss is a strict xfail naming what is lost, so fixing it flips its case.
"""

from __future__ import annotations

from typing import Any

import pytest
from adapters.round_trip import APIS, model_of, sent_back
from fixture_files import read_bytes, wire_files

KNOWN_LOSSES: dict[str, str] = {
    "openai_responses/stream__hosted_shell_call_output.sse": (
        "not a loss: a hand-authored stream whose terminal response text differs from its own streamed "
        "deltas (see its .source.txt); the adapter keeps what was streamed"
    ),
}


def recordings() -> list[Any]:
    cases = []
    for folder in APIS:
        for path in [*wire_files(folder, "response"), *wire_files(folder, "stream")]:
            if "error" in path.name:
                continue  # an error answer has no assistant turn to send back
            key = f"{folder}/{path.name}"
            marks = [pytest.mark.xfail(strict=True, reason=KNOWN_LOSSES[key])] if key in KNOWN_LOSSES else []
            cases.append(pytest.param(folder, path.name, id=key, marks=marks))
    return cases


@pytest.mark.parametrize(("folder", "name"), recordings())
def test_a_recorded_answer_written_back_to_its_api_keeps_what_the_api_accepts(folder: str, name: str) -> None:
    api = APIS[folder]
    data = read_bytes(folder, name)
    streamed = name.endswith(".sse")
    answer = api.recorded_answer(data, streamed)
    _, body = sent_back(api, data, streamed, model_of(api, answer))
    assert api.projection(api.sent_turn(body)) == api.projection(api.recorded_turn(answer))
