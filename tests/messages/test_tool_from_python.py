"""ToolDefinition.from_function and from_model: signatures, defaults, Field descriptions, docstrings."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from metis_core.errors import ToolSchemaError
from metis_core.messages import SideEffects, ToolDefinition


def google_style(city: str, unit: Literal["c", "f"] = "c", days: int = 1) -> str:
    """Get the weather forecast.

    Uses the national service when it can.

    Args:
        city: The city name.
        unit: Temperature unit.
        days (int): How many days ahead.

    Returns:
        The forecast as text.
    """
    return city


def numpy_style(city: str, days: int = 1) -> str:
    """Get the weather forecast.

    Parameters
    ----------
    city : str
        The city name.
    days : int, optional
        How many days ahead.
    """
    return city


def sphinx_style(city: str, days: int = 1) -> str:
    """Get the weather forecast.

    :param city: The city name.
    :param days: How many days ahead.
    :returns: the forecast
    """
    return city


@pytest.mark.parametrize("fn", [google_style, numpy_style, sphinx_style], ids=["google", "numpy", "sphinx"])
def test_docstring_summary_and_argument_descriptions_are_read_in_every_style(fn: object) -> None:
    tool = ToolDefinition.from_function(fn)  # type: ignore[arg-type]
    assert tool.name == fn.__name__  # type: ignore[attr-defined]
    assert tool.description.startswith("Get the weather forecast.")
    assert "Args" not in tool.description and "Parameters" not in tool.description
    props = tool.input_schema["properties"]
    assert props["city"] == {"type": "string", "description": "The city name."}
    assert props["days"] == {"type": "integer", "description": "How many days ahead. Default: 1."}
    assert tool.input_schema["required"] == ["city"]
    assert tool.input_schema["additionalProperties"] is False
    assert tool.side_effects is SideEffects.NONE and not tool.requires_workspace


def test_the_long_description_is_kept_and_literals_become_enums() -> None:
    tool = ToolDefinition.from_function(google_style)
    assert tool.description == "Get the weather forecast.\n\nUses the national service when it can."
    assert tool.input_schema["properties"]["unit"] == {
        "type": "string", "enum": ["c", "f"], "description": 'Temperature unit. Default: "c".'}


def test_annotated_field_descriptions_win_over_the_docstring_and_carry_constraints() -> None:
    def search(
        query: Annotated[str, Field(description="What to look for", min_length=1)],
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
    ) -> list[str]:
        """Search.

        Args:
            query: ignored, the Field says it.
            limit: Most results.
        """
        return []

    tool = ToolDefinition.from_function(search, name="find", side_effects="read", description="Find things.")
    assert (tool.name, tool.description, tool.side_effects) == ("find", "Find things.", SideEffects.READ)
    assert tool.input_schema["properties"] == {
        "query": {"type": "string", "description": "What to look for", "minLength": 1},
        "limit": {"type": "integer", "description": "Most results. Default: 10.", "minimum": 1, "maximum": 50},
    }


def test_a_function_without_a_docstring_has_an_empty_description() -> None:
    def bare(x: int) -> int:
        return x

    assert ToolDefinition.from_function(bare).description == ""


@pytest.mark.parametrize(("source", "construct"), [
    ("def f(*args: int) -> None: ...", "args"),
    ("def f(**kwargs: int) -> None: ...", "kwargs"),
    ("def f(x, /) -> None: ...", "x"),
    ("def f(x) -> None: ...", "x"),
])
def test_parameters_a_model_cannot_pass_by_name_are_refused(source: str, construct: str) -> None:
    namespace: dict[str, object] = {}
    exec(source, namespace)
    with pytest.raises(ToolSchemaError) as info:
        ToolDefinition.from_function(namespace["f"])  # type: ignore[arg-type]
    assert info.value.construct == construct and info.value.path == f"$.properties.{construct}"


class Point(BaseModel):
    x: float
    y: float


class DrawLine(BaseModel):
    """Draw a line between two points."""

    start: Point
    end: Point
    color: Literal["red", "blue"] | None = None


def test_from_model_inlines_nested_models_and_uses_the_docstring() -> None:
    tool = ToolDefinition.from_model(DrawLine, name="draw_line", side_effects=SideEffects.WRITE)
    assert tool.description == "Draw a line between two points."
    point = {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
             "required": ["x", "y"]}
    assert tool.input_schema == {
        "type": "object",
        "properties": {
            "start": point,
            "end": point,
            "color": {"type": ["string", "null"], "enum": ["red", "blue", None], "description": "Default: null."},
        },
        "required": ["start", "end"],
    }
    assert tool.needs_confirmation
    assert "$defs" in tool.source_schema


def test_from_model_takes_an_explicit_description() -> None:
    assert ToolDefinition.from_model(Point, name="p", description="A point.").description == "A point."
    assert ToolDefinition.from_model(Point, name="p").description == ""
