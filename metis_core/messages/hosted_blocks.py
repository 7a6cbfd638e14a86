"""Blocks for work a provider did itself: hosted tool calls and results, compaction, citations.

A hosted tool (web search, code execution, an MCP connector, ...) runs at the provider, never
here, so its call is not a `ToolUseBlock` and nothing dispatches it. Each block keeps the
provider's own JSON (`payload`, opaque and replayed verbatim only to `origin`'s provider and API)
and `text`: what another model should be told instead (results with URLs, code and output).
`BlockOrigin` names who issued such a payload or a thinking signature: signatures replay only to the
exact origin; hosted payloads, compaction and citations to the same provider and API (any model of it).
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class BlockOrigin(BaseModel):
    """Who issued an opaque token: a signature replays only to the same provider, API and model."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    provider: str
    api: str
    model: str

    def matches(self, provider: str, api: str, model: str) -> bool:
        return self.provider == provider and self.api == api and self.model == model

    def same_api(self, provider: str, api: str) -> bool:
        return self.provider == provider and self.api == api


class Citation(BaseModel):
    """A source a text span rests on: the parts every target can show, plus the provider's own."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    url: str | None = None
    title: str | None = None
    cited_text: str | None = None
    payload: dict[str, Any] = Field(default_factory=dict)
    """The provider's citation object exactly as sent (Anthropic citation, Responses annotation)."""
    origin: BlockOrigin | None = None


class ProviderToolCallBlock(BaseModel):
    """A tool the provider ran (or asked its own runtime to run): never dispatched by metis."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    type: Literal["provider_tool_call"] = "provider_tool_call"
    id: str
    """The provider's own id (`srvtoolu_...`, `ws_...`), kept verbatim: it is not a canonical tool id."""
    name: str
    """The provider's tool name or item kind, e.g. `web_search`, `code_interpreter_call`."""
    input: dict[str, Any] = Field(default_factory=dict)
    text: str = ""
    """What another model should know of this call (and of its result, when one item holds both)."""
    payload: dict[str, Any]
    origin: BlockOrigin


class ProviderToolResultBlock(BaseModel):
    """What a hosted tool returned, as the provider sent it."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    type: Literal["provider_tool_result"] = "provider_tool_result"
    tool_use_id: str
    """The provider id of the `ProviderToolCallBlock` it answers (may be empty for listings)."""
    name: str
    """The provider's block or item kind, e.g. `web_search_tool_result`, `mcp_list_tools`."""
    text: str = ""
    is_error: bool = False
    payload: dict[str, Any]
    origin: BlockOrigin


class CompactionBlock(BaseModel):
    """A provider's summary of the conversation before it; only its origin can read `payload`."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    type: Literal["compaction"] = "compaction"
    text: str = ""
    """The summary in plain text when the provider sends one (Anthropic); empty when encrypted."""
    payload: dict[str, Any]
    origin: BlockOrigin
