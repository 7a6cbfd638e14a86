"""What a caller may choose about an export: content inclusion and the names the formats ask for.

The default is the private one: no conversation text leaves the store. `include_content=True` is
the one explicit switch that puts message text, tool inputs and tool results into any format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from metis_core.errors import ExportError

Environment = Literal["prod", "staging", "dev"]


@dataclass(frozen=True)
class ExportOptions:
    include_content: bool = False
    """Copy message text, tool arguments and tool results from the session store into the output.
    Off by default: exports then carry hashes and sizes, never the words."""
    agent_name: str = "metis"
    """`gen_ai.agent.name` (OTel), the OpenWOP `agentId` and the event log's `agent_id`."""
    service_name: str = "metis"
    """OTel resource `service.name`."""
    legacy_system_attribute: bool = False
    """Also write `gen_ai.system` (semantic conventions before 1.37) beside `gen_ai.provider.name`."""
    environment: Environment = "prod"
    """The event log's SESSION_START `environment` (v0.2 allows prod, staging, dev)."""

    def __post_init__(self) -> None:
        if not 3 <= len(self.agent_name) <= 256:
            raise ExportError(
                f"agent_name {self.agent_name!r} must be 3 to 256 characters (OpenWOP agentId); pick a longer name"
            )
