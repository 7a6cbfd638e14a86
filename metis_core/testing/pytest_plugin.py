"""The pytest plugin (entry point `pytest11`): a `metis_cassette` fixture and `--metis-record`.

By default every test that uses the fixture replays its cassette, offline and deterministically;
`pytest --metis-record` records them again against whatever the client talks to. Cassettes live
in `cassettes/<test module>/<test name>.jsonl` next to the test file (the ini option
`metis_cassette_dir` or `@pytest.mark.metis_cassette("name")` change that). Imports of the
library happen when the fixture is used, so loading the plugin costs nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from metis_core.adapters.client import ModelClient
    from metis_core.cassettes.cassette import Cassette, CassetteMode


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("metis", "metis-core cassettes")
    group.addoption("--metis-record", action="store_true", default=False,
                    help="Record metis cassettes again (real calls) instead of replaying them.")
    parser.addini("metis_cassette_dir", "Directory of metis cassettes, relative to the rootdir "
                  "(default: a `cassettes` folder next to each test file).", default="")
    parser.addini("metis_scrub_fields", "Extra JSON field names to blank in cassettes.", type="linelist", default=[])


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "metis_cassette(name): the cassette file name (without .jsonl) for this test")


class CassetteFixture:
    """What the `metis_cassette` fixture gives a test: the cassette and clients bound to it."""

    def __init__(self, path: Path, mode: CassetteMode, scrub_fields: Sequence[str]) -> None:
        from metis_core.cassettes.cassette import Cassette
        from metis_core.cassettes.scrub import DEFAULT_FIELDS, Scrubber

        self.path = path
        self.mode: CassetteMode = mode
        self.cassette: Cassette = Cassette(path, mode, scrubber=Scrubber(fields=(*DEFAULT_FIELDS, *scrub_fields)))
        self._clients: list[ModelClient] = []

    @property
    def recording(self) -> bool:
        return self.mode == "record"

    def client(self, **kwargs: Any) -> ModelClient:
        """A ModelClient that records to or replays from this test's cassette (kwargs as for ModelClient)."""
        from metis_core.adapters.client import ModelClient

        client = ModelClient(cassette=self.cassette, **kwargs)
        self._clients.append(client)
        return client

    def close(self) -> None:
        for client in self._clients:
            client.close()


def _cassette_path(request: pytest.FixtureRequest) -> Path:
    marker = request.node.get_closest_marker("metis_cassette")
    name = str(marker.args[0]) if marker is not None and marker.args else request.node.name
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-")
    configured = str(request.config.getini("metis_cassette_dir") or "")
    module = Path(str(request.node.path))
    base = Path(str(request.config.rootpath)) / configured if configured else module.parent / "cassettes"
    return base / module.stem / f"{name}.jsonl"


@pytest.fixture
def metis_cassette(request: pytest.FixtureRequest) -> Iterator[CassetteFixture]:
    """This test's cassette: replayed by default, recorded again under `pytest --metis-record`."""
    mode: CassetteMode = "record" if request.config.getoption("--metis-record") else "replay"
    fixture = CassetteFixture(_cassette_path(request), mode, list(request.config.getini("metis_scrub_fields")))
    try:
        yield fixture
    finally:
        fixture.close()
