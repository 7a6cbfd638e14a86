"""OutputSpec: what shape an answer must have — a pydantic model or a JSON Schema — and how to check it.

Validation reports errors as `path: what is wrong` built from the schema side only (never the
model's output), so they can go back to the model in a corrective fragment and into events.
It does not parse damaged JSON (recovery.py) and knows no provider.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import BaseModel, ValidationError

from metis_core.errors import OutputSchemaError

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

_NAME = re.compile(r"[^A-Za-z0-9_-]+")


class OutputInvalid(Exception):
    """Internal: an answer did not validate. `parse_error` when it was not JSON at all."""

    def __init__(self, errors: list[str], *, parse_error: bool = False) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors
        self.parse_error = parse_error


@dataclass(frozen=True, eq=False)
class OutputSpec:
    """The requested answer shape. Build with `output_spec(...)`."""

    name: str
    schema: dict[str, Any]
    model: type[BaseModel] | None = None
    description: str = ""
    _validator: Validator | None = field(default=None, repr=False)

    def validate_json(self, data: str | bytes) -> Any:
        """Parse and validate in one step (pydantic's own parser for model specs); OutputInvalid on failure."""
        if self.model is not None:
            try:
                return self.model.model_validate_json(data)
            except ValidationError as error:
                problems = error.errors(include_input=False, include_url=False)
                if any(p["type"] == "json_invalid" for p in problems):
                    raise OutputInvalid([f"not valid JSON ({problems[0]['msg']})"], parse_error=True) from None
                raise OutputInvalid(_pydantic_errors(error)) from None
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError as error:
            raise OutputInvalid([f"not valid JSON ({error.msg})"], parse_error=True) from None
        return self.validate_python(value)

    def validate_python(self, value: Any) -> Any:
        """Validate an already-parsed value (from recovery or a forced tool's input)."""
        if self.model is not None:
            try:
                return self.model.model_validate(value)
            except ValidationError as error:
                raise OutputInvalid(_pydantic_errors(error)) from None
        assert self._validator is not None
        problems = [_schema_error(e) for e in self._validator.iter_errors(value)]
        if problems:
            raise OutputInvalid(problems[:20])
        return value

    def partial(self, value: Any) -> Any:
        """A partial answer for streaming: the model instance if it already validates, else the raw value."""
        if self.model is None:
            return value
        try:
            return self.model.model_validate(value)
        except ValidationError:
            return value

    def dump(self, value: Any) -> Any:
        """The validated value as plain JSON data."""
        return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


def output_spec(output: type[BaseModel] | Mapping[str, Any] | OutputSpec, *, name: str | None = None) -> OutputSpec:
    """An OutputSpec from a pydantic model class, a JSON Schema dict, or an OutputSpec (returned as is)."""
    if isinstance(output, OutputSpec):
        return output
    if isinstance(output, type) and issubclass(output, BaseModel):
        schema = output.model_json_schema()
        return OutputSpec(_clean_name(name or output.__name__), schema, output, (output.__doc__ or "").strip())
    if isinstance(output, Mapping):
        from jsonschema import Draft202012Validator, validators  # only dict schemas need it
        from jsonschema.exceptions import SchemaError

        schema = dict(output)
        try:
            cls = validators.validator_for(schema, default=Draft202012Validator)
            cls.check_schema(schema)
        except SchemaError as error:
            raise OutputSchemaError(f"the output schema is not valid JSON Schema: {error.message}; fix it and "
                                    "retry") from None
        title = schema.get("title")
        chosen = name or (title if isinstance(title, str) else "output")
        return OutputSpec(_clean_name(chosen), schema, None, str(schema.get("description", "")), cls(schema))
    raise OutputSchemaError(f"output= takes a pydantic model class or a JSON Schema dict, not {type(output).__name__}")


def _clean_name(name: str) -> str:
    """Provider name rules (OpenAI, tools): letters, digits, _ and -, at most 64."""
    return (_NAME.sub("_", name).strip("_") or "output")[:64]


def _pydantic_errors(error: ValidationError) -> list[str]:
    out = []
    for problem in error.errors(include_input=False, include_url=False, include_context=False)[:20]:
        where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in problem["loc"])
        out.append(f"{where}: {problem['msg']}")
    return out


def _schema_error(error: Any) -> str:
    """`path: rule` from the schema side of a jsonschema error (its message quotes the instance)."""
    where = error.json_path
    rule = error.validator
    expected = error.validator_value
    if rule == "required" and isinstance(error.instance, dict):
        missing = [name for name in expected if name not in error.instance]
        return f"{where}: missing required field(s) {', '.join(repr(m) for m in missing)}"
    if rule == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = sum(1 for k in error.instance if k not in allowed)
        return f"{where}: {extra} field(s) not in the schema (allowed: {', '.join(sorted(allowed)) or 'none'})"
    if rule in ("type", "enum", "const", "format", "minimum", "maximum", "minLength", "maxLength", "minItems",
                "maxItems", "pattern", "multipleOf", "exclusiveMinimum", "exclusiveMaximum"):
        return f"{where}: must satisfy {rule} {orjson.dumps(expected).decode()}"
    return f"{where}: does not satisfy {rule}"
