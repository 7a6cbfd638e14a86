"""routing.yaml: defaults, aliases, chains, rules and per-member call settings.

Two files take part: `<workspace>/routing.yaml` (the workspace default and workspace rules) and
`$METIS_HOME/routing.yaml` (the global default and global rules). They are re-read when their
content changes; an invalid file keeps the last known good policy in force and is reported once
per distinct bad content. The policy version is the SHA-256 of both files' contents.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from metis_core.field_defaults import empty_dict, empty_list
from metis_core.hashing import sha256_hex
from metis_core.yaml_text import safe_load

PolicyInvalidSink = Callable[[str, list[str], bool], None]
"""(policy_path, errors, using_last_known_good) -> None; wired to routing.policy_invalid."""


class RuleMatch(BaseModel):
    """Every condition given must hold for the rule to match."""

    model_config = ConfigDict(extra="forbid")

    has_images: bool | None = None
    has_tools: bool | None = None
    min_estimated_tokens: int | None = None
    max_estimated_tokens: int | None = None
    workspace: str | None = None
    """A glob matched against the absolute workspace path."""
    keyword: str | None = None
    """Case-insensitive word or phrase in the user message."""
    pattern: str | None = None
    """Python regular expression searched in the user message."""

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            re.compile(value)
        return value


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    when: RuleMatch
    model: str
    """A model id, alias or chain."""


class MemberSettings(BaseModel):
    """Per-call settings for one model, applied whichever policy or chain picked it."""

    model_config = ConfigDict(extra="forbid")

    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    thinking_budget_tokens: int | None = None


class RoutingPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    default: str | None = None
    aliases: dict[str, str] = Field(default_factory=empty_dict)
    chains: dict[str, list[str]] = Field(default_factory=empty_dict)
    rules: list[Rule] = Field(default_factory=empty_list)
    settings: dict[str, MemberSettings] = Field(default_factory=empty_dict)


class LoadedPolicy(BaseModel):
    workspace: RoutingPolicy = Field(default_factory=RoutingPolicy)
    global_: RoutingPolicy = Field(default_factory=RoutingPolicy)
    version: str = sha256_hex(b"")

    def rules(self) -> list[tuple[str, Rule]]:
        """Workspace rules first, then global rules, each tagged with its scope."""
        return [("workspace", r) for r in self.workspace.rules] + [("global", r) for r in self.global_.rules]

    def aliases(self) -> dict[str, str]:
        return {**self.global_.aliases, **self.workspace.aliases}

    def chains(self) -> dict[str, list[str]]:
        return {**self.global_.chains, **self.workspace.chains}

    def settings_for(self, model: str) -> MemberSettings | None:
        return self.workspace.settings.get(model) or self.global_.settings.get(model)


def parse_policy(text: str, path: Path) -> RoutingPolicy:
    """Parse one file; raise ValueError with every problem found."""
    try:
        raw: Any = safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: top level must be a mapping")
    try:
        return RoutingPolicy.model_validate(raw)
    except ValidationError as exc:
        problems = [f"{path}: {'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        raise ValueError("\n".join(problems)) from exc


class PolicyLoader:
    """Re-reads the two routing.yaml files when their content changes; keeps the last good policy."""

    def __init__(self, workspace: Path | None, home: Path, on_invalid: PolicyInvalidSink | None = None) -> None:
        self.paths = {"workspace": workspace / "routing.yaml" if workspace else None, "global": home / "routing.yaml"}
        self._on_invalid = on_invalid
        self._texts: dict[str, str | None] = {}
        self._good: dict[str, RoutingPolicy] = {}
        self._good_texts: dict[str, str] = {}
        self._reported: set[str] = set()
        self._current = LoadedPolicy()
        self.reload()

    @property
    def policy(self) -> LoadedPolicy:
        self.reload()
        return self._current

    def reload(self) -> LoadedPolicy:
        changed = False
        for scope, path in self.paths.items():
            text = path.read_text(encoding="utf-8") if path is not None and path.is_file() else None
            if scope in self._texts and self._texts[scope] == text:
                continue
            self._texts[scope] = text
            changed = True
            if text is None:
                self._good[scope] = RoutingPolicy()
                self._good_texts[scope] = ""
                continue
            assert path is not None
            try:
                self._good[scope] = parse_policy(text, path)
                self._good_texts[scope] = text
            except ValueError as exc:
                key = sha256_hex(f"{path}\n{text}")
                if key not in self._reported and self._on_invalid is not None:
                    self._reported.add(key)
                    self._on_invalid(str(path), str(exc).splitlines(), scope in self._good)
        if changed:
            # The version names the policy in force: a rejected edit does not change it.
            version_source = "\n".join(f"{s}:{self._good_texts.get(s, '')}" for s in ("workspace", "global"))
            self._current = LoadedPolicy(
                workspace=self._good.get("workspace", RoutingPolicy()),
                global_=self._good.get("global", RoutingPolicy()),
                version=sha256_hex(version_source),
            )
        return self._current
