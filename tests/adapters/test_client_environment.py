"""The model client reads a provider's environment state itself (`ModelClient._environment_state`, a
named fast path) from the dict and keys `MetisConfig.provider_environment_watch` names: it must be the
config's own `provider_environment_state` at every step, whatever changes in the environment, for an
injected mapping (no watch: the config answers) and after the client's config is replaced."""

from __future__ import annotations

from pathlib import Path

import pytest

from metis_core.adapters.client import ModelClient
from metis_core.config import load_config

NAMES = ("METIS_ANTHROPIC_BASE_URL", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")


def test_the_clients_read_is_the_configs_state_as_the_environment_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)
    config = load_config(tmp_path)
    client = ModelClient(config=config, prices=None)
    seen = []

    def look() -> None:
        for provider in ("anthropic", "openai", "ollama"):
            assert client._environment_state(provider) == config.provider_environment_state(provider), provider
        seen.append(client._environment_state("anthropic"))

    look()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-caf\u00e9-not-real")
    look()
    monkeypatch.setenv("METIS_ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    look()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-other")
    look()
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    look()
    assert len(set(seen)) == 5  # every change seen, none invented
    watch = config.provider_environment_watch("anthropic")
    assert watch is not None and len(watch[1]) == len(config.provider_environment("anthropic"))


def test_an_injected_mapping_has_no_watch_and_the_config_answers(tmp_path: Path) -> None:
    environ = {"ANTHROPIC_API_KEY": "sk-injected"}
    config = load_config(tmp_path, environ=environ)
    client = ModelClient(config=config, prices=None)
    assert config.provider_environment_watch("anthropic") is None
    assert client._environment_state("anthropic") == config.provider_environment_state("anthropic")
    environ["ANTHROPIC_API_KEY"] = "sk-changed"
    assert client._environment_state("anthropic")[-1] == "sk-changed"


def test_a_replaced_config_is_read_not_the_watch_of_the_old_one(tmp_path: Path) -> None:
    first = load_config(tmp_path)
    client = ModelClient(config=first, prices=None)
    assert client._environment_state("anthropic") == first.provider_environment_state("anthropic")
    second = load_config(tmp_path, environ={"ANTHROPIC_API_KEY": "sk-second"})
    client._config = second
    assert client._environment_state("anthropic") == second.provider_environment_state("anthropic")
    assert client._environment_state("anthropic")[-1] == "sk-second"
