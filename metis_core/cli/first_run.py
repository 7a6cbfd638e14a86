"""First run: nothing configured yet. Say what to set, offer a local Ollama, else run the demo.

A provider counts as configured when it has a key, when config.yaml or routing.yaml names a
default model, or when a local endpoint (Ollama, an OpenAI-compatible server) is set explicitly.
Ollama is probed on its default port with a short timeout; on a terminal it is offered, without
one its use is only suggested. This module never changes config.yaml.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import httpx

from metis_core.cli.exit_codes import UsageProblem
from metis_core.cli.output import Terminal
from metis_core.cli.runtime_setup import providers_with_keys
from metis_core.config import SDK_BASE_URL_ENV, MetisConfig, ProviderConfig, base_url_env_var

OLLAMA_DEFAULT_URL = "http://127.0.0.1:11434"
OLLAMA_PROBE_ENV = "METIS_OLLAMA_PROBE_URL"
"""Where to look for Ollama on first run (default its local port); tests point it elsewhere."""
PROBE_TIMEOUT_SECONDS = 0.5
LOCAL_SERVER_TIMEOUT_SECONDS = 5.0
"""How long `GET /models` on a configured OpenAI-compatible server may take (it was set on purpose)."""
LOCAL_PROVIDERS = ("ollama", "openai_compatible")

GUIDANCE = """\
metis: no model provider is configured yet.

Set the API key of at least one provider, then run `metis chat` again:
  Anthropic      export ANTHROPIC_API_KEY=...
  OpenAI         export OPENAI_API_KEY=...
  Google Gemini  export GEMINI_API_KEY=...      (GOOGLE_API_KEY works too)
  OpenRouter     export OPENROUTER_API_KEY=...

Or use a local model server, no key needed:
  Ollama                    start `ollama serve`, then: metis chat --model ollama:<model>
                            on another host: export OLLAMA_HOST=host:11434 (or METIS_OLLAMA_BASE_URL)
  OpenAI-compatible server  export METIS_OPENAI_COMPATIBLE_BASE_URL=http://localhost:8000/v1
                            then: metis chat --model openai_compatible:<model>

Endpoints, keys and a default model can also go in {config_path} (docs/configuration.md).
"""


@dataclass(frozen=True)
class FirstRunChoice:
    model: str
    """The model the user accepted (a local Ollama one)."""


def has_any_provider(config: MetisConfig) -> bool:
    if providers_with_keys(config) or config.default_model or (config.home / "routing.yaml").is_file():
        return True
    for provider in LOCAL_PROVIDERS:
        names = [base_url_env_var(provider), SDK_BASE_URL_ENV.get(provider, "")]
        if config.provider(provider).base_url or any(name and os.environ.get(name) for name in names):
            return True
    return False


def probe_ollama(url: str) -> list[str] | None:
    """Model names a local Ollama serves, or None when nothing answers there."""
    try:
        response = httpx.get(f"{url.rstrip('/')}/api/tags", timeout=PROBE_TIMEOUT_SECONDS)
        response.raise_for_status()
        return [str(m["name"]) for m in response.json().get("models", []) if isinstance(m, dict) and "name" in m]
    except (httpx.HTTPError, ValueError, KeyError, AttributeError):
        return None


def guide(terminal: Terminal, config: MetisConfig) -> FirstRunChoice | None:
    """Print the guidance; return the accepted Ollama model, or None to run the demo."""
    out = terminal.out
    out.print(GUIDANCE.format(config_path=config.path), markup=False, highlight=False)
    url = os.environ.get(OLLAMA_PROBE_ENV) or OLLAMA_DEFAULT_URL
    models = probe_ollama(url)
    if models is None:
        out.print(f"No Ollama server answers on {url}.", markup=False)
    elif not models:
        out.print(f"An Ollama server answers on {url} but has no models; try `ollama pull llama3.2`.", markup=False)
    else:
        model = f"ollama:{models[0]}"
        out.print(f"An Ollama server answers on {url} with: {', '.join(models)}.", markup=False)
        if terminal.interactive:
            reply = input(f"Chat with {model} now? [Y/n] ").strip().lower()
            if reply in ("", "y", "yes"):
                if not config.provider("ollama").base_url:
                    config.providers["ollama"] = ProviderConfig(base_url=url)
                return FirstRunChoice(model)
        else:
            out.print(f"To use it: metis chat --model {model}", markup=False)
    out.print("\nNothing to chat with yet, so here is the offline demo instead. "
              "Its model is SCRIPTED; everything else is the real metis stack.\n", style="bold", markup=False)
    return None


def only_a_local_server(config: MetisConfig) -> bool:
    """An OpenAI-compatible endpoint is set and nothing else says which model to use."""
    if providers_with_keys(config) or config.default_model or (config.home / "routing.yaml").is_file():
        return False
    return bool(os.environ.get(base_url_env_var("openai_compatible"), "").strip()
                or config.provider("openai_compatible").base_url)


def served_models(config: MetisConfig) -> list[str]:
    """The model ids the OpenAI-compatible server lists (`GET <base_url>/models`), in its order."""
    url = config.base_url("openai_compatible").rstrip("/")
    key = config.api_key("openai_compatible")
    headers = {"Authorization": f"Bearer {key.get_secret_value()}"} if key is not None else {}
    try:
        response = httpx.get(f"{url}/models", headers=headers, timeout=LOCAL_SERVER_TIMEOUT_SECONDS)
        response.raise_for_status()
        listed = response.json().get("data", [])
        return [str(m["id"]) for m in listed if isinstance(m, dict) and isinstance(m.get("id"), str)]
    except (httpx.HTTPError, ValueError, AttributeError):
        return []


def local_server_model(terminal: Terminal, config: MetisConfig, *, ask: bool) -> str:
    """The model to use when only an OpenAI-compatible server is set: the first it lists (offered
    first when `ask`); a UsageProblem saying to pass --model when it lists none or is declined."""
    url = config.base_url("openai_compatible")
    models = served_models(config)
    if not models:
        raise UsageProblem(f"the OpenAI-compatible server at {url} lists no models (GET {url.rstrip('/')}/models); "
                           "name one: --model openai_compatible:<model>")
    model = f"openai_compatible:{models[0]}"
    others = f" (it also serves {', '.join(models[1:])})" if len(models) > 1 else ""
    if ask:
        reply = input(f"The server at {url} serves {', '.join(models)}. Chat with {model}? [Y/n] ").strip().lower()
        if reply not in ("", "y", "yes"):
            raise UsageProblem(f"name the model to use: --model openai_compatible:<model>{others}")
        return model
    terminal.err.print(f"using {model}, the first model the server at {url} lists{others}; "
                       "choose with --model", style="dim", markup=False)
    return model
