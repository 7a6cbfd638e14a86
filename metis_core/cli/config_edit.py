"""Changing METIS_HOME/config.yaml from the command line (`models default`, `aliases`, `keys`).

The file is read as data, changed, validated as a whole configuration and written back atomically
(a temporary file renamed over it), so a failed change leaves it as it was. A file holding a key
is written with mode 0600, as config.py requires. YAML comments cannot survive a rewrite, so when
the old text has any, it is kept beside the file as config.yaml.bak and the caller says so.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from metis_core.config import CONFIG_FILE_NAME, MetisConfig, metis_home
from metis_core.errors import ConfigError
from metis_core.yaml_text import read_yaml_file

PRIVATE_MODE = 0o600


@dataclass(frozen=True)
class ConfigChange:
    path: Path
    commented_copy: Path | None
    """Where the old text went when it had comments (a rewrite drops them)."""


def config_path(home: Path | None = None) -> Path:
    return (home or metis_home()) / CONFIG_FILE_NAME


def read_config_data(path: Path) -> dict[str, Any]:
    data = read_yaml_file(path, ConfigError, "config file") if path.is_file() else None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping (key: value); fix it before changing it")
    return data


def change_config(change: Callable[[dict[str, Any]], None], home: Path | None = None) -> ConfigChange:
    """Apply `change` to config.yaml's data, check the result loads, and write it back."""
    import yaml  # writing only: the listings that import this module read config.yaml without it

    path = config_path(home)
    old_text = path.read_text(encoding="utf-8") if path.is_file() else ""
    data = read_config_data(path)
    change(data)
    _check_valid(data, path)
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False) if data else ""
    private = _holds_a_key(data) or (path.is_file() and not (os.stat(path).st_mode & 0o077))
    temp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_MODE if private else 0o644)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(temp, PRIVATE_MODE if private else 0o644)
        copy = None
        if any(line.lstrip().startswith("#") for line in old_text.splitlines()):
            copy = path.with_name(CONFIG_FILE_NAME + ".bak")
            copy.write_text(old_text, encoding="utf-8")
            os.chmod(copy, os.stat(path).st_mode & 0o777)
        temp.replace(path)
    finally:
        temp.unlink(missing_ok=True)
    return ConfigChange(path, copy)


def _holds_a_key(data: dict[str, Any]) -> bool:
    providers = data.get("providers") or {}
    return isinstance(providers, dict) and any(isinstance(p, dict) and p.get("api_key") for p in providers.values())


def _check_valid(data: dict[str, Any], path: Path) -> None:
    """The changed data must still be a valid configuration (the checks every command makes)."""
    try:
        MetisConfig.from_file_data(data, path.parent, path)
    except ValidationError as error:
        first = error.errors(include_input=False, include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ConfigError(f"{path} would become invalid ({where}: {first['msg']}); nothing was changed") from None
