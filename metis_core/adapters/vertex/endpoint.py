"""Vertex AI URLs: `https://{location}-aiplatform.googleapis.com/v1/projects/{p}/locations/{l}/...`.

The location is GOOGLE_CLOUD_LOCATION (or CLOUD_ML_REGION, the Anthropic SDK's variable), else
`global`, whose host has no region prefix (`aiplatform.googleapis.com`). The project is
GOOGLE_CLOUD_PROJECT (or ANTHROPIC_VERTEX_PROJECT_ID), else the project of the Application
Default Credentials. A base URL configured by hand (a proxy, a test server) is used as given.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from urllib.parse import urlencode

from metis_core.errors import ConfigError

GLOBAL = "global"
DEFAULT_HOST = "https://aiplatform.googleapis.com"
LOCATION_ENV = ("GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION")
PROJECT_ENV = ("GOOGLE_CLOUD_PROJECT", "ANTHROPIC_VERTEX_PROJECT_ID")


def _first(names: tuple[str, ...], environ: Mapping[str, str]) -> str:
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            return value
    return ""


def location(environ: Mapping[str, str] | None = None) -> str:
    return _first(LOCATION_ENV, os.environ if environ is None else environ) or GLOBAL


def host_for(base_url: str, where: str) -> str:
    """The regional host for the default base URL; any other base URL unchanged."""
    base = base_url.rstrip("/")
    if base != DEFAULT_HOST or where == GLOBAL:
        return base
    return f"https://{where}-aiplatform.googleapis.com"


def vertex_url(base_url: str, path: str, query: Mapping[str, str], credential_project: Callable[[], str | None],
               provider: str, environ: Mapping[str, str] | None = None) -> str:
    """`path` is `/publishers/<publisher>/models/<model>:<method>`."""
    env = os.environ if environ is None else environ
    where = location(env)
    project = _first(PROJECT_ENV, env) or credential_project()
    if not project:
        raise ConfigError(
            f"{provider} needs a Google Cloud project: set GOOGLE_CLOUD_PROJECT, or use credentials that "
            "name one (`gcloud config set project <id>` then `gcloud auth application-default login`)"
        )
    url = f"{host_for(base_url, where)}/v1/projects/{project}/locations/{where}{path}"
    return f"{url}?{urlencode(query)}" if query else url
