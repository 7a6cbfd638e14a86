"""Validation of a tool_use input against its tool's schema, listing every violation (§5.2.4).

The violations feed the `tool.input_invalid` event and the error tool_result the model sees, so
each names its JSON path. Validators are compiled once per schema and cached, since dispatch
validates every call. Formats are checked with the standard library only. When normalization made
a lossy change, the input must also satisfy the schema as the tool declared it. This module does
not check that a schema is inside the portable subset (tool_schema.py does that at definition time).
"""

from __future__ import annotations

import ipaddress
import re
import uuid
from datetime import date, datetime, time
from functools import lru_cache
from typing import Any

import orjson
from jsonschema import Draft202012Validator, FormatChecker, validators
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

from metis_core.errors import ToolInputInvalidError
from metis_core.messages.tool_input_fast import Check, quick_check
from metis_core.messages.tool_schema import child_path
from metis_core.messages.tools import ToolDefinition

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_TIME = re.compile(r"^\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
_DURATION = re.compile(
    r"^P(?!$)(\d+(\.\d+)?Y)?(\d+(\.\d+)?M)?(\d+(\.\d+)?W)?(\d+(\.\d+)?D)?"
    r"(T(?=\d)(\d+(\.\d+)?H)?(\d+(\.\d+)?M)?(\d+(\.\d+)?S)?)?$"
)

FORMAT_CHECKER = FormatChecker(formats=())


def _parses(parse: Any, pattern: re.Pattern[str], value: str) -> bool:
    if not pattern.match(value):
        return False
    try:
        parse(value.replace("z", "Z"))
    except ValueError:
        return False
    return True


def _check_ip(version: int, value: str) -> bool:
    try:
        return ipaddress.ip_address(value).version == version
    except ValueError:
        return False


def _check_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return len(value.replace("-", "")) == 32


_FORMAT_TESTS: dict[str, Any] = {
    "date": lambda v: _parses(date.fromisoformat, _DATE, v),
    "date-time": lambda v: _parses(datetime.fromisoformat, _DATE_TIME, v),
    "time": lambda v: _parses(time.fromisoformat, _TIME, v),
    "email": lambda v: bool(_EMAIL.match(v)),
    "hostname": lambda v: bool(_HOSTNAME.match(v)),
    "duration": lambda v: bool(_DURATION.match(v)),
    "ipv4": lambda v: _check_ip(4, v),
    "ipv6": lambda v: _check_ip(6, v),
    "uuid": _check_uuid,
}
for _name, _test in _FORMAT_TESTS.items():
    # Non-strings pass format checks (JSON Schema semantics); `type` catches them.
    FORMAT_CHECKER.checks(_name)(lambda v, _t=_test: not isinstance(v, str) or bool(_t(v)))


@lru_cache(maxsize=1024)
def _compiled_validator(schema_json: bytes) -> Validator:
    schema = orjson.loads(schema_json)
    # A declared schema may name an older draft ($schema), whose keywords mean other things.
    cls = validators.validator_for(schema, default=Draft202012Validator)
    validator: Validator = cls(schema, format_checker=FORMAT_CHECKER)
    return validator


@lru_cache(maxsize=1024)
def _compiled_quick_check(schema_json: bytes) -> Check | None:
    return quick_check(orjson.loads(schema_json))


def _schema_key(schema: Any) -> bytes:
    return orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)


def validator_for(tool: ToolDefinition) -> Validator:
    """The compiled validator for a tool's schema; compiled once per distinct schema."""
    # Keyed by content, not identity: a tool rebuilt each turn, or a schema mutated in place,
    # still gets the right validator. Serializing a small schema costs about a microsecond.
    return _compiled_validator(orjson.dumps(tool.input_schema, option=orjson.OPT_SORT_KEYS))


def _error_path(error: ValidationError) -> str:
    path = "$"
    for part in error.absolute_path:
        path = f"{path}[{part}]" if isinstance(part, int) else child_path(path, str(part))
    return path


def _declared_validator(tool: ToolDefinition) -> Validator | None:
    """The validator of the schema as declared, when normalization made it accept other inputs."""
    if not any(change.lossy for change in tool.schema_changes):
        return None
    return _compiled_validator(orjson.dumps(tool.source_schema, option=orjson.OPT_SORT_KEYS))


def tool_input_violations(tool: ToolDefinition, tool_input: Any) -> list[str]:
    """Every violation of `tool_input` against the tool's schema, as `<json path>: <message>`.

    After a lossy normalization the input must satisfy both the schema the model was shown and the
    one the tool declared (a `multipleOf` said only in words is still enforced)."""
    shown = _schema_key(tool.input_schema)
    quick = _compiled_quick_check(shown)
    changes = tool.schema_changes
    lossy = bool(changes) and any(change.lossy for change in changes)
    if quick is not None and quick(tool_input) and not lossy:
        return []  # plainly valid: the full validator would find nothing (tool_input_fast.py)
    errors = list(_compiled_validator(shown).iter_errors(tool_input))
    declared = _declared_validator(tool) if lossy else None
    if declared is not None:
        errors.extend(declared.iter_errors(tool_input))
    ordered = sorted(errors, key=lambda e: (_error_path(e), e.message))
    return list(dict.fromkeys(f"{_error_path(e)}: {e.message}" for e in ordered))


def validate_tool_input(tool: ToolDefinition, tool_input: Any) -> None:
    """Raise ToolInputInvalidError listing every violation; return None when the input is valid."""
    violations = tool_input_violations(tool, tool_input)
    if violations:
        raise ToolInputInvalidError(tool.name, violations)
