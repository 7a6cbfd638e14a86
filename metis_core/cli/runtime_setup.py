"""Opening the Runtime a command works with: config from METIS_HOME, a default model, confirmations.

When the configuration names no default model, the first provider with a key supplies one
(Anthropic, OpenAI, Gemini, OpenRouter, in that order), so `metis chat` works right after
exporting a single key. It does not prompt, print or decide what happens on first run
(first_run.py does).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from metis_core.config import MetisConfig, load_config, metis_home
from metis_core.errors import MissingAPIKeyError

if TYPE_CHECKING:  # the agent loads when a runtime is opened: commands that only read config stay quick
    from metis_core.agent.confirmation import Confirmer
    from metis_core.agent.runtime import Runtime
    from metis_core.agent.tools.python_tool import PythonTool
    from metis_core.cassettes.cassette import CassetteMode
    from metis_core.transport.http import AsyncHttp

CLI_ASYNC_HTTP: AsyncHttp = "httpx"
"""A command's turns run on asyncio, so their calls are async; a CLI process is short, and httpx starts
~60 ms sooner than aiohttp (its import builds two SSL contexts) for ~0.35 ms more per call
(docs/transport.md)."""

DEFAULT_MODEL_BY_PROVIDER = {
    "anthropic": "anthropic:claude-sonnet-4-6",
    "openai": "openai:gpt-4o",
    "gemini": "gemini:gemini-2.5-flash",
    "openrouter": "openrouter:openai/gpt-4o-mini",
}


def load_cli_config() -> MetisConfig:
    return load_config(metis_home())


def providers_with_keys(config: MetisConfig) -> list[str]:
    return [p for p in DEFAULT_MODEL_BY_PROVIDER if config.api_key(p) is not None]


def fallback_default_model(config: MetisConfig) -> str | None:
    """The model new sessions use when config.yaml names none: the first keyed provider's."""
    keyed = providers_with_keys(config)
    return DEFAULT_MODEL_BY_PROVIDER[keyed[0]] if keyed else None


def open_runtime(
    config: MetisConfig, *, confirmer: Confirmer | None = None, approve_everything: bool = False,
    tool_modules: Sequence[Path] = (),
    db_path: Path | None = None,
    async_http: AsyncHttp = CLI_ASYNC_HTTP,
) -> Runtime:
    """The Runtime of one command, offering the built-in tools plus the @tool functions of `tool_modules`
    and of config's `tool_modules` (loaded first, so a broken module fails before anything is opened);
    `db_path` elsewhere than METIS_HOME/metis.db (`--no-log`); `async_http="aiohttp"` for a command that
    serves (`metis serve`); no `confirmer` denies every confirmation."""
    from metis_core.agent.confirmation import deny_all
    from metis_core.agent.runtime import Runtime
    from metis_core.cli.cassette_flags import active_cassette

    confirmer = confirmer or deny_all
    extra = python_tools(config, tool_modules)
    active = active_cassette()
    if active is not None:
        runtime = with_learning(_cassette_runtime(config, active[0], active[1], confirmer, approve_everything,
                                                  db_path, async_http))
    else:
        if config.defaults.model is None:
            config.defaults.model = fallback_default_model(config)
        runtime = with_learning(Runtime(home=config.home, config=config, confirmer=confirmer,
                                        approve_everything=approve_everything, db_path=db_path,
                                        async_http=async_http))
        runtime.sessions.end_inactive()  # sessions idle past sessions.inactivity_timeout_hours: abandoned
    try:
        for made in extra:
            runtime.tools.register(made)
    except BaseException:
        runtime.close()
        raise
    return runtime


def with_learning(runtime: Runtime) -> Runtime:
    """Attach the learning layer unless config.yaml says `learning: {enabled: false}`."""
    from metis_core.learning.loop import LearningLoop
    from metis_core.learning.settings import LearningSettings

    try:
        settings = LearningSettings.from_config(runtime.config.learning)
        if settings.enabled:
            LearningLoop.attach(runtime, settings)
    except BaseException:
        runtime.close()
        raise
    return runtime


def python_tools(config: MetisConfig, tool_modules: Sequence[Path] = ()) -> list[PythonTool]:
    """The @tool functions of config's `tool_modules` (relative to METIS_HOME) and of `tool_modules`."""
    from metis_core.agent.tools.python_tool import load_tool_module

    paths = [p if p.is_absolute() else config.home / p for p in (Path(m).expanduser() for m in config.tool_modules)]
    return [made for path in [*paths, *tool_modules] for made in load_tool_module(path)]


def _cassette_runtime(config: MetisConfig, mode: CassetteMode, path: Path, confirmer: Confirmer,
                      approve_everything: bool, db_path: Path | None, async_http: AsyncHttp) -> Runtime:
    """A Runtime whose client records to or replays from `path` (`--record` / `--replay`)."""
    from metis_core.adapters.client import ModelClient
    from metis_core.adapters.registry import provider_keys
    from metis_core.agent.runtime import Runtime

    client = ModelClient(config=config, record=path if mode == "record" else None,
                         replay=path if mode == "replay" else None, async_http=async_http)
    configured: set[str] | None = None
    if mode == "replay":
        configured = set(provider_keys())  # a replay sends nothing, so no provider needs a key
        cassette = client.cassette
        if config.defaults.model is None and cassette is not None and cassette.entries:
            config.defaults.model = str(cassette.entries[0].canonical.get("model"))
    elif config.defaults.model is None:
        config.defaults.model = fallback_default_model(config)
    return Runtime(home=config.home, config=config, client=client, confirmer=confirmer,
                   approve_everything=approve_everything, configured_providers=configured, db_path=db_path)


def require_a_key_for(runtime: Runtime, spec: str) -> None:
    """Fail early (exit 3) when no member of `spec` has a key, rather than at the first message."""
    members = runtime.registry.parse(spec)
    if any(runtime.is_configured(member) for member in members):
        return
    provider = members[0].partition(":")[0]
    raise MissingAPIKeyError(provider, runtime.config.api_key_env_vars(provider)[0])
