"""The shape of models.yaml and of the `models:` entries in config.yaml, and how to read them.

Validates on load so a typo in a capability name fails with the file and entry named, not later
inside routing. The runtime entries are plain values (plain_values.py); their pydantic schema,
registry_schema.py, loads only when something is validated (user entries, another file, the first
read of the bundled models.yaml), which is then built from its prepared form without validating
(prepared_data.load_checked). Resolving ids lives in registry.py.
"""

from functools import lru_cache
from pathlib import Path
from typing import Any

from metis_core.errors import ConfigError, ModelIdError
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.models.model_id import parse_model_id
from metis_core.plain_values import PlainValue
from metis_core.prepared_data import DATA_DIR, load_checked
from metis_core.yaml_text import parse_yaml_text, read_yaml_file

CAPABILITY_FIELDS = frozenset(AdapterCapabilities.model_fields)


class ProviderEntry(PlainValue):
    __slots__ = ("any_model", "defaults", "family", "strip_tags", "upstream")
    family: str | None
    """Another provider whose models (and defaults) this one serves, e.g. openai_responses -> openai."""
    any_model: bool
    """Any model name resolves, with the provider defaults (local servers and aggregators)."""
    strip_tags: bool
    """`name:tag` falls back to the entry for `name` (Ollama tags such as qwen3:8b)."""
    defaults: dict[str, Any]
    upstream: dict[str, str]
    """Aggregators: model-name vendor prefix -> provider whose model facts an uncatalogued
    `vendor/model` inherits (`anthropic/claude-x` -> anthropic's images and limits)."""

    def __init__(self, family: str | None = None, any_model: bool = False, strip_tags: bool = False,
                 defaults: dict[str, Any] | None = None, upstream: dict[str, str] | None = None) -> None:
        self._assign(family=family, any_model=any_model, strip_tags=strip_tags, defaults=defaults or {},
                     upstream=upstream or {})


UPSTREAM_FACTS = frozenset({"supports_images", "accepted_image_media_types", "max_context_tokens", "max_output_tokens"})
"""What an aggregator's uncatalogued model takes from its upstream: facts of the model, not of a wire."""


class ModelEntry(PlainValue):
    __slots__ = ("capabilities", "display_name", "provider_capabilities", "snapshots")
    FIELDS = frozenset(__slots__)
    """The keys of a models.yaml entry; a config entry with none of them is bare capability fields."""
    display_name: str | None
    snapshots: list[str]
    """Other names the provider serves this same model under (dated versions, -latest)."""
    capabilities: dict[str, Any]
    provider_capabilities: dict[str, dict[str, Any]]
    """Per-provider refinements, e.g. thinking summaries exist only on openai_responses."""

    def __init__(self, display_name: str | None = None, snapshots: list[str] | None = None,
                 capabilities: dict[str, Any] | None = None,
                 provider_capabilities: dict[str, dict[str, Any]] | None = None) -> None:
        self._assign(display_name=display_name, snapshots=snapshots or [], capabilities=capabilities or {},
                     provider_capabilities=provider_capabilities or {})


class RegistryFile(PlainValue):
    __slots__ = ("aliases", "models", "providers")
    providers: dict[str, ProviderEntry]
    models: dict[str, ModelEntry]
    aliases: dict[str, str]

    def __init__(self, providers: dict[str, ProviderEntry] | None = None, models: dict[str, ModelEntry] | None = None,
                 aliases: dict[str, str] | None = None) -> None:
        self._assign(providers=providers or {}, models=models or {}, aliases=aliases or {})


def check_capability_keys(fields: dict[str, Any], where: str) -> None:
    unknown = sorted(set(fields) - CAPABILITY_FIELDS)
    if unknown:
        raise ConfigError(f"{where}: unknown capability field(s) {unknown}; known: {sorted(CAPABILITY_FIELDS)}")
    from pydantic import ValidationError

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
    from pydantic import ValidationError

    from metis_core.models.registry_schema import RegistryFileSchema

    try:
        registry = RegistryFileSchema.model_validate(data).runtime()
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
    providers = {name: ProviderEntry(**entry) for name, entry in data.get("providers", {}).items()}
    models = {model_id: ModelEntry(**entry) for model_id, entry in data.get("models", {}).items()}
    return RegistryFile(providers, models, dict(data.get("aliases", {})))


def user_model_entry(model_id: str, raw: Any, source: str) -> ModelEntry:
    """A config `models:` entry, validated: the models.yaml shape, or bare capability fields for brevity."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: models.{model_id} must be a mapping")
    if raw and not set(raw) & ModelEntry.FIELDS:
        raw = {"capabilities": raw}
    from pydantic import ValidationError

    from metis_core.models.registry_schema import ModelEntrySchema

    try:
        return ModelEntrySchema.model_validate(raw).runtime()
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ConfigError(f"{source}: models.{model_id}.{where}: {first['msg']}") from None
