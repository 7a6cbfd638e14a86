"""Tool definitions (§4.4): what a model may call, and what calling it may change.

`side_effects` drives confirmation prompts and routing; every tool must declare it honestly.
The input schema is normalized into the portable JSON Schema subset when the tool is defined
(schema_normalize.py); what normalization changed is kept in `schema_changes`, and each lossy
change is logged once. `from_function` and `from_model` build definitions from Python.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Self

from pydantic import BaseModel, ConfigDict, PrivateAttr, model_validator

if TYPE_CHECKING:  # a tool's schema changes load with its normalization, not with the model class
    from metis_core.messages.schema_changes import SchemaChange


class SideEffects(StrEnum):
    NONE = "none"
    READ = "read"
    WRITE = "write"
    EXECUTE = "execute"
    NETWORK = "network"


CONFIRMATION_SIDE_EFFECTS = frozenset({SideEffects.WRITE, SideEffects.EXECUTE, SideEffects.NETWORK})


class ToolDefinition(BaseModel):
    model_config = ConfigDict(defer_build=True)

    name: str
    description: str
    input_schema: dict[str, Any]
    side_effects: SideEffects = SideEffects.NONE
    requires_workspace: bool = True

    _schema_changes: tuple[SchemaChange, ...] = PrivateAttr(default=())
    _source_schema: dict[str, Any] | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _portable_schema(self) -> Self:
        from metis_core.messages.schema_changes import log_lossy_changes
        from metis_core.messages.tool_schema import portable_tool_schema

        normalized = portable_tool_schema(self.name, self.input_schema)
        if normalized.changes:
            self._source_schema = self.input_schema
            self._schema_changes = normalized.changes
            self.input_schema = normalized.schema
            log_lossy_changes(self.name, normalized.changes)
        return self

    @property
    def declares_side_effects(self) -> bool:
        """Whether `side_effects` was given (the spec requires it); an undeclared tool is run as
        possibly writing (`ToolRegistry.register`)."""
        return "side_effects" in self.model_fields_set

    @property
    def needs_confirmation(self) -> bool:
        return self.side_effects in CONFIRMATION_SIDE_EFFECTS

    @property
    def schema_changes(self) -> tuple[SchemaChange, ...]:
        """What normalization changed in the schema given (empty when it was already portable)."""
        private = self.__pydantic_private__  # read directly: pydantic's attribute hook costs ~3 µs a call
        changes: tuple[SchemaChange, ...] = private.get("_schema_changes", ()) if private else ()
        return changes

    @property
    def source_schema(self) -> dict[str, Any]:
        """The schema as given, before normalization (the same as `input_schema` when nothing changed)."""
        return self._source_schema if self._source_schema is not None else self.input_schema

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        side_effects: SideEffects | str | None = None,
        requires_workspace: bool = False,
    ) -> ToolDefinition:
        """A definition from a function's signature, type hints, defaults and docstring. Without
        `side_effects` it is undeclared: a ToolRegistry then treats the tool as possibly writing."""
        from metis_core.messages.tool_from_python import definition_from_function

        return definition_from_function(cls, fn, name=name, description=description,
                                        side_effects=None if side_effects is None else SideEffects(side_effects),
                                        requires_workspace=requires_workspace)

    @classmethod
    def from_model(
        cls,
        model: type[BaseModel],
        *,
        name: str,
        description: str | None = None,
        side_effects: SideEffects | str | None = None,
        requires_workspace: bool = False,
    ) -> ToolDefinition:
        """A definition whose input is the pydantic model's fields; the description defaults to its
        docstring. Without `side_effects` it is undeclared (see `from_function`)."""
        from metis_core.messages.tool_from_python import definition_from_model

        return definition_from_model(cls, model, name=name, description=description,
                                     side_effects=None if side_effects is None else SideEffects(side_effects),
                                     requires_workspace=requires_workspace)
