"""The sample app's own tests: they run offline from cassettes (pytest --metis-record records them)."""

import os

from weather import ask


def test_ask_answers_from_the_model(metis_cassette):
    client = metis_cassette.client(
        base_urls={"anthropic": os.environ.get("SAMPLE_ANTHROPIC_URL", "http://127.0.0.1:9")},
        api_keys={"anthropic": os.environ["SAMPLE_ANTHROPIC_KEY"]} if metis_cassette.recording else None,
        prices=None,
    )
    assert ask(client) == "Hello there!"
