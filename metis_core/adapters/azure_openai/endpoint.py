"""Where an Azure OpenAI request goes: the v1 endpoint, or a deployment path with an `api-version`.

`https://<resource>.openai.azure.com/openai/v1` (or a Foundry `...services.ai.azure.com/openai/v1`)
is used as given, the deployment travelling as `model` in the body. A bare resource URL gets
`/openai/v1` added, unless `OPENAI_API_VERSION` / `AZURE_OPENAI_API_VERSION` names a dated version:
then the classic `/openai/deployments/<deployment>/...?api-version=<version>` form is used.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import quote, urlencode

API_VERSION_ENV = ("AZURE_OPENAI_API_VERSION", "OPENAI_API_VERSION")
V1_SUFFIX = "/openai/v1"
V1_VERSIONS = frozenset({"", "v1", "latest", "preview"})
"""Versions the v1 endpoint takes: none (GA), or `preview` / `latest` as its `api-version` query."""


def api_version(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    for name in API_VERSION_ENV:
        value = env.get(name, "").strip()
        if value:
            return value
    return ""


def azure_url(base_url: str, path: str, deployment: str, query: Mapping[str, str], version: str) -> str:
    """The full URL of one call. `path` is the OpenAI path (`/chat/completions`, `/responses`)."""
    base = base_url.rstrip("/")
    params = dict(query)
    if base.endswith(V1_SUFFIX) or version in V1_VERSIONS:
        if not base.endswith(V1_SUFFIX):
            base = base.removesuffix("/openai") + V1_SUFFIX
        if version in ("preview", "latest"):
            params["api-version"] = version
        url = base + path
    else:
        base = base.removesuffix("/openai")
        if path == "/responses":  # the Responses API has no per-deployment path: model goes in the body
            url = f"{base}/openai{path}"
        else:
            url = f"{base}/openai/deployments/{quote(deployment, safe='')}{path}"
        params["api-version"] = version
    return f"{url}?{urlencode(params)}" if params else url
