"""Templates for `metis run -t NAME`: a saved system prompt, model and options, versioned in METIS_HOME.

`METIS_HOME/templates/NAME.yaml` is the current version; every change keeps the one it replaces
as `templates/versions/NAME/<n>.yaml` (1, 2, …), so an edit can always be looked at or undone.
A template holds `system`, `model` and `options` (the `-o` keys), all optional; anything else is
refused when it is saved, not when it is used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metis_core.cli.exit_codes import UsageProblem
from metis_core.cli.model_options import model_options
from metis_core.errors import ConfigError
from metis_core.store.db import metis_home  # not config's: the configuration model (pydantic) is not needed here
from metis_core.yaml_text import safe_load

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
KEYS = ("system", "model", "options")
SKELETON = """\
# metis template {name}: every key is optional; `metis run -t {name} "..."` uses it.
# system: You answer in one short paragraph.
# model: sonnet
# options: {{temperature: 0.2, max_tokens: 800}}
"""


class TemplateError(ConfigError):
    """A template file that cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class Template:
    name: str
    system: str | None = None
    model: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


def templates_dir(home: Path | None = None) -> Path:
    return (home or metis_home()) / "templates"


def template_path(name: str, home: Path | None = None) -> Path:
    if not NAME.match(name):
        raise UsageProblem(f"template name {name!r} must be letters, digits, '.', '_' or '-'")
    return templates_dir(home) / f"{name}.yaml"


def versions_dir(name: str, home: Path | None = None) -> Path:
    return templates_dir(home) / "versions" / name


def parse_template(name: str, text: str, where: str) -> Template:
    """The template in `text`; TemplateError naming `where` when it is not valid."""
    import yaml  # with the first template read (safe_load imports it too): listing none needs no YAML

    try:
        data = safe_load(text) or {}
    except yaml.YAMLError:
        raise TemplateError(f"{where}: invalid YAML; fix it and retry") from None
    if not isinstance(data, dict):
        raise TemplateError(f"{where}: a template is a mapping with {', '.join(KEYS)}")
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise TemplateError(f"{where}: unknown key {unknown[0]!r}; a template holds {', '.join(KEYS)}")
    system, model, options = data.get("system"), data.get("model"), data.get("options") or {}
    if system is not None and not isinstance(system, str):
        raise TemplateError(f"{where}: system must be text")
    if model is not None and not isinstance(model, str):
        raise TemplateError(f"{where}: model must be a model id, alias or name")
    if not isinstance(options, dict):
        raise TemplateError(f"{where}: options must be a mapping such as {{temperature: 0.2}}")
    try:
        model_options(options)
    except UsageProblem as error:
        raise TemplateError(f"{where}: {error}") from None
    return Template(name, system, model, dict(options))


def load_template(name: str, home: Path | None = None) -> Template:
    path = template_path(name, home)
    if not path.is_file():
        known = ", ".join(list_templates(home)) or "none yet"
        raise UsageProblem(f"no template {name!r} (templates: {known}); create it with `metis templates edit {name}`")
    return parse_template(name, path.read_text(encoding="utf-8"), str(path))


def list_templates(home: Path | None = None) -> list[str]:
    root = templates_dir(home)
    return sorted(p.stem for p in root.glob("*.yaml")) if root.is_dir() else []


def version_numbers(name: str, home: Path | None = None) -> list[int]:
    root = versions_dir(name, home)
    return sorted(int(p.stem) for p in root.glob("*.yaml") if p.stem.isdigit()) if root.is_dir() else []


def save_template(name: str, text: str, home: Path | None = None) -> int | None:
    """Validate and store `text` as NAME's current version, keeping the one it replaces.

    Returns the number the replaced version was kept under (None for a new template, or when the
    text did not change).
    """
    path = template_path(name, home)
    parse_template(name, text, str(path))
    old = path.read_text(encoding="utf-8") if path.is_file() else None
    if old == text:
        return None
    kept: int | None = None
    if old is not None:
        kept = (version_numbers(name, home) or [0])[-1] + 1
        archive = versions_dir(name, home) / f"{kept}.yaml"
        archive.parent.mkdir(parents=True, exist_ok=True)
        archive.write_text(old, encoding="utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text(text, encoding="utf-8")
    temp.replace(path)
    return kept
