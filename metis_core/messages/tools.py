"""Tool definitions (§4.4): what a model may call, and what calling it may change.

`side_effects` drives confirmation prompts and routing; every tool must declare it honestly.
The input schema is checked against the portable JSON Schema subset when the tool is defined.
"""

from enum import StrEnum
from typing import Any, Self

from pydantic import BaseModel, model_validator


class SideEffects(StrEnum):
    NONE = "none"
    READ = "read"
    WRITE = "write"
    EXECUTE = "execute"
    NETWORK = "network"


CONFIRMATION_SIDE_EFFECTS = frozenset({SideEffects.WRITE, SideEffects.EXECUTE, SideEffects.NETWORK})


class ToolDefinition(BaseModel):
    name: str
    description: str
    input_schema: dict[str, Any]
    side_effects: SideEffects = SideEffects.NONE
    requires_workspace: bool = True

    @model_validator(mode="after")
    def _portable_schema(self) -> Self:
        from metis_core.messages.tool_schema import check_tool_schema

        check_tool_schema(self.name, self.input_schema)
        return self

    @property
    def needs_confirmation(self) -> bool:
        return self.side_effects in CONFIRMATION_SIDE_EFFECTS
