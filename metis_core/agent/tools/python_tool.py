"""Python functions as tools: the `@tool` decorator, its calling convention and module loading.

The definition comes from the signature and docstring (ToolDefinition.from_function). Input is
checked against the JSON Schema by the dispatcher, then against the function's own types with
pydantic (`input_violations`), so what normalization could not say still reaches the model as
`tool.input_invalid`. Sync functions run in a worker thread; the return value becomes the result
and an exception an `execution_error` result the model can read.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import inspect
import sys
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, overload

from pydantic import BaseModel, TypeAdapter, ValidationError

from metis_core.agent.tools.base import ToolContext, ToolOutcome
from metis_core.errors import ToolModuleError
from metis_core.messages import ImageBlock, SideEffects, TextBlock, ToolDefinition
from metis_core.messages.tool_from_python import definition_from_function, input_model_for_function
from metis_core.messages.tool_schema import child_path

_ANY_JSON: TypeAdapter[Any] = TypeAdapter(Any)


class PythonTool:
    """A Python function offered to the model; still callable as the plain function."""

    def __init__(self, fn: Callable[..., Any], *, name: str | None = None, description: str | None = None,
                 side_effects: SideEffects | str | None = None, requires_workspace: bool = False) -> None:
        self.fn = fn
        hints = typing.get_type_hints(fn)
        self.context_params = [p for p, hint in hints.items() if hint is ToolContext]
        self.input_model = input_model_for_function(fn, tool_name=name, skip=self.context_params)
        self.definition = definition_from_function(
            ToolDefinition, fn, name=name, description=description,
            side_effects=None if side_effects is None else SideEffects(side_effects),
            requires_workspace=requires_workspace, skip=self.context_params)
        self.is_async = inspect.iscoroutinefunction(fn)
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<tool {self.definition.name!r} ({self.definition.side_effects.value})>"

    def input_violations(self, tool_input: dict[str, Any]) -> list[str]:
        """Every violation of the function's own types, as `<json path>: <message>`."""
        try:
            self.input_model.model_validate(tool_input)
        except ValidationError as exc:
            return sorted(f"{_error_path(error['loc'])}: {error['msg']}" for error in exc.errors())
        return []

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        validated = self.input_model.model_validate(tool_input)
        kwargs: dict[str, Any] = {name: getattr(validated, name) for name in type(validated).model_fields}
        kwargs.update({name: context for name in self.context_params})
        try:
            if self.is_async:
                value = await self.fn(**kwargs)
            else:
                value = await asyncio.to_thread(self.fn, **kwargs)
            return outcome_from_value(value)
        except Exception as exc:  # the model sees what went wrong, as the dispatcher would show it
            return ToolOutcome.failure("execution_error", f"{type(exc).__name__}: {exc}")


def _error_path(loc: tuple[int | str, ...]) -> str:
    path = "$"
    for part in loc:
        path = f"{path}[{part}]" if isinstance(part, int) else child_path(path, str(part))
    return path


def outcome_from_value(value: Any) -> ToolOutcome:
    """A return value as a tool result: text as is, images as image blocks, anything else as JSON."""
    if isinstance(value, ToolOutcome):
        return value
    if isinstance(value, str):
        return ToolOutcome(value)
    if isinstance(value, TextBlock | ImageBlock) or (
        isinstance(value, list) and value and any(isinstance(v, ImageBlock) for v in value)
    ):
        items = value if isinstance(value, list) else [value]
        blocks = [TextBlock(text=v) if isinstance(v, str) else v for v in items]
        if not all(isinstance(b, TextBlock | ImageBlock) for b in blocks):
            raise TypeError("a list with images may hold only str, TextBlock and ImageBlock items")
        summary = " ".join(b.text if isinstance(b, TextBlock) else f"[image {b.media_type}]" for b in blocks)
        return ToolOutcome(summary, blocks=blocks)
    if isinstance(value, BaseModel):
        return ToolOutcome(value.model_dump_json())
    try:
        return ToolOutcome(_ANY_JSON.dump_json(value).decode())
    except Exception as exc:  # pydantic raises its own serialization errors
        raise TypeError(f"the tool returned a {type(value).__name__}, which is not JSON-serializable: "
                        "return str, a pydantic model, a JSON-able value or images") from exc


@overload
def tool(fn: Callable[..., Any], /) -> PythonTool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, side_effects: SideEffects | str | None = None,
    requires_workspace: bool = False, registry: Any = None,
) -> Callable[[Callable[..., Any]], PythonTool]: ...


def tool(
    fn: Callable[..., Any] | None = None, /, *, name: str | None = None, description: str | None = None,
    side_effects: SideEffects | str | None = None, requires_workspace: bool = False, registry: Any = None,
) -> PythonTool | Callable[[Callable[..., Any]], PythonTool]:
    """Make a function a tool: `@tool(side_effects="read")` or `@tool(side_effects="write", registry=runtime.tools)`.

    `side_effects` other than none/read asks the user before each call; a tool that declares none is
    run as possibly writing (it asks too), so declare "none" or "read" for one that only looks. With `registry` (a
    ToolRegistry) the tool is registered there at once; otherwise register it, or load its module."""

    def wrap(function: Callable[..., Any]) -> PythonTool:
        made = PythonTool(function, name=name, description=description, side_effects=side_effects,
                          requires_workspace=requires_workspace)
        if registry is not None:
            registry.register(made)
        return made

    return wrap(fn) if fn is not None else wrap


def tools_in(namespace: Iterable[Any]) -> list[PythonTool]:
    """The distinct PythonTools among `namespace`'s values, in order."""
    found: list[PythonTool] = []
    for value in namespace:
        if isinstance(value, PythonTool) and all(value is not seen for seen in found):
            found.append(value)
    return found


def load_tool_module(path: str | Path) -> list[PythonTool]:
    """Import a Python file and return its `@tool` functions; ToolModuleError says what went wrong."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise ToolModuleError(str(path), "no such file; give the path of a .py file with @tool functions")
    module_name = f"metis_tools_{abs(hash(str(file.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, file)
    if spec is None or spec.loader is None:
        raise ToolModuleError(str(path), "not a Python module; give a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pydantic look their module up while it executes
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise ToolModuleError(str(path), f"importing it raised {type(exc).__name__}: {exc}") from exc
    found = tools_in(vars(module).values())
    if not found:
        raise ToolModuleError(str(path), "it defines no @tool functions; decorate them with "
                              "`from metis_core import tool` / `@tool`")
    return found
