"""The config.yaml sections of the agent's reach: MCP servers, delegation tiers, memory, skills, compaction.

Plain validated settings, read by `config.load_config` into `MetisConfig` only when the file has one
of these sections (a process that only calls models never imports this module); the agent packages that
use them (agent/mcp, agent/delegation, agent/memory, agent/skills) own the behaviour. Values of
`env` and `headers` are secret (they often carry tokens) and are revealed only to the transport.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from metis_core.field_defaults import empty_dict, empty_list

SideEffectName = Literal["none", "read", "write", "execute", "network"]
Tier = Literal["fast", "balanced", "deep"]
_SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,30}$")


class McpServerConfig(BaseModel):
    """One `mcp_servers.<name>` entry: a stdio command or a streamable HTTP URL."""

    model_config = ConfigDict(extra="forbid")

    command: str | None = None
    """Executable to start (stdio transport)."""
    args: list[str] = Field(default_factory=empty_list)
    env: dict[str, SecretStr] = Field(default_factory=empty_dict)
    """Extra environment for the stdio process (merged over a minimal safe environment)."""
    cwd: str | None = None
    url: str | None = None
    """Streamable HTTP endpoint, e.g. http://127.0.0.1:8000/mcp."""
    headers: dict[str, SecretStr] = Field(default_factory=empty_dict)
    side_effects: SideEffectName = "execute"
    """What every tool of this server may do; anything but none/read asks for confirmation."""
    tool_side_effects: dict[str, SideEffectName] = Field(default_factory=empty_dict)
    """Per-tool overrides, keyed by the server's own tool name."""
    connect_timeout_seconds: float = Field(default=20.0, gt=0)
    call_timeout_seconds: float = Field(default=60.0, gt=0)
    enabled: bool = True

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of command (stdio) or url (streamable HTTP)")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        return self


class DelegationConfig(BaseModel):
    """`delegation:` — which model each tier means, and a worker's default budget."""

    model_config = ConfigDict(extra="forbid")

    tiers: dict[Tier, str] = Field(default_factory=empty_dict)
    """Model id, alias or chain per tier; an unmapped tier resolves its own name as an alias."""
    max_llm_calls: int = Field(default=12, ge=1, le=25)
    max_tokens: int = Field(default=200_000, ge=1)
    """Input plus output tokens a worker may spend across its calls."""
    worker_tools: list[str] | None = None
    """Tools a worker may ever have (None: every tool except delegate itself)."""


class MemoryConfig(BaseModel):
    """`memory:` — the size cap of each memory file, and how many of its versions are kept."""

    model_config = ConfigDict(extra="forbid")

    max_bytes: int = Field(default=8192, ge=256)
    enabled: bool = True
    history_keep: int = Field(default=50, ge=1)
    """Versions of each memory file kept in `.memory-history/` (`metis memory history`)."""


class SkillsConfig(BaseModel):
    """`skills:` — token budgets for skill bodies in context."""

    model_config = ConfigDict(extra="forbid")

    always_budget_tokens: int = Field(default=4000, ge=0)
    """Budget for the bodies inlined at session start (`always: true`)."""
    session_budget_tokens: int = Field(default=12000, ge=0)
    """Budget for every skill body a session may hold, always plus on demand."""
    enabled: bool = True


class CompactionConfig(BaseModel):
    """`compaction:` — when and how a conversation is made to fit its model's window (docs/context.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    threshold: float = 0.8
    """Compact when a request would fill this share of the model's context window (0 < threshold <= 1)."""
    model: str | None = None
    """The summarising model (id or alias); None: the model the turn is routed to."""
    keep_last_turns: int = 4
    """Turns (a user message and everything after it) always sent verbatim."""
    pin_first_user_message: bool = True
    """Keep the conversation's first user message (usually the task) verbatim."""
    tool_result_chars: int = 400
    """Characters an old tool result keeps when trimmed (the cheap step, tried before summarising)."""
    summary_max_tokens: int = 2048
    """Output cap of the summarising call."""
    native: bool = True
    """Where every model a call may go to offers its own compaction (Anthropic's server-side
    `compact_20260112`), ask the provider to compact instead of summarising here."""

    @field_validator("threshold")
    @classmethod
    def _share(cls, value: float) -> float:
        if not 0 < value <= 1:
            raise ValueError(f"compaction.threshold is a share of the context window, 0 < threshold <= 1, "
                             f"not {value}; e.g. 0.8")
        return value

    @field_validator("keep_last_turns", "tool_result_chars", "summary_max_tokens")
    @classmethod
    def _not_negative(cls, value: int) -> int:
        if value < 0:
            raise ValueError(f"must be 0 or more, not {value}")
        return value


def compaction_config(**values: object) -> CompactionConfig:
    """A CompactionConfig from keyword values; CompactionConfigError (a ConfigError) naming the bad field."""
    from pydantic import ValidationError

    from metis_core.errors import CompactionConfigError

    try:
        return CompactionConfig.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(f"compaction.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise CompactionConfigError(f"invalid compaction settings: {problems}") from None


def check_server_names(servers: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
    for name in servers:
        if not _SERVER_NAME.match(name):
            raise ValueError(f"MCP server name {name!r} must be 1-31 letters, digits, '-' or '_'")
    return servers


class AgentSections(BaseModel):
    """The agent sections of MetisConfig (kept here so config.py stays about providers and calls)."""

    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=empty_dict)
    delegation: DelegationConfig = Field(default_factory=DelegationConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    skills: SkillsConfig = Field(default_factory=SkillsConfig)
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)

    @field_validator("mcp_servers")
    @classmethod
    def _server_names(cls, value: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        return check_server_names(value)
