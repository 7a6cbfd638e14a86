"""Schemas the normalization tests share: pydantic v2 models, recorded traffic, MCP servers' tools.

Pydantic models cover nested, optional, defaults, enums, literals, unions and constrained types;
the recorded tool schemas come from tests/data/shared/fixtures/wire and the published MCP ones from
tests/data/mcp_tool_schemas (a provenance file beside each).
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal
from enum import Enum, IntEnum
from ipaddress import IPv4Address
from pathlib import Path
from typing import Annotated, Any, Literal

from fixture_files import wire_files
from pydantic import AnyUrl, BaseModel, Field, conint, constr

from metis_core.adapters.gemini.schema import from_gemini_schema

MCP_DIR = Path(__file__).parent / "data" / "mcp_tool_schemas"


# --- pydantic models ---------------------------------------------------------------------------


class Unit(Enum):
    CELSIUS = "c"
    FAHRENHEIT = "f"


class Priority(IntEnum):
    LOW = 1
    NORMAL = 2
    URGENT = 9


class Address(BaseModel):
    street: str
    city: str = Field(description="City name")
    postcode: str | None = None


class Person(BaseModel):
    """A person with an address (nested model, optional nested model, defaults)."""

    name: str
    age: int = Field(default=0, ge=0, lt=150)
    home: Address
    work: Address | None = None
    previous: list[Address] = []


class Forecast(BaseModel):
    location: str
    unit: Unit = Unit.CELSIUS
    days: Literal[1, 3, 7] = 1
    detail: Literal["brief", "full"] = "brief"
    priority: Priority = Priority.NORMAL


class Cat(BaseModel):
    kind: Literal["cat"]
    indoor: bool


class Dog(BaseModel):
    kind: Literal["dog"]
    breed: str


class Adoption(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]
    either: int | str
    maybe_many: list[int] | int | None = None


class Constrained(BaseModel):
    code: constr(pattern=r"^[A-Z]{3}$", min_length=3, max_length=3)  # type: ignore[valid-type]
    count: conint(gt=0, le=100)  # type: ignore[valid-type]
    ratio: float = Field(gt=0, lt=1)
    step: int = Field(multiple_of=5)
    tags: set[str] = set()
    pair: tuple[int, str]
    when: dt.datetime
    day: dt.date
    ident: uuid.UUID
    link: AnyUrl
    amount: Decimal
    ip: IPv4Address
    wait: dt.timedelta


class Settings(BaseModel):
    labels: dict[str, str]


class Node(BaseModel):
    value: int
    children: list[Node] = []


class Loose(BaseModel):
    payload: Any


class Empty(BaseModel):
    """No arguments at all."""


PYDANTIC_CASES: list[tuple[str, type[BaseModel], tuple[str, str] | None]] = [
    ("nested_optional_defaults", Person, None),
    ("enums_and_literals", Forecast, None),
    ("unions_and_discriminated_union", Adoption, None),
    ("constrained_types", Constrained, None),
    ("no_fields", Empty, None),
    ("free_form_dict", Settings, ("additionalProperties", "$.properties.labels.additionalProperties")),
    ("recursive_model", Node, ("$ref", "$.properties.children.items['$ref']")),
    ("any_value", Loose, ("type", "$.properties.payload.type")),
]


# --- the corpus ----------------------------------------------------------------------------------


def _wire_tool_schemas() -> list[tuple[str, dict[str, Any]]]:
    cases: list[tuple[str, dict[str, Any]]] = []
    for provider in ("anthropic", "gemini", "ollama", "openai_chat", "openai_responses", "openrouter"):
        for path in wire_files(provider, "request"):
            if path.suffix != ".json":
                continue
            body = json.loads(path.read_text())
            for tool in body.get("tools", []) if isinstance(body, dict) else []:
                for name, schema in _schemas_of(tool):
                    cases.append((f"wire/{provider}/{path.stem}/{name}", schema))
    return cases


def _schemas_of(tool: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    if "input_schema" in tool:
        return [(tool["name"], tool["input_schema"])]
    if "functionDeclarations" in tool:
        out = []
        for declaration in tool["functionDeclarations"]:
            if "parametersJsonSchema" in declaration:
                out.append((declaration["name"], declaration["parametersJsonSchema"]))
            elif "parameters" in declaration:
                out.append((declaration["name"], from_gemini_schema(declaration["parameters"])))
        return out
    if tool.get("type") == "function" and "function" in tool:
        return [(tool["function"]["name"], tool["function"].get("parameters") or {"type": "object"})]
    if tool.get("type") == "function" and "parameters" in tool:
        return [(tool["name"], tool["parameters"])]
    return []  # custom grammar tools carry no JSON Schema


def _mcp_tool_schemas() -> list[tuple[str, dict[str, Any]]]:
    cases = []
    for path in sorted(MCP_DIR.glob("*.json")):
        for tool in json.loads(path.read_text())["tools"]:
            cases.append((f"mcp/{path.stem}/{tool['name']}/{tool.get('path', '')}".rstrip("/"), tool["inputSchema"]))
    return cases


WIRE = _wire_tool_schemas()
MCP = _mcp_tool_schemas()
