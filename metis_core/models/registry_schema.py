"""The pydantic schema of models.yaml and of config `models:` entries: what the registry validates.

Loaded only when registry data is validated (a user's `models:`, another file, the first read of
the bundled models.yaml); each validated entry becomes registry_file's plain runtime values, so
resolving a model never builds these schemas.
"""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from metis_core.field_defaults import empty_dict, empty_list
from metis_core.models.registry_file import ModelEntry, ProviderEntry, RegistryFile


class ProviderEntrySchema(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    family: str | None = None
    any_model: bool = False
    strip_tags: bool = False
    defaults: dict[str, Any] = Field(default_factory=empty_dict)
    upstream: dict[str, str] = Field(default_factory=empty_dict)

    def runtime(self) -> ProviderEntry:
        return ProviderEntry(self.family, self.any_model, self.strip_tags, self.defaults, self.upstream)


class ModelEntrySchema(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    display_name: str | None = None
    snapshots: list[str] = Field(default_factory=empty_list)
    capabilities: dict[str, Any] = Field(default_factory=empty_dict)
    provider_capabilities: dict[str, dict[str, Any]] = Field(default_factory=empty_dict)

    def runtime(self) -> ModelEntry:
        return ModelEntry(self.display_name, self.snapshots, self.capabilities, self.provider_capabilities)


class RegistryFileSchema(BaseModel):
    model_config = ConfigDict(extra="forbid")

    providers: dict[str, ProviderEntrySchema] = Field(default_factory=empty_dict)
    models: dict[str, ModelEntrySchema] = Field(default_factory=empty_dict)
    aliases: dict[str, str] = Field(default_factory=empty_dict)

    def runtime(self) -> RegistryFile:
        return RegistryFile({name: entry.runtime() for name, entry in self.providers.items()},
                            {model_id: entry.runtime() for model_id, entry in self.models.items()}, dict(self.aliases))
