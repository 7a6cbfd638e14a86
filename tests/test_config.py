"""The configuration home: file, environment precedence, key handling and secrecy."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from metis_core.config import (
    DEFAULT_BASE_URLS,
    MetisConfig,
    load_config,
    metis_home,
    ollama_host_to_url,
)
from metis_core.errors import ConfigError, InsecureKeyFileError, MissingAPIKeyError

SECRET = "sk-ant-TOPSECRET-0123456789"


def write_config(home: Path, text: str, mode: int = 0o600) -> Path:
    path = home / "config.yaml"
    path.write_text(text, encoding="utf-8")
    os.chmod(path, mode)
    return path


def test_metis_home_comes_from_the_environment(_isolated_home: Path) -> None:
    assert metis_home() == _isolated_home
    assert metis_home({}) == Path("~/.metis").expanduser()


def test_without_a_config_file_every_provider_has_its_default_base_url() -> None:
    config = load_config()
    assert config.base_url("anthropic") == "https://api.anthropic.com"
    assert config.base_url("openai") == "https://api.openai.com/v1"
    assert config.base_url("openai_responses") == "https://api.openai.com/v1"
    assert config.base_url("gemini") == "https://generativelanguage.googleapis.com"
    assert config.base_url("ollama") == "http://127.0.0.1:11434"
    assert config.base_url("openrouter") == "https://openrouter.ai/api/v1"
    assert config.default_model is None
    assert set(DEFAULT_BASE_URLS) >= {"anthropic", "openai", "gemini", "ollama", "openrouter"}


def test_openai_compatible_has_no_default_base_url_and_says_how_to_set_one() -> None:
    with pytest.raises(ConfigError, match="METIS_OPENAI_COMPATIBLE_BASE_URL"):
        load_config().base_url("openai_compatible")


def test_full_config_file_is_read(_isolated_home: Path) -> None:
    write_config(
        _isolated_home,
        """
defaults:
  model: sonnet
providers:
  openai_compatible:
    base_url: http://localhost:8000/v1/
    headers: {X-Team: research}
  anthropic:
    api_key_env: WORK_ANTHROPIC_KEY
models:
  "ollama:qwen3:8b": {max_context_tokens: 32768}
prices:
  "openai_compatible:my-model": {input: "0", output: "0"}
aliases:
  fast: haiku
chains:
  robust: [sonnet, gpt-5]
  cheap: "haiku, flash"
""",
    )
    config = load_config()
    assert config.default_model == "sonnet"
    assert config.base_url("openai_compatible") == "http://localhost:8000/v1"
    assert config.extra_headers("openai_compatible") == {"X-Team": "research"}
    assert config.models["ollama:qwen3:8b"] == {"max_context_tokens": 32768}
    assert config.aliases == {"fast": "haiku"}
    assert config.chains == {"robust": ["sonnet", "gpt-5"], "cheap": ["haiku", "flash"]}
    assert config.api_key_env_vars("anthropic") == ("WORK_ANTHROPIC_KEY",)


def test_environment_overrides_base_urls_in_order(_isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(_isolated_home, "providers:\n  openai:\n    base_url: https://file.example/v1\n")
    config = load_config()
    assert config.base_url("openai") == "https://file.example/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "https://sdk.example/v1")
    assert config.base_url("openai") == "https://sdk.example/v1"
    assert config.base_url("openai_responses") == "https://sdk.example/v1"
    monkeypatch.setenv("METIS_OPENAI_BASE_URL", "https://metis.example/v1/")
    assert config.base_url("openai") == "https://metis.example/v1"
    assert config.base_url("openai_responses") == "https://sdk.example/v1"
    monkeypatch.setenv("METIS_OPENAI_RESPONSES_BASE_URL", "https://responses.example/v1")
    assert config.base_url("openai_responses") == "https://responses.example/v1"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://proxy.example")
    assert config.base_url("anthropic") == "https://proxy.example"


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("0.0.0.0", "http://0.0.0.0:11434"),
        ("gpu-box:8080", "http://gpu-box:8080"),
        (":11500", "http://127.0.0.1:11500"),
        ("http://gpu-box", "http://gpu-box:11434"),
        ("https://ollama.example.com", "https://ollama.example.com:443"),
        ("https://ollama.example.com:8443/base/", "https://ollama.example.com:8443/base"),
        ("[::1]:11434", "http://[::1]:11434"),
    ],
)
def test_ollama_host_accepts_host_port_or_url(host: str, url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert ollama_host_to_url(host) == url
    monkeypatch.setenv("OLLAMA_HOST", host)
    assert load_config().base_url("ollama") == url


def test_standard_key_variables_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a-key")
    monkeypatch.setenv("OPENAI_API_KEY", "o-key")
    monkeypatch.setenv("GOOGLE_API_KEY", "g-key")
    monkeypatch.setenv("OPENROUTER_API_KEY", "r-key")
    config = load_config()
    keys = {p: config.require_api_key(p) for p in ("anthropic", "openai", "openai_responses", "gemini", "openrouter")}
    assert {p: k.get_secret_value() for p, k in keys.items() if k} == {
        "anthropic": "a-key",
        "openai": "o-key",
        "openai_responses": "o-key",
        "gemini": "g-key",
        "openrouter": "r-key",
    }
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key")
    gemini = config.api_key("gemini")
    assert gemini is not None and gemini.get_secret_value() == "gemini-key"


def test_ollama_needs_no_key() -> None:
    assert load_config().require_api_key("ollama") is None


def test_a_missing_key_names_the_variable_to_set() -> None:
    with pytest.raises(MissingAPIKeyError) as info:
        load_config().require_api_key("gemini")
    assert info.value.env_var == "GEMINI_API_KEY"
    assert "set GEMINI_API_KEY" in str(info.value)


def test_a_configured_key_variable_replaces_the_standard_one(
    _isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(_isolated_home, "providers:\n  anthropic:\n    api_key_env: WORK_ANTHROPIC_KEY\n", mode=0o644)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "personal")
    config = load_config()
    with pytest.raises(MissingAPIKeyError, match="WORK_ANTHROPIC_KEY"):
        config.require_api_key("anthropic")
    monkeypatch.setenv("WORK_ANTHROPIC_KEY", "work")
    key = config.require_api_key("anthropic")
    assert key is not None and key.get_secret_value() == "work"


def test_a_key_in_a_private_config_file_is_used_and_the_environment_wins(
    _isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(_isolated_home, f"providers:\n  anthropic:\n    api_key: {SECRET}\n", mode=0o600)
    config = load_config()
    key = config.require_api_key("anthropic")
    assert key is not None and key.get_secret_value() == SECRET
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    key = config.require_api_key("anthropic")
    assert key is not None and key.get_secret_value() == "from-env"


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_a_key_in_a_config_file_others_can_read_is_refused(_isolated_home: Path, mode: int) -> None:
    path = write_config(_isolated_home, f"providers:\n  openai:\n    api_key: {SECRET}\n", mode=mode)
    with pytest.raises(InsecureKeyFileError) as info:
        load_config()
    assert info.value.path == str(path)
    assert info.value.mode == mode
    assert f"chmod 600 {path}" in str(info.value)
    assert SECRET not in str(info.value)


def test_a_readable_config_file_without_keys_is_fine(_isolated_home: Path) -> None:
    write_config(_isolated_home, "defaults:\n  model: haiku\n", mode=0o644)
    assert load_config().default_model == "haiku"


def test_keys_never_appear_in_repr_str_dumps_or_logs(
    _isolated_home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    header_secret = "Bearer hdr-SECRET-42"
    write_config(
        _isolated_home,
        f"providers:\n  anthropic:\n    api_key: {SECRET}\n    headers:\n      Authorization: {header_secret}\n",
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-SECRET-99")
    config = load_config()
    key = config.api_key("anthropic")
    env_key = config.api_key("openai")
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("metis_core.test").info("config %s key %s env %r", config, key, env_key)
    renderings = [
        repr(config),
        str(config),
        repr(config.providers),
        str(config.model_dump()),
        config.model_dump_json(),
        repr(key),
        str(key),
        repr(env_key),
        f"{key}",
        caplog.text,
    ]
    for text in renderings:
        assert SECRET not in text
        assert header_secret not in text
        assert "sk-env-SECRET-99" not in text
    assert config.extra_headers("anthropic") == {"Authorization": header_secret}


def test_a_key_of_the_wrong_type_is_reported_without_echoing_it(_isolated_home: Path) -> None:
    write_config(_isolated_home, "providers:\n  anthropic:\n    api_key: [sk-ant-LEAK-1, x]\n")
    with pytest.raises(ConfigError) as info:
        load_config()
    assert "providers.anthropic.api_key" in str(info.value)
    assert "LEAK" not in str(info.value)


def test_invalid_yaml_names_the_file_and_line(_isolated_home: Path) -> None:
    path = write_config(_isolated_home, "defaults:\n  model: sonnet\n\tproviders: {}\n")
    with pytest.raises(ConfigError) as info:
        load_config()
    message = str(info.value)
    assert str(path) in message
    assert "line 3, column 1" in message


def test_invalid_yaml_does_not_echo_the_offending_line(_isolated_home: Path) -> None:
    write_config(_isolated_home, 'providers:\n  anthropic:\n    api_key: "sk-ant-LEAK-2\n')
    with pytest.raises(ConfigError) as info:
        load_config()
    assert "LEAK" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("- a\n- b\n", "top level must be a mapping"),
        ("provider:\n  anthropic: {}\n", "provider: Extra inputs are not permitted"),
        ("providers:\n  anthropic:\n    base_ulr: x\n", "providers.anthropic.base_ulr"),
        ("aliases:\n  'bad:name': anthropic:claude-haiku-4-5\n", "must not be empty or contain"),
        ("chains:\n  robust: 3\n", "chains.robust"),
    ],
)
def test_invalid_config_is_a_config_error_naming_the_file(_isolated_home: Path, text: str, fragment: str) -> None:
    path = write_config(_isolated_home, text)
    with pytest.raises(ConfigError) as info:
        load_config()
    assert str(path) in str(info.value)
    assert fragment in str(info.value)


def test_an_explicit_home_and_environment_are_honoured(tmp_path: Path) -> None:
    write_config(tmp_path, "defaults:\n  model: opus\n")
    config = load_config(tmp_path, environ={"METIS_ANTHROPIC_BASE_URL": "https://gw.example"})
    assert isinstance(config, MetisConfig)
    assert config.home == tmp_path
    assert config.default_model == "opus"
    assert config.base_url("anthropic") == "https://gw.example"
    assert config.api_key("anthropic") is None


ANTHROPIC_ENVIRONMENT = ("METIS_ANTHROPIC_BASE_URL", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")


@pytest.fixture
def unset_anthropic_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MetisConfig:
    """A config on the live process environment, with none of Anthropic's variables set."""
    for name in ANTHROPIC_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    return load_config(tmp_path)


def test_provider_environment_reads_the_live_process_environment_as_get_would(
    unset_anthropic_config: MetisConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The client keeps a provider's URL and headers while this tuple is unchanged; it reads
    # os.environ's own dict for speed, so it must see every set, change and unset as `get` does.
    config = unset_anthropic_config

    def expected() -> tuple[str | None, ...]:
        return tuple(os.environ.get(name) for name in ANTHROPIC_ENVIRONMENT)

    assert config.provider_environment("anthropic") == expected() == (None, None, None)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-caf\u00e9-not-real")
    assert config.provider_environment("anthropic") == expected()
    monkeypatch.setenv("METIS_ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    first = config.provider_environment("anthropic")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-other")
    assert config.provider_environment("anthropic") == expected() != first
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    assert config.provider_environment("anthropic") == expected()


def test_provider_environment_of_an_injected_mapping_reads_that_mapping(tmp_path: Path) -> None:
    config = load_config(tmp_path, environ={"ANTHROPIC_API_KEY": "sk-injected"})
    assert config.provider_environment("anthropic")[-1] == "sk-injected"


def test_provider_environment_state_changes_exactly_when_the_environment_does(
    unset_anthropic_config: MetisConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The client compares the undecoded state on every call: equal states must mean equal environments.
    config = unset_anthropic_config
    seen: list[tuple[tuple[object, ...], tuple[str | None, ...]]] = []

    def look() -> None:
        seen.append((config.provider_environment_state("anthropic"), config.provider_environment("anthropic")))

    look()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-caf\u00e9-not-real")
    look()
    monkeypatch.setenv("METIS_ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    look()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-other")
    look()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-caf\u00e9-not-real")
    look()
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    look()
    look()
    for state, values in seen:
        for other_state, other_values in seen:
            assert (state == other_state) == (values == other_values)
    assert len({values for _, values in seen}) == 5


def test_provider_environment_state_of_an_injected_mapping_is_its_values(tmp_path: Path) -> None:
    environ = {"ANTHROPIC_API_KEY": "sk-injected"}
    config = load_config(tmp_path, environ=environ)
    assert config.provider_environment_state("anthropic") == config.provider_environment("anthropic")
    environ["ANTHROPIC_API_KEY"] = "sk-changed"
    assert config.provider_environment_state("anthropic")[-1] == "sk-changed"
