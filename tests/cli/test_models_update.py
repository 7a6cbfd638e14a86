"""`metis models update openrouter [--from FILE]` through the installed `metis`, and its offline error."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from metis_core.cli import models as models_command
from metis_core.models.openrouter_catalog import ModelListError

from .cli_harness import cli_env, metis

LISTING = Path(__file__).resolve().parent.parent / "data" / "openrouter" / "models_list.json"


def test_update_from_a_saved_list_shows_in_models_and_a_bad_file_changes_nothing(home: Path, workspace: Path) -> None:
    env = cli_env(home, None)
    done = metis(["models", "update", "openrouter", "--from", str(LISTING)], env, workspace)
    assert done.returncode == 0, done.stderr
    assert "3 openrouter models (2 priced)" in done.stdout
    listed = json.loads(metis(["models", "--provider", "openrouter", "--json"], env, workspace).stdout)
    llama = next(row for row in listed if row["id"] == "openrouter:meta-llama/llama-3.1-8b-instruct")
    assert llama["price_per_million"]["input"] == "0.02" and llama["capabilities"]["max_context_tokens"] == 131072
    before = (home / "openrouter-models.json").read_bytes()
    bad = workspace / "bad.json"
    bad.write_text("<html>rate limited</html>")
    refused = metis(["models", "update", "openrouter", "--from", str(bad)], env, workspace)
    assert refused.returncode != 0 and "not JSON" in refused.stderr
    assert (home / "openrouter-models.json").read_bytes() == before


def test_fetch_without_network_says_to_pass_a_saved_file(monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(url: str, **_: object) -> httpx.Response:
        raise httpx.ConnectError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(httpx, "get", offline)
    with pytest.raises(ModelListError, match="--from FILE"):
        models_command._fetch_listing()
