"""The shape of models.yaml and of the `models:` entries in config.yaml, and how to read them.

Validates on load so a typo in a capability name fails with the file and entry named, not later
inside routing. The bundled models.yaml is checked once and then built from its prepared form
without validating (prepared_data.load_checked); the models build their schemas only when
something is validated (user entries, another file). Resolving ids lives in registry.py.
"""



from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from metis_core.errors import ConfigError, ModelIdError
from metis_core.field_defaults import empty_dict, empty_list
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.models.model_id import parse_model_id
from metis_core.prepared_data import DATA_DIR, load_checked
from metis_core.yaml_text import parse_yaml_text, read_yaml_file

CAPABILITY_FIELDS = frozenset(AdapterCapabilities.model_fields)


class ProviderEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    family: str | None = None
    """Another provider whose models (and defaults) this one serves, e.g. openai_responses -> openai."""
    any_model: bool = False
    """Any model name resolves, with the provider defaults (local servers and aggregators)."""
    strip_tags: bool = False
    """`name:tag` falls back to the entry for `name` (Ollama tags such as qwen3:8b)."""
    defaults: dict[str, Any] = Field(default_factory=empty_dict)
    upstream: dict[str, str] = Field(default_factory=empty_dict)
    """Aggregators: model-name vendor prefix -> provider whose model facts an uncatalogued
    `vendor/model` inherits (`anthropic/claude-x` -> anthropic's images and limits)."""


UPSTREAM_FACTS = frozenset({"supports_images", "accepted_image_media_types", "max_context_tokens", "max_output_tokens"})
"""What an aggregator's uncatalogued model takes from its upstream: facts of the model, not of a wire."""


class ModelEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    display_name: str | None = None
    snapshots: list[str] = Field(default_factory=empty_list)
    """Other names the provider serves this same model under (dated versions, -latest)."""
    capabilities: dict[str, Any] = Field(default_factory=empty_dict)
    provider_capabilities: dict[str, dict[str, Any]] = Field(default_factory=empty_dict)
    """Per-provider refinements, e.g. thinking summaries exist only on openai_responses."""


class RegistryFile(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    providers: dict[str, ProviderEntry] = Field(default_factory=empty_dict)
    models: dict[str, ModelEntry] = Field(default_factory=empty_dict)
    aliases: dict[str, str] = Field(default_factory=empty_dict)


def check_capability_keys(fields: dict[str, Any], where: str) -> None:
    unknown = sorted(set(fields) - CAPABILITY_FIELDS)
    if unknown:
        raise ConfigError(f"{where}: unknown capability field(s) {unknown}; known: {sorted(CAPABILITY_FIELDS)}")
    try:
        AdapterCapabilities.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise ConfigError(f"{where}: capability {first['loc'][0]!r}: {first['msg']}") from None


def check_model_entry(model_id: str, entry: ModelEntry, source: str) -> None:
    try:
        parse_model_id(model_id)
    except ModelIdError as exc:
        raise ConfigError(f"{source}: models entry {model_id!r}: {exc}") from None
    check_capability_keys(entry.capabilities, f"{source}: models.{model_id}.capabilities")
    for provider, fields in entry.provider_capabilities.items():
        check_capability_keys(fields, f"{source}: models.{model_id}.provider_capabilities.{provider}")


def parse_registry_data(data: Any, source: str) -> RegistryFile:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping")
    try:
        registry = RegistryFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ConfigError(f"{source}: {where}: {first['msg']}") from None
    for name, provider in registry.providers.items():
        check_capability_keys(provider.defaults, f"{source}: providers.{name}.defaults")
        if provider.family is not None and provider.family not in registry.providers:
            raise ConfigError(f"{source}: providers.{name}.family names unknown provider {provider.family!r}")
    for model_id, entry in registry.models.items():
        check_model_entry(model_id, entry, source)
    return registry


def read_registry_file(path: Path) -> RegistryFile:
    return parse_registry_data(read_yaml_file(path, ConfigError, "model registry"), str(path))


def builtin_registry_path() -> Path:
    return DATA_DIR / "models.yaml"


@lru_cache(maxsize=1)
def builtin_registry_file() -> RegistryFile:
    """models.yaml shipped with metis-core, once per process: parsed and checked, or built from the
    prepared form a checked parse stored (metis_core/prepared_data.py)."""
    path = builtin_registry_path()
    return load_checked(path, lambda text: parse_yaml_text(text, path, ConfigError),
                        lambda data: parse_registry_data(data, str(path)), checked_registry_data)


def checked_registry_data(data: dict[str, Any]) -> RegistryFile:
    """A RegistryFile from data that parse_registry_data already accepted, without validating it again."""
    # Every field is given: model_construct would otherwise inspect each default factory's signature.
    providers = {name: ProviderEntry.model_construct(
        family=entry.get("family"), any_model=entry.get("any_model", False), strip_tags=entry.get("strip_tags", False),
        defaults=entry.get("defaults", {}), upstream=entry.get("upstream", {}),
    ) for name, entry in data.get("providers", {}).items()}
    models = {model_id: ModelEntry.model_construct(
        display_name=entry.get("display_name"), snapshots=entry.get("snapshots", []),
        capabilities=entry.get("capabilities", {}), provider_capabilities=entry.get("provider_capabilities", {}),
    ) for model_id, entry in data.get("models", {}).items()}
    return RegistryFile.model_construct(providers=providers, models=models, aliases=dict(data.get("aliases", {})))
