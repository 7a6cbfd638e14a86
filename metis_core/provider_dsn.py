"""Named providers declared in the environment: `METIS_PROVIDER_<NAME>=<kind>://<key>@<host>[:port][/path]`.

A DSN gives a provider of any adapter kind its own name, endpoint and key, so two servers of the
same kind (say two OpenAI-compatible ones) live side by side as `<name>:<model>`. The key is a
SecretStr from the moment it is parsed; error messages name the variable and the problem, never
the value. Parsing only: config.py decides when to read a variable (lazily, by name).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

from pydantic import SecretStr

from metis_core.errors import ConfigError

DSN_ENV_PREFIX = "METIS_PROVIDER_"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_HOST = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)$")
DSN_FORM = "<kind>://<key>@<host>[:port][/path] (kind may end in +http or +https)"


@dataclass(frozen=True)
class NamedProvider:
    """One provider from a DSN. `repr` shows the key as '**********' (SecretStr)."""

    name: str
    kind: str
    """The adapter it speaks through: anthropic, openai, openai_compatible, ollama, ..."""
    base_url: str
    api_key: SecretStr | None = field(default=None, compare=False)
    variable: str = ""


def dsn_variable(name: str) -> str:
    return f"{DSN_ENV_PREFIX}{name.upper()}"


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_provider_dsn(name: str, value: str, kinds: frozenset[str], *, variable: str = "") -> NamedProvider:
    """Read one DSN. The transport is https, or http for a loopback host, unless `+http`/`+https` says."""
    variable = variable or dsn_variable(name)

    def bad(problem: str) -> ConfigError:
        return ConfigError(f"{variable}: {problem}; write it as {DSN_FORM}")

    if not _NAME.match(name):
        raise bad(f"the provider name {name!r} must be lower-case letters, digits and underscores")
    if name in kinds:
        raise bad(f"{name!r} is a built-in provider; give the named provider another name")
    scheme, separator, rest = value.strip().partition("://")
    if not separator:
        raise bad("it is not a DSN (no '://')")
    kind, _, transport = scheme.lower().partition("+")
    if kind not in kinds:
        raise bad(f"unknown provider kind {kind!r} (known: {', '.join(sorted(kinds))})")
    if transport not in ("", "http", "https"):
        raise bad(f"unknown transport '+{transport}'")
    userinfo, at, location = rest.rpartition("@")
    if not at:
        userinfo, location = "", rest
    hostport, slash, path = location.partition("/")
    host, port = hostport, ""
    if hostport.startswith("["):
        host, _, after = hostport.partition("]")
        host += "]"
        port = after.removeprefix(":")
    elif ":" in hostport:
        host, _, port = hostport.partition(":")
    if not host or not _HOST.match(host):
        raise bad("the host is missing or malformed")
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise bad("the port must be a number from 1 to 65535")
    transport = transport or ("http" if _is_loopback(host) else "https")
    url = f"{transport}://{host}" + (f":{port}" if port else "") + (f"/{path}".rstrip("/") if slash else "")
    key = unquote(userinfo).strip()
    return NamedProvider(name, kind, url, SecretStr(key) if key else None, variable)


def dsn_names(environ: Mapping[str, str]) -> list[str]:
    """The provider names the environment declares (variables set and non-empty)."""
    return sorted(var[len(DSN_ENV_PREFIX):].lower() for var, value in environ.items()
                  if var.startswith(DSN_ENV_PREFIX) and len(var) > len(DSN_ENV_PREFIX) and value.strip())
