"""The portable JSON Schema subset for tool input, checked when a tool is defined (§5.4).

The subset is what Anthropic, OpenAI strict mode and Gemini all accept (docs/tool-schema-subset.md
says why each keyword is in or out). `check_portable_subset` walks a schema and raises
ToolSchemaError naming the first construct outside the subset and its JSON path;
`check_tool_schema` normalizes first (schema_normalize.py) and reports what that changed. It does
not validate tool input (see tool_input.py) and does not rewrite schemas for a provider (adapters do).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from metis_core.errors import ToolSchemaError

if TYPE_CHECKING:
    from metis_core.messages.schema_normalize import NormalizedSchema, SchemaChange

SCALAR_TYPES = frozenset({"string", "number", "integer", "boolean", "null"})
SCHEMA_TYPES = SCALAR_TYPES | {"object", "array"}

# OpenAI strict mode's documented format list; `uri` is not in it, so it is not portable.
SAFE_FORMATS = frozenset({"date-time", "date", "time", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})

ANNOTATION_KEYWORDS = frozenset({"description", "title"})
# Which keywords each (non-null) type may carry, beyond `type` and the annotations.
KEYWORDS_BY_TYPE: dict[str, frozenset[str]] = {
    "object": frozenset({"properties", "required", "additionalProperties"}),
    "array": frozenset({"items", "minItems", "maxItems"}),
    "string": frozenset({"enum", "format", "minLength", "maxLength", "pattern"}),
    "number": frozenset({"minimum", "maximum"}),
    "integer": frozenset({"minimum", "maximum"}),
    "boolean": frozenset(),
    "null": frozenset(),
}
SUPPORTED_KEYWORDS = frozenset({"type", "anyOf"}) | ANNOTATION_KEYWORDS | frozenset().union(*KEYWORDS_BY_TYPE.values())

# Keywords that are valid JSON Schema but deliberately outside the subset, with what to do instead.
UNSUPPORTED_WHY: dict[str, str] = {
    "oneOf": "use anyOf (Gemini and OpenAI strict mode do not accept oneOf)",
    "allOf": "merge the branches into one object schema",
    "not": "not is accepted by no provider's tool schema; validate in the tool instead",
    "if": "conditional schemas are not portable; validate in the tool instead",
    "then": "conditional schemas are not portable; validate in the tool instead",
    "else": "conditional schemas are not portable; validate in the tool instead",
    "$ref": "inline the definition (Gemini function declarations cannot follow references)",
    "$defs": "inline the definitions (Gemini function declarations cannot follow references)",
    "definitions": "inline the definitions (Gemini function declarations cannot follow references)",
    "patternProperties": "declare each property under properties",
    "dependentSchemas": "validate the dependency in the tool instead",
    "dependentRequired": "validate the dependency in the tool instead",
    "dependencies": "validate the dependency in the tool instead",
    "const": "use an enum with a single string value",
    "default": "OpenAI strict mode rejects default; say the default in the description",
    "nullable": 'write the type as a list, e.g. ["string", "null"]',
    "exclusiveMinimum": "use minimum (Gemini has no exclusive bounds)",
    "exclusiveMaximum": "use maximum (Gemini has no exclusive bounds)",
    "multipleOf": "Gemini does not accept multipleOf; validate in the tool instead",
    "prefixItems": "use a single items schema (tuples are not portable)",
    "uniqueItems": "Gemini and OpenAI strict mode do not accept uniqueItems",
    "minProperties": "OpenAI strict mode does not accept minProperties",
    "maxProperties": "OpenAI strict mode does not accept maxProperties",
    "$schema": "remove it; provider schemas are implicitly JSON Schema",
}

# Regex features that RE2 (Gemini) and OpenAI's constrained decoder do not implement.
_NON_PORTABLE_REGEX = re.compile(r"\(\?[=!]|\(\?<[=!]|\(\?P[<=]|\(\?<[A-Za-z]|\\[1-9]|\\k<")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_tool_schema(tool_name: str, schema: dict[str, Any]) -> list[SchemaChange]:
    """What normalization changes to bring `schema` into the subset (empty when it already is);
    ToolSchemaError, with path and reason, for what cannot be carried."""
    return list(portable_tool_schema(tool_name, schema).changes)


def portable_tool_schema(tool_name: str, schema: dict[str, Any]) -> NormalizedSchema:
    """`schema` normalized into the portable subset and checked; ToolSchemaError if it cannot be.

    A schema already inside the subset is returned unchanged (titles included), so a recorded or
    hand-written schema reaches the provider exactly as written."""
    from metis_core.messages.schema_normalize import NormalizedSchema, normalize_schema

    try:
        check_portable_subset(tool_name, schema)
    except ToolSchemaError:
        pass
    else:
        return NormalizedSchema(dict(schema), ())
    normalized = normalize_schema(schema, name=tool_name)
    check_portable_subset(tool_name, normalized.schema)
    return normalized


def check_portable_subset(tool_name: str, schema: dict[str, Any]) -> None:
    """Raise ToolSchemaError for the first construct outside the portable subset (no normalization)."""
    if not isinstance(schema, Mapping):
        raise ToolSchemaError(tool_name, "input_schema", "$", "must be a JSON object")
    if schema.get("type") != "object":
        raise ToolSchemaError(
            tool_name, "type", "$.type", f'the top level must be "type": "object", not {schema.get("type")!r}'
        )
    _SchemaWalker(tool_name).check(schema, "$", top_level=True)


def child_path(path: str, key: str) -> str:
    """`$.properties.name`, or `$.properties['odd key']` when the key is not an identifier."""
    return f"{path}.{key}" if _IDENTIFIER.match(key) else f"{path}[{key!r}]"


class _SchemaWalker:
    def __init__(self, tool_name: str) -> None:
        self.tool = tool_name

    def fail(self, construct: str, path: str, why: str = "") -> ToolSchemaError:
        return ToolSchemaError(self.tool, construct, path, why)

    def check(self, schema: Any, path: str, *, top_level: bool = False) -> None:
        if not isinstance(schema, Mapping):
            raise self.fail("schema", path, f"a schema must be a JSON object, got {type(schema).__name__}")
        for key in schema:
            if key in UNSUPPORTED_WHY:
                raise self.fail(key, child_path(path, key), UNSUPPORTED_WHY[key])
            if key not in SUPPORTED_KEYWORDS:
                raise self.fail(
                    key,
                    child_path(path, key),
                    "unknown keyword; the subset accepts only keywords every provider understands",
                )
        self._check_annotations(schema, path)
        if "anyOf" in schema:
            self._check_any_of(schema, path, top_level=top_level)
            return
        if "type" not in schema:
            raise self.fail("type", child_path(path, "type"), "every schema must declare its type")
        base_type = self._check_type(schema["type"], child_path(path, "type"))
        allowed = KEYWORDS_BY_TYPE[base_type] | ANNOTATION_KEYWORDS | {"type"}
        for key in schema:
            if key not in allowed:
                raise self.fail(key, child_path(path, key), f"not allowed on a schema of type {base_type!r}")
        nullable = isinstance(schema["type"], list)
        if base_type == "object":
            self._check_object(schema, path, top_level=top_level)
        elif base_type == "array":
            self._check_array(schema, path)
        elif base_type == "string":
            self._check_string(schema, path, nullable=nullable)
        elif base_type in ("number", "integer"):
            self._check_bounds(schema, path, ("minimum", "maximum"), numbers=True)

    def _check_annotations(self, schema: Mapping[str, Any], path: str) -> None:
        for key in ANNOTATION_KEYWORDS:
            if key in schema and not isinstance(schema[key], str):
                raise self.fail(key, child_path(path, key), "must be a string")

    def _check_type(self, value: Any, path: str) -> str:
        """Return the non-null base type; a list is allowed only as [T, "null"]."""
        if isinstance(value, str):
            if value not in SCHEMA_TYPES:
                raise self.fail("type", path, f"{value!r} is not a JSON Schema type")
            return value
        if isinstance(value, list):
            others = [t for t in value if t != "null"]
            if len(value) != 2 or len(others) != 1 or others[0] not in SCHEMA_TYPES:
                raise self.fail(
                    "type",
                    path,
                    'a type list must be one type plus "null", e.g. ["string", "null"]; use anyOf for other unions',
                )
            return str(others[0])
        raise self.fail("type", path, 'must be a type name or a [type, "null"] list')

    def _check_any_of(self, schema: Mapping[str, Any], path: str, *, top_level: bool) -> None:
        any_path = child_path(path, "anyOf")
        if top_level:
            raise self.fail("anyOf", any_path, "the top level must be a plain object schema")
        extra = set(schema) - ANNOTATION_KEYWORDS - {"anyOf"}
        if extra:
            key = sorted(extra)[0]
            raise self.fail(
                key,
                child_path(path, key),
                "a schema with anyOf may carry only description and title beside it; move the rest into each branch",
            )
        branches = schema["anyOf"]
        if not isinstance(branches, list) or not branches:
            raise self.fail("anyOf", any_path, "must be a non-empty list of schemas")
        for index, branch in enumerate(branches):
            self.check(branch, f"{any_path}[{index}]")

    def _check_object(self, schema: Mapping[str, Any], path: str, *, top_level: bool) -> None:
        properties = schema.get("properties", {})
        props_path = child_path(path, "properties")
        if not isinstance(properties, Mapping):
            raise self.fail("properties", props_path, "must be an object mapping names to schemas")
        if not properties and not top_level:
            raise self.fail(
                "properties",
                props_path,
                "a nested object must declare at least one property "
                "(free-form objects are not portable: OpenAI strict mode and Gemini reject them)",
            )
        for name, sub in properties.items():
            self.check(sub, child_path(props_path, str(name)))
        if "additionalProperties" in schema and schema["additionalProperties"] is not False:
            raise self.fail(
                "additionalProperties",
                child_path(path, "additionalProperties"),
                "only false (or leaving it out) is portable",
            )
        if "required" in schema:
            required = schema["required"]
            req_path = child_path(path, "required")
            if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
                raise self.fail("required", req_path, "must be a list of property names")
            if len(set(required)) != len(required):
                raise self.fail("required", req_path, "lists a property twice")
            for index, name in enumerate(required):
                if name not in properties:
                    raise self.fail(
                        "required", f"{req_path}[{index}]", f"{name!r} is required but not declared under properties"
                    )

    def _check_array(self, schema: Mapping[str, Any], path: str) -> None:
        if "items" not in schema:
            raise self.fail("items", child_path(path, "items"), "an array must declare its items schema")
        if isinstance(schema["items"], list):
            raise self.fail("items", child_path(path, "items"), "tuple-style items lists are not portable")
        self.check(schema["items"], child_path(path, "items"))
        self._check_bounds(schema, path, ("minItems", "maxItems"), numbers=False)

    def _check_string(self, schema: Mapping[str, Any], path: str, *, nullable: bool) -> None:
        self._check_bounds(schema, path, ("minLength", "maxLength"), numbers=False)
        if "enum" in schema:
            enum = schema["enum"]
            enum_path = child_path(path, "enum")
            if not isinstance(enum, list) or not enum:
                raise self.fail("enum", enum_path, "must be a non-empty list")
            for index, value in enumerate(enum):
                if not (isinstance(value, str) or (value is None and nullable)):
                    raise self.fail(
                        "enum",
                        f"{enum_path}[{index}]",
                        "enum values must be strings (Gemini accepts only string enums)",
                    )
        if "format" in schema and schema["format"] not in SAFE_FORMATS:
            raise self.fail(
                "format",
                child_path(path, "format"),
                f"{schema['format']!r} is not portable; use one of {sorted(SAFE_FORMATS)}",
            )
        if "pattern" in schema:
            self._check_pattern(schema["pattern"], child_path(path, "pattern"))

    def _check_pattern(self, pattern: Any, path: str) -> None:
        if not isinstance(pattern, str):
            raise self.fail("pattern", path, "must be a string")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise self.fail("pattern", path, f"not a valid regular expression ({exc})") from None
        if _NON_PORTABLE_REGEX.search(pattern):
            raise self.fail(
                "pattern",
                path,
                "lookaround, backreferences and named groups are not portable (RE2 and OpenAI's decoder reject them)",
            )

    def _check_bounds(self, schema: Mapping[str, Any], path: str, keys: tuple[str, str], *, numbers: bool) -> None:
        for key in keys:
            if key not in schema:
                continue
            value = schema[key]
            if isinstance(value, bool) or not isinstance(value, int | float if numbers else int):
                raise self.fail(
                    key, child_path(path, key), "must be a number" if numbers else "must be a non-negative integer"
                )
            if not numbers and value < 0:
                raise self.fail(key, child_path(path, key), "must be a non-negative integer")
        low, high = keys
        if low in schema and high in schema and schema[low] > schema[high]:
            raise self.fail(low, child_path(path, low), f"{low} is greater than {high}")
