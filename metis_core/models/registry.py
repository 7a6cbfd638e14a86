"""The model registry: what each model id can carry, and the alias/chain grammar that names them.

Resolves a verbatim `<provider>:<model>` id to a ModelInfo with honest capabilities, from
models.yaml plus the user's config (docs/model-registry.md). Providers may share a family's data
(openai_responses serves the openai models) or accept any model name with defaults (ollama,
openrouter, openai_compatible); a named provider from a METIS_PROVIDER_<NAME> DSN joins the
family of its kind when its name is first asked. It does not price models (pricing.py) or pick one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from metis_core.errors import AliasCycleError, ConfigError, ModelIdError, UnknownModelError
from metis_core.models.capabilities import AdapterCapabilities, capabilities_from
from metis_core.models.model_id import parse_model_id
from metis_core.models.registry_file import (
    UPSTREAM_FACTS,
    ModelEntry,
    ProviderEntry,
    RegistryFile,
    builtin_registry_file,
    check_model_entry,
    user_model_entry,
)

if TYPE_CHECKING:
    from metis_core.config import MetisConfig


class ModelInfo(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)  # built by the registry from checked parts

    id: str
    """Verbatim, as asked: `openai_responses:gpt-5-2025-08-07` stays exactly that."""
    provider: str
    name: str
    catalog_id: str | None
    """The registry entry it resolved to (`openai:gpt-5`); None when only provider defaults apply."""
    display_name: str | None
    capabilities: AdapterCapabilities
    aliases: tuple[str, ...] = ()
    """Aliases that name exactly this model."""
    snapshots: tuple[str, ...] = ()

    @property
    def from_provider_defaults(self) -> bool:
        return self.catalog_id is None


class ModelRegistry:
    """Built-in models.yaml, overlaid with the user's `models:`, `aliases:` and `chains:`."""

    def __init__(
        self,
        data: RegistryFile,
        *,
        overlays: dict[str, ModelEntry] | None = None,
        aliases: dict[str, list[str]] | None = None,
        config_source: str = "config.yaml",
        named_kind: Callable[[str], str] | None = None,
    ) -> None:
        self._providers: dict[str, ProviderEntry] = dict(data.providers)
        self._named_kind = named_kind
        """provider name -> its adapter kind (config.provider_kind); consulted for unknown names."""
        self._entries: dict[str, ModelEntry] = dict(data.models)
        self._aliases: dict[str, list[str]] = {k: _members(v) for k, v in data.aliases.items()}
        self._config_source = config_source
        self._names: dict[tuple[str, str], str] = {}
        for model_id, entry in self._entries.items():
            self._index(model_id, entry)
        self._overlays: dict[str, ModelEntry] = {}
        for model_id, entry in (overlays or {}).items():
            base = self._catalog_id(model_id)
            if base is None:  # a model the built-in data does not know: the user defines it
                self._entries[model_id] = entry
                self._index(model_id, entry)
            else:
                self._overlays[model_id] = entry
                self._index(base, entry)
        self._aliases.update({k: [m.strip() for m in v] for k, v in (aliases or {}).items()})
        self._cache: dict[str, ModelInfo] = {}

    # --- construction ----------------------------------------------------------------------

    @classmethod
    def load(cls, config: MetisConfig | None = None) -> ModelRegistry:
        """The built-in registry, plus the user's overrides when a config is given."""
        data = builtin_registry_file()
        if config is None:
            return cls(data)
        source = str(config.path)
        overlays: dict[str, ModelEntry] = {}
        for model_id, raw in config.models.items():
            entry = user_model_entry(model_id, raw, source)
            check_model_entry(model_id, entry, source)
            overlays[model_id] = entry
        clash = sorted(set(config.aliases) & set(config.chains))
        if clash:
            raise ConfigError(f"{source}: {clash} defined both under aliases and chains; keep one")
        aliases = {name: _members(value) for name, value in config.aliases.items()}
        aliases.update({name: list(members) for name, members in config.chains.items()})
        return cls(data, overlays=overlays, aliases=aliases, config_source=source, named_kind=config.provider_kind)

    def _index(self, model_id: str, entry: ModelEntry) -> None:
        provider, name = parse_model_id(model_id)
        self._names[(provider, name)] = model_id
        for snapshot in entry.snapshots:
            self._names[(provider, snapshot)] = model_id

    # --- resolution --------------------------------------------------------------------------

    def _provider_chain(self, provider: str) -> list[str]:
        """[family root, ..., provider]: whose defaults apply, in merge order."""
        if provider not in self._providers and self._named_kind is not None:
            kind = self._named_kind(provider)
            if kind != provider and kind in self._providers:  # a named provider serves its kind's models
                self._providers[provider] = ProviderEntry(family=kind)
        chain: list[str] = []
        current: str | None = provider
        while current is not None and current in self._providers:
            if current in chain:
                raise ConfigError(f"provider family cycle: {' -> '.join([*chain, current])}")
            chain.append(current)
            current = self._providers[current].family
        return list(reversed(chain))

    def _catalog_id(self, model_id: str) -> str | None:
        provider, name = parse_model_id(model_id)
        chain = self._provider_chain(provider)
        names = [name]
        if ":" in name and any(self._providers[p].strip_tags for p in chain):
            names.append(name.partition(":")[0])  # ollama `qwen3:8b` falls back to `qwen3`
        if name.startswith("arn:") and "/" in name:
            names.append(name.rsplit("/", 1)[1])  # a Bedrock inference-profile ARN names its profile id last
        for candidate_name in names:
            for candidate in reversed(chain or [provider]):
                found = self._names.get((candidate, candidate_name))
                if found is not None:
                    return found
        return None

    def get(self, model_id: str) -> ModelInfo:
        """Resolve a model id; raise UnknownModelError when neither the catalog nor defaults cover it."""
        cached = self._cache.get(model_id)
        if cached is not None:
            return cached
        provider, name = parse_model_id(model_id)
        chain = self._provider_chain(provider)
        catalog_id = self._catalog_id(model_id)
        if catalog_id is None and not any(self._providers[p].any_model for p in chain):
            raise self._unknown(model_id, provider, known_provider=bool(chain))
        fields: dict[str, Any] = {}
        for link in chain:
            fields.update(self._providers[link].defaults)
        if catalog_id is None:
            fields.update(self._upstream_facts(chain, name))
        display_name = None
        snapshots: tuple[str, ...] = ()
        if catalog_id is not None:
            entry = self._entries[catalog_id]
            fields.update(entry.capabilities)
            fields.update(entry.provider_capabilities.get(provider, {}))
            display_name = entry.display_name
            snapshots = tuple(entry.snapshots)
        for key in dict.fromkeys([catalog_id, model_id]):
            overlay = self._overlays.get(key) if key else None
            if overlay is not None:
                fields.update(overlay.capabilities)
                fields.update(overlay.provider_capabilities.get(provider, {}))
                display_name = overlay.display_name or display_name
                snapshots += tuple(s for s in overlay.snapshots if s not in snapshots)
        info = ModelInfo.model_construct(  # every part is checked: ids parsed, capabilities validated
            id=model_id,
            provider=provider,
            name=name,
            catalog_id=catalog_id,
            display_name=display_name,
            capabilities=capabilities_from(fields),
            aliases=tuple(a for a, m in self._aliases.items() if m == [model_id]),
            snapshots=snapshots,
        )
        self._cache[model_id] = info
        return info

    def _upstream_facts(self, chain: list[str], name: str) -> dict[str, Any]:
        """For an aggregator's uncatalogued `vendor/model`: the upstream catalog entry's model facts
        (`claude-sonnet-4.7` also tried as `claude-sonnet-4-7`), else the upstream provider's defaults."""
        vendor, _, upstream_name = name.partition("/")
        upstream = next((self._providers[p].upstream[vendor] for p in reversed(chain)
                         if vendor in self._providers[p].upstream), None)
        if not upstream_name or upstream is None or upstream not in self._providers:
            return {}
        facts: dict[str, Any] = {}
        for link in self._provider_chain(upstream):
            facts.update(self._providers[link].defaults)
        for candidate in dict.fromkeys([upstream_name, upstream_name.replace(".", "-")]):
            found = self._catalog_id(f"{upstream}:{candidate}")
            if found is not None:
                facts.update(self._entries[found].capabilities)
                break
        return {k: v for k, v in facts.items() if k in UPSTREAM_FACTS}

    def capabilities(self, model_id: str) -> AdapterCapabilities:
        return self.get(model_id).capabilities

    def canonical_id(self, model_id: str) -> str:
        """The catalog entry a model id resolves to (snapshots and families folded), else itself."""
        return self._catalog_id(model_id) or model_id

    def knows(self, model_id: str) -> bool:
        try:
            self.get(model_id)
        except (UnknownModelError, ModelIdError):
            return False
        return True

    def models(self, provider: str | None = None) -> list[ModelInfo]:
        """Catalog models, sorted by id; a family provider lists its family's models under its own key."""
        ids: set[str] = set()
        for model_id in self._entries:
            entry_provider, name = parse_model_id(model_id)
            if provider is None or entry_provider == provider:
                ids.add(model_id)
            elif entry_provider in self._provider_chain(provider):
                ids.add(f"{provider}:{name}")
        return [self.get(model_id) for model_id in sorted(ids)]

    def providers(self) -> list[str]:
        return sorted(self._providers)

    def aliases(self) -> dict[str, list[str]]:
        return {name: list(members) for name, members in self._aliases.items()}

    # --- the parse grammar -----------------------------------------------------------------

    def parse(self, spec: str) -> list[str]:
        """Expand a model id, alias, or comma-separated chain to model ids: ordered, deduplicated.

        Aliases expand recursively (an alias may name a chain); ids are kept verbatim and must
        resolve; a bare model name (`gpt-4o-mini`) stands for the one catalog id with that name and
        is refused when several providers list it. A cycle raises AliasCycleError with its path.
        """
        result: list[str] = []
        for model_id in self._expand(spec, []):
            if model_id not in result:
                result.append(model_id)
        return result

    def _expand(self, spec: str, stack: list[str]) -> Iterator[str]:
        members = [member.strip() for member in spec.split(",")]
        if not all(members):
            raise ModelIdError(f"{spec!r} has an empty member; separate chain members with single commas")
        for member in members:
            if member in self._aliases:
                if member in stack:
                    raise AliasCycleError([*stack[stack.index(member) :], member])
                for part in self._aliases[member]:
                    yield from self._expand(part, [*stack, member])
            elif ":" in member:
                self.get(member)
                yield member
            else:
                yield self._bare_name(member)

    def _bare_name(self, name: str) -> str:
        """A model name without its provider (`claude-sonnet-4-6`), when exactly one catalog entry has it."""
        found = sorted({model_id for (_, entry_name), model_id in self._names.items() if entry_name == name})
        if len(found) == 1:
            return found[0]
        if found:
            raise UnknownModelError(f"{name!r} names {len(found)} models ({', '.join(found)}); write one of them")
        raise self._unknown(name, None, known_provider=True)

    def _unknown(self, asked: str, provider: str | None, *, known_provider: bool) -> UnknownModelError:
        candidates = [*self._aliases, *(f"{p}:{n}" for p, n in self._names)]
        import difflib  # only for an unknown name: a call never needs it

        close = difflib.get_close_matches(asked, candidates, n=3, cutoff=0.6)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        if not known_provider:
            what = f"unknown provider {provider!r} in {asked!r} (known: {', '.join(self.providers())})."
        elif provider is None:
            what = f"{asked!r} is not an alias, a model id (<provider>:<model>) or a listed model name."
        else:
            what = f"unknown model {asked!r}."
        return UnknownModelError(f"{what}{hint}", operator_hint="To use a model the registry does not list, add "
                                                                  f"it under models: in {self._config_source}.")


def _members(chain: str) -> list[str]:
    return [member.strip() for member in chain.split(",")]


@lru_cache(maxsize=1)
def default_registry() -> ModelRegistry:
    """The built-in registry without user config, built once. Use ModelRegistry.load(config) for that."""
    return ModelRegistry.load()
