"""Tool definitions from Python: a function's signature and docstring, or a pydantic model.

Parameters become the fields of a pydantic model (type hints, defaults, `Annotated[..., Field()]`),
whose JSON Schema is normalized like any other; descriptions come from `Field(description=...)`
first, then from the docstring (Google, NumPy or Sphinx style, read by docstring_parser). It builds
definitions and input models only; calling the function is the agent's business (agent/python_tools.py).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Annotated, Any

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from metis_core.errors import ToolSchemaError
from metis_core.messages.tool_schema import child_path

if TYPE_CHECKING:
    from metis_core.messages.tools import SideEffects, ToolDefinition


def _docstring(obj: Any) -> docstring_parser.Docstring:
    return docstring_parser.parse(inspect.getdoc(obj) or "")


def docstring_summary(obj: Any) -> str:
    """The docstring's text without its parameter, return and raises sections."""
    doc = _docstring(obj)
    parts = [p for p in (doc.short_description, doc.long_description) if p]
    return "\n\n".join(parts)


def _has_description(annotation: Any) -> bool:
    if typing.get_origin(annotation) is not Annotated:
        return False
    return any(isinstance(extra, FieldInfo) and extra.description for extra in annotation.__metadata__)


def input_model_for_function(
    fn: Callable[..., Any], *, tool_name: str | None = None, skip: Collection[str] = ()
) -> type[BaseModel]:
    """A pydantic model with one field per parameter of `fn` (those named in `skip` left out).

    Extra keys are forbidden, so the schema closes the object. A parameter without a type hint, or a
    variadic one, raises ToolSchemaError: the model would not know what to send."""
    name = tool_name or fn.__name__
    signature = inspect.signature(fn)
    hints = typing.get_type_hints(fn, include_extras=True)
    described = {p.arg_name: p.description for p in _docstring(fn).params if p.description}
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.name in skip:
            continue
        path = child_path("$.properties", param.name)
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolSchemaError(name, param.name, path,
                                  "*args and **kwargs cannot be described to a model; name each parameter")
        if param.kind is param.POSITIONAL_ONLY:
            raise ToolSchemaError(name, param.name, path, "positional-only parameters cannot be passed by name")
        if param.name not in hints:
            raise ToolSchemaError(name, param.name, path, "give the parameter a type hint")
        annotation = hints[param.name]
        if param.name in described and not _has_description(annotation):
            annotation = Annotated[annotation, Field(description=described[param.name])]
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, default)
    model_name = "".join(part.title() for part in name.split("_")) + "Input"
    return create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)


def definition_from_function(
    cls: type[ToolDefinition],
    fn: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    side_effects: SideEffects | None,
    requires_workspace: bool,
    skip: Collection[str] = (),
) -> ToolDefinition:
    tool_name = name or fn.__name__
    model = input_model_for_function(fn, tool_name=tool_name, skip=skip)
    schema = model.model_json_schema()
    schema.pop("description", None)  # the tool's description says it once
    declared = {} if side_effects is None else {"side_effects": side_effects}  # None: left undeclared
    return cls(name=tool_name, description=description if description is not None else docstring_summary(fn),
               input_schema=schema, requires_workspace=requires_workspace, **declared)


def definition_from_model(
    cls: type[ToolDefinition],
    model: type[BaseModel],
    *,
    name: str,
    description: str | None,
    side_effects: SideEffects | None,
    requires_workspace: bool,
) -> ToolDefinition:
    schema = model.model_json_schema()
    summary = description if description is not None else (schema.pop("description", None) or "")
    schema.pop("description", None)
    declared = {} if side_effects is None else {"side_effects": side_effects}  # None: left undeclared
    return cls(name=name, description=summary, input_schema=schema, requires_workspace=requires_workspace, **declared)
