"""The model registry: capabilities per model id, provider families and defaults, the parse grammar."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from metis_core.config import load_config
from metis_core.errors import AliasCycleError, ConfigError, ModelIdError, UnknownModelError
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.models.registry import ModelInfo, ModelRegistry, default_registry
from metis_core.models.registry_file import read_registry_file

REQUIRED_MODELS = [
    "anthropic:claude-opus-4-7",
    "anthropic:claude-opus-4-1",
    "anthropic:claude-sonnet-4-6",
    "anthropic:claude-sonnet-4-5",
    "anthropic:claude-haiku-4-5",
    "anthropic:claude-3-5-haiku-latest",
    "openai:gpt-5",
    "openai:gpt-5-mini",
    "openai:gpt-5-nano",
    "openai:gpt-4.1",
    "openai:gpt-4.1-mini",
    "openai:gpt-4o",
    "openai:gpt-4o-mini",
    "openai:o3",
    "openai:o4-mini",
    "gemini:gemini-2.5-pro",
    "gemini:gemini-2.5-flash",
    "gemini:gemini-2.5-flash-lite",
    "gemini:gemini-2.0-flash",
]

# Model names as they appear in the recorded provider traffic (grep "model" in fixtures/wire).
FIXTURE_MODELS = [
    "anthropic:claude-sonnet-4-5-20250929",
    "anthropic:claude-3-opus-20240229",
    "anthropic:claude-3-opus-latest",
    "anthropic:claude-sonnet-4-20250514",
    "anthropic:claude-haiku-4-5-20251001",
    "anthropic:claude-3-7-sonnet-20250219",
    "anthropic:claude-sonnet-4-0",
    "openai:gpt-4o-2024-08-06",
    "openai:gpt-3.5-turbo-0125",
    "openai:gpt-4.1-2025-04-14",
    "openai:o4-mini-2025-04-16",
    "openai:gpt-5-2025-08-07",
    "openai:gpt-5-mini-2025-08-07",
    "openai:gpt-5.2-2025-12-11",
    "openai:gpt-5.4",
    "openai:gpt-5.6-sol",
    "openai:o3-mini-2025-01-31",
    "openai:o1-2024-12-17",
    "openai:gpt-4o-mini-2024-07-18",
    "openai:gpt-4.1-nano",
    "openai_responses:gpt-4o-2024-08-06",
    "gemini:gemini-2.5-pro",
    "gemini:gemini-3-pro-preview",
    "gemini:gemini-3-flash-preview",
    "gemini:gemini-2.0-flash-exp",
    "ollama:llama3.2",
    "ollama:llava",
    "ollama:qwen3",
    "openrouter:anthropic/claude-sonnet-4.5",
    "openrouter:openai/gpt-4o",
    "openrouter:openai/gpt-5-mini",
    "openrouter:google/gemini-2.5-flash",
]


@pytest.fixture
def registry() -> ModelRegistry:
    return ModelRegistry.load()


def registry_with(home: Path, text: str) -> ModelRegistry:
    path = home / "config.yaml"
    path.write_text(text, encoding="utf-8")
    os.chmod(path, 0o600)
    return ModelRegistry.load(load_config())


@pytest.mark.parametrize("model_id", REQUIRED_MODELS + FIXTURE_MODELS)
def test_current_and_recorded_models_are_in_the_catalog(registry: ModelRegistry, model_id: str) -> None:
    info = registry.get(model_id)
    assert info.catalog_id is not None
    assert info.id == model_id
    assert info.capabilities.max_context_tokens >= 8192
    assert 0 < info.capabilities.max_output_tokens <= info.capabilities.max_context_tokens


def test_model_info_describes_the_model(registry: ModelRegistry) -> None:
    info = registry.get("anthropic:claude-sonnet-4-6")
    assert isinstance(info, ModelInfo)
    assert (info.provider, info.name, info.display_name) == ("anthropic", "claude-sonnet-4-6", "Claude Sonnet 4.6")
    assert "sonnet" in info.aliases
    caps = info.capabilities
    assert isinstance(caps, AdapterCapabilities)
    assert caps.supports_thinking and caps.supports_images and caps.supports_prompt_caching
    assert not caps.supports_system_messages_in_list
    assert caps.max_context_tokens == 200_000
    assert "image/png" in caps.accepted_image_media_types


def test_a_dated_snapshot_resolves_to_its_model_and_keeps_its_verbatim_id(registry: ModelRegistry) -> None:
    info = registry.get("anthropic:claude-sonnet-4-5-20250929")
    assert info.id == "anthropic:claude-sonnet-4-5-20250929"
    assert info.catalog_id == "anthropic:claude-sonnet-4-5"
    assert info.capabilities == registry.capabilities("anthropic:claude-sonnet-4-5")
    assert registry.canonical_id("anthropic:claude-sonnet-4-5-20250929") == "anthropic:claude-sonnet-4-5"


def test_openai_responses_serves_the_openai_models_without_duplicated_data(registry: ModelRegistry) -> None:
    chat = registry.get("openai:gpt-5")
    responses = registry.get("openai_responses:gpt-5")
    assert responses.catalog_id == "openai:gpt-5"
    assert responses.provider == "openai_responses"
    assert responses.capabilities.max_context_tokens == chat.capabilities.max_context_tokens == 400_000
    # Reasoning summaries are only exposed by the Responses API: honest per-provider declaration.
    assert responses.capabilities.supports_thinking and not chat.capabilities.supports_thinking
    responses_ids = {m.id for m in registry.models("openai_responses")}
    assert {"openai_responses:gpt-5", "openai_responses:o3", "openai_responses:gpt-4.1"} <= responses_ids
    assert all(m.provider == "openai_responses" for m in registry.models("openai_responses"))


@pytest.mark.parametrize(
    ("model_id", "name"),
    [
        ("ollama:qwen3:8b", "qwen3:8b"),
        ("ollama:some-new-model:latest", "some-new-model:latest"),
        ("openrouter:deepseek/deepseek-v3", "deepseek/deepseek-v3"),
        ("openrouter:minimax/minimax-m2:free", "minimax/minimax-m2:free"),
        ("openai_compatible:Qwen/Qwen2.5-72B-Instruct", "Qwen/Qwen2.5-72B-Instruct"),
    ],
)
def test_any_model_on_a_provider_with_defaults_resolves_verbatim(
    registry: ModelRegistry, model_id: str, name: str
) -> None:
    info = registry.get(model_id)
    assert (info.id, info.name) == (model_id, name)
    assert info.capabilities.supports_tools
    assert info.capabilities.max_context_tokens > 0


def test_an_unlisted_local_model_uses_provider_defaults(registry: ModelRegistry) -> None:
    info = registry.get("ollama:phi4")
    assert info.from_provider_defaults
    assert not info.capabilities.supports_images
    assert not info.capabilities.supports_stream_usage


def test_an_ollama_tag_falls_back_to_the_untagged_model(registry: ModelRegistry) -> None:
    info = registry.get("ollama:llava:13b")
    assert info.catalog_id == "ollama:llava"
    assert info.capabilities.supports_images


def test_an_unknown_model_on_a_provider_without_defaults_suggests_close_matches(registry: ModelRegistry) -> None:
    with pytest.raises(UnknownModelError) as info:
        registry.get("anthropic:claude-sonet-4-5")
    message = str(info.value)
    assert "anthropic:claude-sonnet-4-5" in message
    assert "add it under models:" in message


def test_an_unknown_provider_is_named_with_the_known_ones(registry: ModelRegistry) -> None:
    with pytest.raises(UnknownModelError, match=r"unknown provider 'acme'.*anthropic"):
        registry.get("acme:acme-large")


def test_a_malformed_model_id_is_a_model_id_error(registry: ModelRegistry) -> None:
    with pytest.raises(ModelIdError):
        registry.get("claude-sonnet-4-6")


def test_models_lists_a_providers_catalog_sorted(registry: ModelRegistry) -> None:
    anthropic = [m.id for m in registry.models("anthropic")]
    assert anthropic == sorted(anthropic)
    assert "anthropic:claude-opus-4-7" in anthropic
    assert all(m.startswith("anthropic:") for m in anthropic)
    assert len(registry.models()) > len(anthropic)


def test_default_registry_is_built_once() -> None:
    assert default_registry() is default_registry()


# --- user overrides --------------------------------------------------------------------------


def test_a_config_entry_overrides_fields_of_a_builtin_model(_isolated_home: Path) -> None:
    registry = registry_with(
        _isolated_home,
        "models:\n  anthropic:claude-sonnet-4-5:\n    capabilities: {max_context_tokens: 1000000}\n",
    )
    assert registry.capabilities("anthropic:claude-sonnet-4-5").max_context_tokens == 1_000_000
    assert registry.capabilities("anthropic:claude-sonnet-4-5-20250929").max_context_tokens == 1_000_000
    assert registry.capabilities("anthropic:claude-sonnet-4-5").supports_thinking  # other fields kept
    assert ModelRegistry.load().capabilities("anthropic:claude-sonnet-4-5").max_context_tokens == 200_000


def test_a_config_entry_for_one_provider_of_a_family_stays_on_that_provider(_isolated_home: Path) -> None:
    registry = registry_with(_isolated_home, "models:\n  openai_responses:gpt-5:\n    max_output_tokens: 1000\n")
    assert registry.capabilities("openai_responses:gpt-5").max_output_tokens == 1000
    assert registry.capabilities("openai:gpt-5").max_output_tokens == 128_000


def test_a_config_entry_adds_a_model_the_catalog_lacks(_isolated_home: Path) -> None:
    registry = registry_with(
        _isolated_home,
        "models:\n"
        "  anthropic:claude-next:\n"
        "    display_name: Next\n"
        "    snapshots: [claude-next-20260601]\n"
        "    capabilities: {max_output_tokens: 100000}\n"
        "  ollama:qwen3:8b: {max_context_tokens: 32768, supports_thinking: true}\n",
    )
    info = registry.get("anthropic:claude-next-20260601")
    assert (info.catalog_id, info.display_name) == ("anthropic:claude-next", "Next")
    assert info.capabilities.max_output_tokens == 100_000
    assert info.capabilities.supports_thinking  # anthropic provider defaults still apply
    qwen = registry.capabilities("ollama:qwen3:8b")
    assert (qwen.max_context_tokens, qwen.supports_thinking) == (32768, True)


def test_a_config_entry_with_an_unknown_capability_is_a_config_error(_isolated_home: Path) -> None:
    with pytest.raises(ConfigError, match=r"models\.openai:gpt-5\.capabilities.*supports_telepathy"):
        registry_with(_isolated_home, "models:\n  openai:gpt-5:\n    capabilities: {supports_telepathy: true}\n")


def test_a_config_entry_with_a_wrongly_typed_capability_is_a_config_error(_isolated_home: Path) -> None:
    with pytest.raises(ConfigError, match="max_context_tokens"):
        registry_with(_isolated_home, "models:\n  openai:gpt-5:\n    max_context_tokens: lots\n")


def test_a_broken_registry_file_names_the_file_and_entry(tmp_path: Path) -> None:
    path = tmp_path / "models.yaml"
    path.write_text("models:\n  anthropic:x:\n    capabilities: {max_context_tokns: 5}\n")
    with pytest.raises(ConfigError, match=rf"{path}.*anthropic:x.*max_context_tokns"):
        read_registry_file(path)
    path.write_text("providers:\n  openai_responses: {family: openaj}\n")
    with pytest.raises(ConfigError, match="unknown provider 'openaj'"):
        read_registry_file(path)
    path.write_text("models:\n  no-provider: {}\n")
    with pytest.raises(ConfigError, match="no-provider"):
        read_registry_file(path)


# --- the parse grammar ---------------------------------------------------------------------------


def test_parse_keeps_a_model_id_verbatim(registry: ModelRegistry) -> None:
    assert registry.parse("ollama:qwen3:8b") == ["ollama:qwen3:8b"]
    assert registry.parse("anthropic:claude-sonnet-4-5-20250929") == ["anthropic:claude-sonnet-4-5-20250929"]


def test_parse_expands_an_alias(registry: ModelRegistry) -> None:
    assert registry.parse("sonnet") == ["anthropic:claude-sonnet-4-6"]
    assert registry.parse("gpt-5") == ["openai:gpt-5"]
    assert registry.parse("flash") == ["gemini:gemini-2.5-flash"]


def test_parse_expands_a_chain_in_order_and_drops_duplicates(registry: ModelRegistry) -> None:
    assert registry.parse(" haiku , openrouter:deepseek/deepseek-v3,frontier, opus ,haiku") == [
        "anthropic:claude-haiku-4-5",
        "openrouter:deepseek/deepseek-v3",
        "anthropic:claude-opus-4-7",
        "openai:gpt-5",
        "gemini:gemini-2.5-pro",
    ]


def test_user_aliases_and_chains_expand_recursively(_isolated_home: Path) -> None:
    registry = registry_with(
        _isolated_home,
        "aliases:\n"
        "  fast: haiku\n"
        "  sonnet: anthropic:claude-sonnet-4-5\n"  # a user alias replaces the built-in one
        "  work: robust\n"  # an alias may name a chain
        "chains:\n"
        "  robust: [sonnet, cheap, 'ollama:qwen3:8b']\n"
        "  cheap: fast, flash\n",
    )
    assert registry.parse("work") == [
        "anthropic:claude-sonnet-4-5",
        "anthropic:claude-haiku-4-5",
        "gemini:gemini-2.5-flash",
        "ollama:qwen3:8b",
    ]
    assert registry.aliases()["cheap"] == ["fast", "flash"]


def test_an_alias_cycle_reports_the_cycle_path(_isolated_home: Path) -> None:
    registry = registry_with(
        _isolated_home,
        "aliases:\n  a: haiku, b\n  b: c\nchains:\n  c: [sonnet, a]\n",
    )
    with pytest.raises(AliasCycleError) as info:
        registry.parse("a")
    assert info.value.cycle == ["a", "b", "c", "a"]
    assert "a -> b -> c -> a" in str(info.value)
    with pytest.raises(AliasCycleError) as again:
        registry.parse("sonnet, c")
    assert again.value.cycle == ["c", "a", "b", "c"]


def test_an_alias_naming_itself_is_a_cycle(_isolated_home: Path) -> None:
    registry = registry_with(_isolated_home, "aliases:\n  me: me\n")
    with pytest.raises(AliasCycleError, match="me -> me"):
        registry.parse("me")


def test_parse_rejects_unknown_members_with_suggestions(registry: ModelRegistry) -> None:
    with pytest.raises(UnknownModelError, match="Did you mean sonnet"):
        registry.parse("haiku, sonet")
    with pytest.raises(UnknownModelError, match="anthropic:claude-opus-4-7"):
        registry.parse("anthropic:claude-opus-4-8")


@pytest.mark.parametrize("spec", ["", "haiku,,sonnet", "haiku,", " "])
def test_parse_rejects_empty_members(registry: ModelRegistry, spec: str) -> None:
    with pytest.raises(ModelIdError, match="empty member"):
        registry.parse(spec)


def test_the_same_name_as_alias_and_chain_is_a_config_error(_isolated_home: Path) -> None:
    with pytest.raises(ConfigError, match="both under aliases and chains"):
        registry_with(_isolated_home, "aliases:\n  x: haiku\nchains:\n  x: [sonnet]\n")


def test_an_uncatalogued_openrouter_model_inherits_its_upstream_models_facts() -> None:
    reg = default_registry()
    known_upstream = reg.get("openrouter:anthropic/claude-opus-4.7")  # OpenRouter spells 4.7, Anthropic 4-7
    assert known_upstream.from_provider_defaults
    caps = known_upstream.capabilities
    assert caps.supports_images and caps.max_output_tokens == 128_000 and "image/png" in caps.accepted_image_media_types
    assert caps.supports_parallel_tool_calls is False, "OpenRouter's own wire defaults still apply"
    new_model = reg.capabilities("openrouter:google/gemini-9-ultra")
    assert new_model.supports_images and new_model.max_context_tokens == 1_048_576  # Gemini's provider defaults
    unknown_vendor = reg.capabilities("openrouter:deepseek/deepseek-v3")
    assert not unknown_vendor.supports_images, "nothing is known of this vendor: OpenRouter's defaults only"


def test_hosted_tools_are_declared_per_provider_and_model() -> None:
    reg = default_registry()
    assert reg.capabilities("anthropic:claude-sonnet-4-6").hosted_tools == ("web_search", "web_fetch", "code_execution")
    assert reg.capabilities("anthropic:claude-3-haiku-20240307").hosted_tools == ()
    assert reg.capabilities("openai_responses:gpt-5").hosted_tools == ("web_search", "file_search")
    assert reg.capabilities("openai_responses:gpt-4.1-nano").hosted_tools == ("file_search",)
    assert reg.capabilities("openai:gpt-5").hosted_tools == (), "Chat Completions exposes no hosted tools"
