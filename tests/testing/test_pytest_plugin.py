"""The shipped pytest plugin, used the way a user's project uses it: the sample app's tests run in
a separate pytest process (the plugin comes from the `pytest11` entry point), recorded once against
a real local HTTP server, then replayed with no server and no key, then failing by name when the
app's request changes.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from fixture_files import read_bytes

from metis_core.cassettes import find_secrets, read_cassette

pytest_plugins = ["pytester"]
SAMPLE_APP = Path(__file__).resolve().parent.parent / "data" / "sample_app"
KEY = "sk-ant-api03-SampleAppKeyThatMustNeverBeWritten0123456789abcdef"
BODY = read_bytes("anthropic", "stream__text_basic.sse")


class _Anthropic(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, str]]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        _Anthropic.seen.append(dict(self.headers))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def anthropic_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Anthropic)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def app(pytester: pytest.Pytester) -> Path:
    shutil.copy(SAMPLE_APP / "weather.py", pytester.path / "weather.py")
    # Stored under another name so this suite does not collect it; the app's project calls it test_weather.py.
    shutil.copy(SAMPLE_APP / "weather_tests.py", pytester.path / "test_weather.py")
    return pytester.path


def test_the_sample_app_records_then_replays_offline_then_names_a_changed_request(
    pytester: pytest.Pytester, app: Path, anthropic_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAMPLE_ANTHROPIC_URL", anthropic_server)
    monkeypatch.setenv("SAMPLE_ANTHROPIC_KEY", KEY)
    recorded = pytester.runpytest_subprocess("--metis-record", "-p", "no:cacheprovider")
    recorded.assert_outcomes(passed=1)
    assert _Anthropic.seen and _Anthropic.seen[-1]["x-api-key"] == KEY

    cassette = app / "cassettes" / "test_weather" / "test_ask_answers_from_the_model.jsonl"
    [entry] = read_cassette(cassette)
    assert entry.response.stream_body == BODY
    assert find_secrets(cassette.read_text(encoding="utf-8"), [KEY]) == []

    monkeypatch.delenv("SAMPLE_ANTHROPIC_URL")
    monkeypatch.delenv("SAMPLE_ANTHROPIC_KEY")
    calls_before = len(_Anthropic.seen)
    replayed = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    replayed.assert_outcomes(passed=1)
    assert len(_Anthropic.seen) == calls_before, "the replay made no HTTP call"

    (app / "weather.py").write_text((app / "weather.py").read_text().replace("in Paris?", "in Rome?"))
    changed = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines([
        "*CassetteMissError*",
        "*changed message #0: recorded user: \"What's the weather in Paris?\"; "
        "requested user: \"What's the weather in Rome?\"*",
    ])


def test_a_test_without_a_cassette_is_told_to_record_one(pytester: pytest.Pytester, app: Path) -> None:
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*no cassette at*record one first*--metis-record*"])


def test_the_marker_names_the_cassette_file(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_named="""
        import pytest

        @pytest.mark.metis_cassette("shared-name")
        def test_path(metis_cassette):
            assert metis_cassette.path.name == "shared-name.jsonl"
            assert metis_cassette.recording
    """)
    pytester.runpytest_subprocess("--metis-record", "-p", "no:cacheprovider").assert_outcomes(passed=1)
