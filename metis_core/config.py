"""The configuration home: METIS_HOME/config.yaml plus environment overrides (docs/configuration.md).

Resolves, per provider, the base URL and API key with a fixed precedence (environment over file
over built-in default) and holds the user's model, price, alias and chain overrides for the
registry and price table to apply. Named providers (`METIS_PROVIDER_<NAME>` DSNs, provider_dsn.py)
are read on first use of their name. Keys are SecretStr end to end: they never reach a repr, a dump,
a log line or an exception. It does not open connections or check that a key is valid.
"""

import os
import re
import stat
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SecretStr, ValidationError, field_validator

from metis_core.errors import ConfigError, InsecureKeyFileError, MissingAPIKeyError
from metis_core.field_defaults import empty_dict, empty_list
from metis_core.key_env import STANDARD_KEY_ENV
from metis_core.yaml_text import read_yaml_file

if TYPE_CHECKING:
    from metis_core.agent_config import (
        AgentSections,
        CompactionConfig,
        DelegationConfig,
        McpServerConfig,
        MemoryConfig,
        SkillsConfig,
    )
    from metis_core.provider_dsn import NamedProvider

CONFIG_FILE_NAME = "config.yaml"

DEFAULT_BASE_URLS: dict[str, str] = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com/v1",
    "openai_responses": "https://api.openai.com/v1",
    "gemini": "https://generativelanguage.googleapis.com",
    "ollama": "http://127.0.0.1:11434",
    "openrouter": "https://openrouter.ai/api/v1",
    # Cloud platforms (docs/adapters/azure.md, vertex.md): Vertex picks its regional host itself.
    "vertex": "https://aiplatform.googleapis.com",
    "vertex_anthropic": "https://aiplatform.googleapis.com",
}

# The variables each provider's official SDK reads, so an existing shell setup just works.
SDK_BASE_URL_ENV: dict[str, str] = {
    "anthropic": "ANTHROPIC_BASE_URL",
    "openai": "OPENAI_BASE_URL",
    "openai_responses": "OPENAI_BASE_URL",
    "ollama": "OLLAMA_HOST",
    "azure": "AZURE_OPENAI_ENDPOINT",
    "azure_responses": "AZURE_OPENAI_ENDPOINT",
}
# Local servers usually run without authentication; a key is used when one is configured.
# Bedrock without a bearer API key signs with the AWS credential chain (adapters/bedrock/signing.py).
KEYLESS_PROVIDERS = frozenset({"ollama", "openai_compatible", "bedrock"})
REGION_ENV: dict[str, tuple[str, ...]] = {"bedrock": ("AWS_REGION", "AWS_DEFAULT_REGION")}
"""Variables a regional provider's default base URL is built from (watched like the key variables)."""
CLOUD_CREDENTIAL_ENV: dict[str, tuple[str, ...]] = {
    "azure": ("AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY"),
    "azure_responses": ("AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY"),
    "vertex": ("GOOGLE_CLOUD_PROJECT", "GOOGLE_APPLICATION_CREDENTIALS"),
    "vertex_anthropic": ("GOOGLE_CLOUD_PROJECT", "ANTHROPIC_VERTEX_PROJECT_ID", "GOOGLE_APPLICATION_CREDENTIALS"),
}
"""Cloud platforms, which fall back to their own credential (Entra ID, Google ADC) when no key is
set, and the variables whose presence says the platform is set up here."""
PROVIDER_KINDS = frozenset(STANDARD_KEY_ENV)
"""The built-in provider keys, each an adapter kind a named provider may speak through."""

AGENT_SECTION_KEYS = ("mcp_servers", "delegation", "memory", "skills", "compaction")
"""Sections validated by agent_config.AgentSections, only when the file has them (else defaults on first use)."""

_OLLAMA_DEFAULT_PORT = 11434
_NAME_FORBIDDEN = re.compile(r"[:,\s]")


@lru_cache(maxsize=256)
def _encoded_name(name: str) -> Any:
    """An environment variable's name as os.environ's own dict keys it (bytes on POSIX)."""
    return os.environ.encodekey(name)


def metis_home(environ: Mapping[str, str] | None = None) -> Path:
    """METIS_HOME, or ~/.metis when it is unset."""
    env = os.environ if environ is None else environ
    return Path(env.get("METIS_HOME") or "~/.metis").expanduser()


def base_url_env_var(provider: str) -> str:
    """`METIS_<PROVIDER>_BASE_URL`, e.g. METIS_OPENAI_RESPONSES_BASE_URL."""
    return f"METIS_{re.sub(r'[^A-Za-z0-9]', '_', provider).upper()}_BASE_URL"


def bedrock_default_url(env: Mapping[str, str]) -> str:
    """`https://bedrock-runtime.<region>.amazonaws.com` for AWS_REGION / AWS_DEFAULT_REGION, else the AWS
    profile's region (read by botocore when it is installed), else "" (the caller names what to set)."""
    region = env.get("AWS_REGION", "").strip() or env.get("AWS_DEFAULT_REGION", "").strip()
    if not region:
        try:
            import botocore.session
        except ImportError:
            return ""
        region = botocore.session.Session().get_config_variable("region") or ""
    return f"https://bedrock-runtime.{region}.amazonaws.com" if region else ""


def ollama_host_to_url(value: str) -> str:
    """OLLAMA_HOST as the Ollama CLI reads it: `host`, `host:port`, `:port` or a full URL."""
    value = value.strip()
    if "://" in value:
        scheme, _, rest = value.partition("://")
    else:
        scheme, rest = "http", value
    rest = rest.rstrip("/")
    host, _, path = rest.partition("/")
    if host.startswith("["):  # [ipv6]:port
        bracket_end = host.find("]")
        name, port = host[: bracket_end + 1], host[bracket_end + 2 :]
    else:
        name, _, port = host.partition(":")
    name = name or "127.0.0.1"
    if not port:
        port = "443" if scheme == "https" else str(_OLLAMA_DEFAULT_PORT)
    suffix = f"/{path}" if path else ""
    return f"{scheme}://{name}:{port}{suffix}"


class ProviderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built on first validation (a file)

    base_url: str | None = None
    api_key_env: str | None = None
    """Name of the environment variable holding the key (replaces the standard one)."""
    api_key: SecretStr | None = None
    """Allowed only when config.yaml has mode 0600."""
    headers: dict[str, SecretStr] = Field(default_factory=empty_dict)
    """Extra HTTP headers; values are secret because they often carry credentials."""


class DefaultsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built on first validation (a file)

    model: str | None = None
    """Default model id, alias or chain for new sessions."""
    hosted_tools: dict[str, dict[str, Any]] = Field(default_factory=empty_dict)
    """Provider-hosted tools every turn asks for, name -> settings (`{web_search: {}}`); routing then
    only picks models whose registry entry declares them (docs/hosted-tools.md)."""


class SessionsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built on first validation (a file)

    inactivity_timeout_hours: float = Field(default=24.0, gt=0)
    """An open session idle this long is ended as `abandoned` (session.ended) by the next metis
    command, and by `metis serve` / `metis gateway serve` on a timer."""
    sweep_interval_minutes: float = Field(default=10.0, ge=0)
    """How often a long-running server ends idle sessions; 0 leaves it to the CLI commands."""
    share_traces: bool = False
    """Opt in: turn.started carries the user's message, scrubbed, recorded as user_controlled."""


class ServeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built on first validation (a file)

    allowed_hosts: list[str] = Field(default_factory=empty_list)
    """Host names `metis serve` and `metis gateway serve` answer to besides loopback and the bound
    address (`name` on any port, or `name:port`); added to by `--allowed-host`."""
    allowed_origins: list[str] = Field(default_factory=empty_list)
    """Origins (`https://metis.example`) whose pages may write and open the event stream; `--allowed-origin`."""


class MetisConfig(BaseModel):
    """The whole file. The agent sections (mcp_servers, delegation, memory, skills) are AgentSections,
    validated at load when the file has them and built with their defaults on first use otherwise:
    a model call needs none of them, so a process that only calls never builds their classes."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # built on first validation (a file)

    home: Path
    path: Path
    """The config file, whether or not it exists."""
    providers: dict[str, ProviderConfig] = Field(default_factory=empty_dict)
    defaults: DefaultsConfig = Field(default_factory=DefaultsConfig)
    sessions: SessionsConfig = Field(default_factory=SessionsConfig)
    serve: ServeConfig = Field(default_factory=ServeConfig)
    models: dict[str, dict[str, Any]] = Field(default_factory=empty_dict)
    """Registry entries that override or extend models.yaml, keyed by model id."""
    prices: dict[str, dict[str, Any]] = Field(default_factory=empty_dict)
    """Price entries (per-million-token USD) that override prices.yaml, keyed by model id."""
    aliases: dict[str, str] = Field(default_factory=empty_dict)
    chains: dict[str, list[str]] = Field(default_factory=empty_dict)
    learning: dict[str, Any] = Field(default_factory=empty_dict)
    """Feedback, evaluator and pattern-store settings; validated by metis_core.learning.settings."""
    tool_modules: list[Path] = Field(default_factory=empty_list)
    """Python files whose @tool functions every CLI session offers; relative to METIS_HOME."""
    database_url: str | None = None
    """postgresql://... puts every store on PostgreSQL (METIS_DATABASE_URL wins); unset: METIS_HOME/metis.db."""
    database_pool_size: int | None = Field(default=None, ge=2)
    """On PostgreSQL, the most connections one process's stores share (METIS_DATABASE_POOL_SIZE wins; 8)."""

    _environ: Mapping[str, str] = PrivateAttr(default_factory=lambda: os.environ)
    _named: dict[str, Any] = PrivateAttr(default_factory=dict)
    """name -> its NamedProvider or None; provider_dsn loads only when a name is not built in."""
    _watched: dict[str, tuple[str, ...]] = PrivateAttr(default_factory=dict)
    _watched_keys: dict[str, tuple[Any, ...]] = PrivateAttr(default_factory=dict)
    """provider -> its watched names as os.environ's own dict keys them (`provider_environment_state`)."""
    _agent: "AgentSections | None" = PrivateAttr(default=None)

    @classmethod
    def from_file_data(cls, data: Mapping[str, Any], home: Path, path: Path) -> "MetisConfig":
        """Validate a config file's top-level mapping; raises pydantic's ValidationError."""
        if not data:  # no file, or an empty one: all defaults, nothing to validate (no schema is built)
            return cls.model_construct(home=Path(home), path=Path(path), defaults=DefaultsConfig.model_construct(),
                                       sessions=SessionsConfig.model_construct(), serve=ServeConfig.model_construct())
        sections = {key: data[key] for key in AGENT_SECTION_KEYS if key in data}
        config = cls.model_validate({**{k: v for k, v in data.items() if k not in sections}, "home": home,
                                     "path": path})
        if sections:
            from metis_core.agent_config import AgentSections

            config._agent = AgentSections.model_validate(sections)
        return config

    @property
    def agent_sections(self) -> "AgentSections":
        if self._agent is None:
            from metis_core.agent_config import AgentSections

            self._agent = AgentSections()
        return self._agent

    @property
    def mcp_servers(self) -> "dict[str, McpServerConfig]":
        return self.agent_sections.mcp_servers

    @property
    def declared_mcp_servers(self) -> "dict[str, McpServerConfig]":
        """The MCP servers config.yaml declares (read-only use): a file without agent sections builds none."""
        return self._agent.mcp_servers if self._agent is not None else {}

    @property
    def delegation(self) -> "DelegationConfig":
        return self.agent_sections.delegation

    @property
    def memory(self) -> "MemoryConfig":
        return self.agent_sections.memory

    @property
    def skills(self) -> "SkillsConfig":
        return self.agent_sections.skills

    @property
    def compaction(self) -> "CompactionConfig":
        return self.agent_sections.compaction

    @field_validator("chains", mode="before")
    @classmethod
    def _chain_strings(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {k: [m.strip() for m in v.split(",")] if isinstance(v, str) else v for k, v in value.items()}
        return value

    @field_validator("aliases", "chains")
    @classmethod
    def _plain_names(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name in value:
            if not name or _NAME_FORBIDDEN.search(name):
                raise ValueError(f"alias or chain name {name!r} must not be empty or contain ':', ',' or spaces")
        return value

    # --- resolution ------------------------------------------------------------------------

    def provider(self, provider: str) -> ProviderConfig:
        """The provider's section of the file, or an empty one (a new object: callers may change it)."""
        return self.providers.get(provider) or ProviderConfig()

    def named_provider(self, name: str) -> "NamedProvider | None":
        """The provider `METIS_PROVIDER_<NAME>` declares, parsed on first use; None if unset or built in."""
        if name in PROVIDER_KINDS:
            return None
        try:
            known: NamedProvider | None = self._named[name]
            return known
        except KeyError:
            pass
        from metis_core.provider_dsn import dsn_variable, parse_provider_dsn

        value = self._environ.get(dsn_variable(name), "").strip()
        found = parse_provider_dsn(name, value, PROVIDER_KINDS) if value else _vendor_provider(name)
        self._named[name] = found
        return found

    def named_providers(self) -> "dict[str, NamedProvider]":
        """Every named provider the environment declares (parses them all: a bad DSN raises here)."""
        from metis_core.provider_dsn import dsn_names, dsn_variable, parse_provider_dsn

        found: dict[str, NamedProvider] = {}
        for name in dsn_names(self._environ):
            named = self.named_provider(name)
            if named is None:  # a built-in name: parsing says why that is refused
                parse_provider_dsn(name, self._environ[dsn_variable(name)], PROVIDER_KINDS)
            else:
                found[name] = named
        return found

    def provider_kind(self, provider: str) -> str:
        """The adapter kind behind a provider key: a named provider's kind, else the key itself."""
        named = self.named_provider(provider)
        return named.kind if named is not None else provider

    def is_keyless(self, provider: str) -> bool:
        """Local kinds run without a key; a named vendor (provider_presets.py) always needs one."""
        if provider in _vendor_names():
            return False
        return self.provider_kind(provider) in KEYLESS_PROVIDERS

    def cloud_configured(self, provider: str) -> bool:
        """True for a cloud platform set up here: a base URL in the file or one of its variables set."""
        kind = self.provider_kind(provider)
        if kind not in CLOUD_CREDENTIAL_ENV:
            return False
        configured = self.providers.get(provider)
        names = (base_url_env_var(provider), *CLOUD_CREDENTIAL_ENV[kind])
        return bool(configured and configured.base_url) or any(self._environ.get(name, "").strip() for name in names)

    def base_url(self, provider: str) -> str:
        """Env METIS_<PROVIDER>_BASE_URL, a named provider's DSN, the SDK variable, the file, the default."""
        env = self._environ
        url = env.get(base_url_env_var(provider), "").strip()
        if not url and provider not in PROVIDER_KINDS:
            named = self.named_provider(provider)
            url = named.base_url if named is not None else ""
        if not url and provider in SDK_BASE_URL_ENV:
            url = env.get(SDK_BASE_URL_ENV[provider], "").strip()
            if url and provider == "ollama":
                url = ollama_host_to_url(url)
        configured = self.providers.get(provider)  # not provider(): this runs on every call
        url = url or (configured.base_url if configured else "") or DEFAULT_BASE_URLS.get(provider, "")
        if not url and self.provider_kind(provider) == "bedrock":
            url = bedrock_default_url(env)
        if not url:
            raise ConfigError(
                f"no base URL for provider {provider!r}: set providers.{provider}.base_url in "
                f"{self.path} or the environment variable {base_url_env_var(provider)}"
                + (" (or AWS_REGION for the region's endpoint)" if self.provider_kind(provider) == "bedrock" else "")
            )
        return url.rstrip("/")

    def api_key_env_vars(self, provider: str) -> tuple[str, ...]:
        configured = self.providers.get(provider)
        if configured is not None and configured.api_key_env:
            return (configured.api_key_env,)
        default = f"{re.sub(r'[^A-Za-z0-9]', '_', provider).upper()}_API_KEY"
        return STANDARD_KEY_ENV.get(provider, (default,))

    def api_key(self, provider: str) -> SecretStr | None:
        """A named provider's DSN key, else the key from the environment, else the config file, else None."""
        named = self.named_provider(provider)
        if named is not None and named.api_key is not None:
            return named.api_key
        for name in self.api_key_env_vars(provider):
            value = self._environ.get(name, "").strip()
            if value:
                return SecretStr(value)
        configured = self.providers.get(provider)
        return configured.api_key if configured is not None else None

    def require_api_key(self, provider: str) -> SecretStr | None:
        """Like api_key, but raise MissingAPIKeyError for providers that need one.

        Returns None only for keyless local providers (ollama, openai_compatible, or a named provider
        of those kinds) with no key set.
        """
        key = self.api_key(provider)
        if key is not None or self.is_keyless(provider) or self.provider_kind(provider) in CLOUD_CREDENTIAL_ENV:
            return key
        named = self.named_provider(provider)
        variable = f"{named.variable} with a key (kind://KEY@host)" if named and named.variable \
            else self.api_key_env_vars(provider)[0]
        raise MissingAPIKeyError(provider, variable)

    def provider_environment(self, provider: str) -> tuple[str | None, ...]:
        """The current values of every environment variable `base_url` and `api_key` read for `provider`.

        Equal tuples mean both would answer as before, so a caller may keep what it built from them
        (the model client keeps the headers and URL of each provider instead of re-reading them per call).
        """
        # This runs on every call: the private attributes are read from pydantic's dict directly (its
        # attribute hook costs ~3 µs a read), and os.environ through its own dict of encoded names
        # (its `get` raises and catches a KeyError for every unset variable). Same values either way.
        private = self.__pydantic_private__
        assert private is not None
        watched: dict[str, tuple[str, ...]] = private["_watched"]
        names = watched.get(provider)
        if names is None:
            sdk = (SDK_BASE_URL_ENV[provider],) if provider in SDK_BASE_URL_ENV else ()
            names = watched[provider] = (base_url_env_var(provider), *sdk, *self.api_key_env_vars(provider),
                                         *REGION_ENV.get(provider, ()))
        env: Mapping[str, str] = private["_environ"]
        if type(env) is os._Environ:
            data = getattr(env, "_data", None)
            if isinstance(data, dict):
                values = [data.get(_encoded_name(name)) for name in names]
                return tuple([None if value is None else env.decodevalue(value) for value in values])
        return tuple([env.get(name) for name in names])

    def provider_environment_state(self, provider: str) -> tuple[Any, ...]:
        """`provider_environment` for comparison only: the values as os.environ's own dict holds them
        (encoded, bytes on POSIX), not decoded. Decoding is one-to-one, so two states are equal exactly
        when the two `provider_environment` tuples are; the names are encoded once per provider. The
        model client compares this on every call (tests/test_config.py holds the two verdicts equal)."""
        watch = self.provider_environment_watch(provider)
        if watch is None:
            return self.provider_environment(provider)
        data, keys = watch
        return tuple([data.get(key) for key in keys])

    def provider_environment_watch(self, provider: str) -> tuple[dict[Any, Any], tuple[Any, ...]] | None:
        """(os.environ's own dict, `provider`'s watched names as that dict keys them), when this
        configuration reads os.environ: `tuple([data.get(key) for key in keys])` is then exactly
        `provider_environment_state(provider)`, a read the model client makes on every call (a named
        fast path, docs/gateway.md "What it costs"). None for an injected mapping:
        the caller asks `provider_environment_state` then."""
        private = self.__pydantic_private__
        assert private is not None
        env: Mapping[str, str] = private["_environ"]
        if type(env) is os._Environ:
            data = getattr(env, "_data", None)
            if isinstance(data, dict):
                keys: tuple[Any, ...] | None = private["_watched_keys"].get(provider)
                if keys is None:
                    self.provider_environment(provider)  # the names, as that method finds them
                    keys = private["_watched_keys"][provider] = tuple(
                        [_encoded_name(name) for name in private["_watched"][provider]])
                return data, keys
        return None

    def extra_headers(self, provider: str) -> dict[str, str]:
        """Headers to send as-is; revealed here only, for the transport to use."""
        configured = self.providers.get(provider)
        if configured is None:
            return {}
        return {k: v.get_secret_value() for k, v in configured.headers.items()}

    @property
    def default_model(self) -> str | None:
        return self.defaults.model


def load_config(home: Path | None = None, *, environ: Mapping[str, str] | None = None) -> MetisConfig:
    """Read METIS_HOME/config.yaml (a missing file means all defaults) and bind the environment."""
    env = os.environ if environ is None else environ
    root = home if home is not None else metis_home(env)
    path = root / CONFIG_FILE_NAME
    data = _read_yaml(path) if path.is_file() else {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping (key: value), got {type(data).__name__}")
    if (root / "openrouter-models.json").is_file():  # written by `metis models update openrouter`
        from metis_core.models.openrouter_catalog import with_catalog

        data = dict(with_catalog(root, data))
    try:
        config = MetisConfig.from_file_data(data, root, path)
    except ValidationError as exc:
        raise ConfigError(_describe_validation_error(path, exc)) from None
    if any(p.api_key is not None for p in config.providers.values()):
        _require_private_file(path)
    config._environ = env
    return config


def _read_yaml(path: Path) -> Any:
    return read_yaml_file(path, ConfigError, "config file") or {}


def _describe_validation_error(path: Path, exc: ValidationError) -> str:
    # Never include the offending input: it may be an API key.
    problems = [
        f"{'.'.join(str(part) for part in error['loc']) or '(top level)'}: {error['msg']}"
        for error in exc.errors(include_input=False, include_url=False)
    ]
    return f"{path}: invalid configuration: " + "; ".join(problems)


def _require_private_file(path: Path) -> None:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise InsecureKeyFileError(str(path), mode)


@lru_cache(maxsize=1)
def _vendor_names() -> frozenset[str]:
    from metis_core.provider_presets import VENDOR_PRESETS

    return frozenset(VENDOR_PRESETS)


def _vendor_provider(name: str) -> "NamedProvider | None":
    """A vendor metis knows by name (provider_presets.py), as a named openai_compatible provider;
    its key comes from the vendor's usual variable (`api_key`'s default), not from here."""
    from metis_core.provider_presets import VENDOR_PRESETS

    preset = VENDOR_PRESETS.get(name)
    if preset is None:
        return None
    from metis_core.provider_dsn import NamedProvider

    return NamedProvider(name=name, kind="openai_compatible", base_url=preset.base_url)

