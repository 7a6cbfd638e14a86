"""How a source turn's calls were asked, read back from its llm.call_started `request_options`.

`RecordedRequest.of(payload)` rebuilds the AdapterOptions (model left empty: the replay's route
fills it), the names of the tools offered and, for a structured turn, its OutputSpec and
OutputPolicy. A turn recorded before options were kept, or with parts that are never kept
(provider-only `extra`, `provider_tools`, secret-like settings), says so in `lacking`: the replay
runs without them and the report names them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from metis_core.adapters.base import AdapterOptions
from metis_core.agent.tools.registry import ToolRegistry
from metis_core.structured.policy import OutputPolicy
from metis_core.structured.spec import OutputSpec, output_spec

NOT_RECORDED = ("request options: not recorded (the session predates them); replayed with the runtime's "
                "defaults and current tools, as a plain turn")
OPTION_FIELDS = ("max_tokens", "temperature", "top_p", "stop", "reasoning_effort", "thinking_budget_tokens",
                 "tool_choice", "parallel_tool_calls", "response_format", "hosted_tools")  # fmt: skip


@dataclass
class RecordedRequest:
    recorded: bool
    """False when the source turn's calls carry no request_options (recorded before they were kept)."""
    options: AdapterOptions | None = None
    tools: list[str] | None = None
    """Names of the client tools the original offered; None: not recorded (offer the current ones)."""
    output: OutputSpec | None = None
    policy: OutputPolicy | None = None
    lacking: list[str] = field(default_factory=list)
    """What the original had that the replay cannot send, in words (shown in the report)."""

    @classmethod
    def of(cls, payload: dict[str, Any] | None) -> RecordedRequest:
        if payload is None:
            return cls(recorded=False, lacking=[NOT_RECORDED])
        values = {name: payload[name] for name in OPTION_FIELDS if payload.get(name) is not None}
        lacking = [_why_omitted(name) for name in payload.get("omitted") or []]
        output, policy = None, None
        kept = payload.get("output")
        if kept is not None:
            output = output_spec(kept["json_schema"], name=kept["name"])
            if kept.get("description"):
                output = dataclasses.replace(output, description=kept["description"])
            policy = OutputPolicy(max_retries=kept["max_retries"],
                                  max_truncation_retries=kept["max_truncation_retries"],
                                  nl_to_format=kept["nl_to_format"], recover=kept["recover"])
        tools = payload.get("tools")
        return cls(recorded=True, options=AdapterOptions(model="", **values), tools=list(tools or []),
                   output=output, policy=policy, lacking=lacking)

    def offered(self, registry: ToolRegistry) -> ToolRegistry:
        """The tools to offer: the recorded names this registry has (each one it lacks is noted)."""
        if self.tools is None:
            return registry
        found = [tool for name in self.tools if (tool := registry.get(name)) is not None]
        self.lacking += [f"tool {name}: offered by the original, not available now; left out"
                         for name in self.tools if registry.get(name) is None]
        return ToolRegistry(found)

    def to_json(self) -> dict[str, Any]:
        used: dict[str, Any] = {}
        if self.options is not None:
            used = {name: getattr(self.options, name) for name in OPTION_FIELDS if getattr(self.options, name)}
        if self.output is not None:
            used["output"] = self.output.name
        return {"recorded": self.recorded, "used": used, "tools": self.tools, "lacking": self.lacking}


def _why_omitted(name: str) -> str:
    if name == "extra":
        return "extra: the original's provider-only settings are never kept; replayed without them"
    if name == "provider_tools":
        return "provider_tools: the original's provider tool definitions are never kept; replayed without them"
    if "." not in name:
        return f"{name}: its value could not be recorded; replayed without it"
    return f"{name}: a secret-like setting, never kept; replayed without it"
